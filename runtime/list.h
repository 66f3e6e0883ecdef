/* SPDX-License-Identifier: MIT */
/* -l: the probes there are, or those of a binary or a process. */
#ifndef GT_LIST_H
#define GT_LIST_H

#include <stdio.h>

/*
 * PATTERN NULL: every probe form.  "uprobe:BIN[:GLOB]" or a path: that
 * binary's functions and the GPU kernels in its fatbins.  PID (not 0):
 * that process's program and GPU kernels.  Returns 0 or 1 (error shown).
 */
int list_probes(const char *pattern, int pid, FILE *out);

#endif
