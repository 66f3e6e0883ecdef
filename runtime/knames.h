/* SPDX-License-Identifier: MIT */
/*
 * The tracer's kernel names by key (gpucode/kname.h): `kernel` values in
 * maps and events hold a hash of the mangled name; printing asks here for
 * the full demangled name without parameters.  Names come from the
 * agent (AGENT_MSG_KNAME), the target's fatbins, and the cuda provider's
 * name map (asked on a miss).
 */
#ifndef GT_KNAMES_H
#define GT_KNAMES_H

#include <stdint.h>

/* Learn mangled NAME (copied).  0 or -ENOMEM. */
int knames_add(const char *name);
/* A BPF hash map (u64 hash -> mangled name, KNAME_MAX bytes) to ask on a
 * miss (a duplicate of FD is kept); -1 forgets it. */
void knames_set_map(int fd);
/* The name for hash H (demangled without parameters, or the name as
 * given when it does not demangle), or NULL when unknown. */
const char *knames_lookup(uint64_t h);
/* Forget everything. */
void knames_reset(void);

#endif
