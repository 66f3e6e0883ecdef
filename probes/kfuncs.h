/* SPDX-License-Identifier: MIT */
/*
 * What the kernel offers to kernel probes: the tracefs directory, the
 * traceable functions, the vmlinux BTF.  Shared by kprobe.c,
 * tracepoint.c, rawtracepoint.c and -l.
 */
#ifndef GT_KFUNCS_H
#define GT_KFUNCS_H

#include <stdbool.h>
#include <stddef.h>

struct btf;

/* The mounted tracefs ("/sys/kernel/tracing" or the debugfs one), or NULL. */
const char *tracefs_dir(void);

/* Why tracefs_dir() is NULL: -ENOENT (not mounted) or -EACCES (mounted
 * but not searchable by us); 0 when it is there.  tracefs_why(): the
 * words for a message. */
int tracefs_error(void);
const char *tracefs_why(void);

/*
 * The traceable kernel functions, sorted and unique: tracefs's
 * available_filter_functions when readable, else the text symbols of
 * /proc/kallsyms (module names dropped).  *N is the count; NULL (and
 * *N 0) when neither can be read.  Cached for the process.
 */
const char *const *kfuncs_list(size_t *n);
bool kfuncs_has(const char *name);

/* vmlinux BTF (/sys/kernel/btf/vmlinux), cached; NULL when absent. */
const struct btf *kfuncs_btf(void);

/* The BTF id of function NAME in vmlinux (an index built once), or -ENOENT. */
int kfuncs_btf_func(const char *name);

/* Whether the kernel has the kprobe PMU (CONFIG_KPROBES); its type in *TYPE. */
bool kfuncs_kprobe_pmu(int *type, int *retbit);

#endif
