/* SPDX-License-Identifier: MIT */
/*
 * Internals of the PTX splicer shared by ptx_splice.c (entry, exit, the
 * module) and ptx_splice_mem.c (gpu:mem's sites): growable text, the
 * list of edits, the splice in progress.
 */
#ifndef GT_PTX_SPLICE_PRIV_H
#define GT_PTX_SPLICE_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "gpucode/ptx.h"

#define PTX_MAX_ARG 1023	/* highest %gt_argN a probe may name */

struct sb {
	char *p;
	size_t len, cap;
	bool oom;
};

void sb_add(struct sb *b, const char *s, size_t n);
void sb_str(struct sb *b, const char *s);
void sb_printf(struct sb *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct edit {
	size_t off, del;
	char *ins;
	int seq;
};

struct job {
	const struct ptx_module *m;
	const struct ptx_splice_req *req;
	struct edit *edits;
	int nedits, cap;
	int uniq;		/* label counter, module-wide */
	bool need_t0;
	bool need_t0lo;		/* %gt_t0lo: the low 32 bits, one cheap read */
	bool need_shard;	/* %gt_shard */
	bool need_word[PTX_CTX_WORDS];	/* %gt_launch.. (words 1-3), %gt_wN */
	bool *need_arg;		/* [PTX_MAX_ARG + 1] */
	/* gpu:mem texts read these: computed at the entry, since memory
	 * instructions come before the kernel's straight-line start ends */
	bool mem_t0lo, mem_shard;
	int sm;			/* the module's target, sm_XX */
	char *err;
	size_t errlen;
};

/* Take B's text as an edit at OFF replacing DEL bytes (B is emptied). */
int add_edit(struct job *j, size_t off, size_t del, struct sb *b);
/* TEXT with %gt_uniq replaced by the label prefix of copy UNIQ. */
void add_expanded(struct sb *b, const char *text, int uniq);
/* Paste J's gpu:mem clauses before F's memory instructions (ptx_splice_mem.c). */
int splice_mem(struct job *j, const struct ptx_func *f);

#endif
