// SPDX-License-Identifier: MIT
/*
 * -v: how often the program called the hooked entry points that are
 * not launches, next to the number of launches, said once at exit.  A
 * runtime that asks for a kernel handle at every launch shows here (as
 * many cuKernelGetFunction calls as launches), which is what decides
 * whether a uprobe on such an entry point costs per launch
 * (docs/hostpath.md, "Cost").  Counted only with -v: an atomic add on a
 * shared line is not free on the launch path.
 */
#ifdef GT_AGENT_SO
#include <inttypes.h>
#include <stdio.h>

#include "runtime/agent/agent_priv.h"

static const char *const names[AGENT_C_END_] = {
	[AGENT_C_LAUNCH] = "launches",
	[AGENT_C_MODULE_GET_FUNCTION] = "cuModuleGetFunction",
	[AGENT_C_LIBRARY_GET_KERNEL] = "cuLibraryGetKernel",
	[AGENT_C_KERNEL_GET_FUNCTION] = "cuKernelGetFunction",
	[AGENT_C_GET_PROC] = "cuGetProcAddress",
};

uint64_t agent_calls[AGENT_C_END_];

void agent_calls_report(void)
{
	char buf[512];
	size_t n = 0;

	if (!agent.cfg.verbose)
		return;
	for (int i = 0; i < AGENT_C_END_ && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s %" PRIu64,
				      i ? ", " : "", names[i],
				      __atomic_load_n(&agent_calls[i],
						      __ATOMIC_RELAXED));
	agent_debug("calls seen: %s", buf);
}
#endif /* GT_AGENT_SO */
