/* SPDX-License-Identifier: MIT */
/* -p uprobes that cannot fire (probes/uprobe_check.c). */
#ifndef GT_UPROBE_CHECK_H
#define GT_UPROBE_CHECK_H

struct probe;

/* Warn (once per file) when P, scoped to a process, is in a file that
 * process does not map, or the process is a kernel thread. */
void uprobe_check_fires(const struct probe *p);

#endif
