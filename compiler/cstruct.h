/* SPDX-License-Identifier: MIT */
/*
 * C struct definitions written in a script (`struct cfg { int a; long b; }`):
 * parsed into T_STRUCT types laid out as the C compiler on x86-64 and
 * arm64 lays them out, so that `->` reads the right bytes of user memory.
 */
#ifndef GT_CSTRUCT_H
#define GT_CSTRUCT_H

#include "lang/ast.h"
#include "compiler/types.h"

/*
 * Parse definition D and add it to *LIST (the unit's structs, which its
 * fields may name).  0, or -EINVAL after reporting at D's line and column.
 */
int cstruct_define(const struct cdef *d, struct type **list);
/* The struct called NAME ("struct cfg") in LIST, or NULL. */
struct type *cstruct_find(struct type *list, const char *name);

#endif
