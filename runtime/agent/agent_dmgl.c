// SPDX-License-Identifier: MIT
/*
 * Kernel base names as the tracer makes them (probes/elf_syms.c's
 * syms_demangle(name, true)): libiberty, linked into the agent
 * statically and hidden, so that a GLOB matched here gives the bits the
 * kernel path's fatbin scan gives, in any process (__cxa_demangle is
 * only there when the program uses libstdc++).
 */
#ifdef GT_AGENT_SO
#include <stdlib.h>
#include <libiberty/demangle.h>

#include "runtime/agent/agent_priv.h"

char *agent_dmgl_base(const char *mangled)
{
	if (mangled[0] != '_' || mangled[1] != 'Z')
		return NULL;
	return cplus_demangle(mangled, DMGL_ANSI | DMGL_RET_DROP);
}
#endif
