/* SPDX-License-Identifier: MIT */
/* Is a uprobe offset an instruction boundary?  probes/insn_check.c. */
#ifndef GT_INSN_CHECK_H
#define GT_INSN_CHECK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Decode the x86-64 function at file offset FOFF of PATH (SIZE bytes,
 * 0: unknown) from its start: 1 when OFF starts an instruction, 0 when
 * it falls inside one, negative errno and ERR when it cannot be checked
 * (no Zydis, unreadable or undecodable code).
 */
int insn_boundary(const char *path, uint64_t foff, uint64_t size,
		  uint64_t off, char *err, size_t errlen);

#endif
