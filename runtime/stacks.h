/* SPDX-License-Identifier: MIT */
/*
 * kstack/ustack values and ksym/usym: their text, as bpftrace 0.17
 * prints it.  A stack value is a stack id in the program's stack-trace
 * map of that limit (".stackN"), with the pid in the upper half for
 * user stacks; its frames are read and symbolized when printed.
 */
#ifndef GT_STACKS_H
#define GT_STACKS_H

#include <stdbool.h>

#include "compiler/program.h"
#include "compiler/types.h"

/* The loaded object whose stack maps hold the ids (NULL: none). */
void stacks_set_object(const struct gt_object *obj);

/*
 * The text of the T_STACK value at P: "" when the probe got no stack,
 * else "\n" and one line a frame, indented by 4 spaces as a map key
 * (KEY), by 8 elsewhere; perf mode: "\tADDR sym+off (module)".  Caller
 * frees.
 */
char *stacks_format(const struct type *t, const void *p, bool key);

/* The text of the T_SYM value at P (usym, ksym): "name" or "0x...". */
char *stacks_sym(const struct type *t, const void *p);

/* Forget the object and every symbol cache. */
void stacks_reset(void);

#endif
