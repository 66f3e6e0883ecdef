// SPDX-License-Identifier: MIT
/*
 * Zydis, the x86 decoder, opened at run time: by the tracer to check
 * uprobe offsets (probes/insn_check.c) and by the agent for its inline
 * hooks (runtime/agent/agent_inline.c).  Debian ships no static
 * libZydis, and both are carried to machines without libzydis4.
 */
#ifndef GT_ZYDIS_LOAD_H
#define GT_ZYDIS_LOAD_H

#ifdef GT_HAVE_ZYDIS
#include <stddef.h>
#include <Zydis/Zydis.h>

struct zydis {
	ZyanStatus (*init)(ZydisDecoder *, ZydisMachineMode, ZydisStackWidth);
	ZyanStatus (*decode)(const ZydisDecoder *, const void *, ZyanUSize,
			     ZydisDecodedInstruction *, ZydisDecodedOperand *);
	ZydisDecoder dec;	/* 64-bit */
};

/*
 * Fill Z from libZydis.so.4.0: the copy in BESIDE's folder first (BESIDE
 * a file's path, NULL for none: the build puts a copy next to gputrace
 * and the agent), then the system's.  The library stays open.  0, or
 * -ENOENT / -ENOSYS with ERR saying why; OWNER names BESIDE there.
 */
int zydis_load(struct zydis *z, const char *beside, const char *owner,
	       char *err, size_t errlen);
#endif

#endif
