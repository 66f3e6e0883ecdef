/* SPDX-License-Identifier: MIT */
/* -l: the probes there are, or those of a binary or a process. */
#ifndef GT_LIST_H
#define GT_LIST_H

#include <stdbool.h>
#include <stdio.h>

/*
 * PATTERN NULL: every probe form.  "uprobe:BIN[:GLOB]": that binary's
 * functions; a path: those and the gpu: probes of its kernels.  With a
 * target (PID not 0: every file it maps; CMD: a command's program or a
 * binary, and the libraries it needs): the probe forms and the gpu:
 * probes of its kernels (gpu:kernel:NAME, gpu:warp:NAME), those that
 * PATTERN matches.  VERBOSE (-lv): uprobes with their arguments.
 * Returns 0 or 1 (error shown).
 */
int list_probes(const char *pattern, int pid, const char *cmd, bool verbose,
		FILE *out);

/*
 * PATTERN names a kernel provider (kprobe, tracepoint, rawtracepoint,
 * software, hardware; aliases too) or usdt:BIN: list its probes; the
 * exit status, or -1 for any other pattern (runtime/list_kernel.c).
 * VERBOSE: each tracepoint's fields under it, as bpftrace -lv.
 */
int list_kernel_probes(const char *pattern, int pid, bool verbose, FILE *out);

/* Every concrete kernel probe (software, hardware, tracepoint,
 * rawtracepoint, kprobe) that PATTERN (NULL: any) matches whole. */
void list_kernel_all(const char *pattern, bool verbose, FILE *out);

#endif
