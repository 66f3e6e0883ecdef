/* SPDX-License-Identifier: MIT */
/* Internals of the PTX lowering, shared by ptx_lower*.c. */
#ifndef GT_PTX_LOWER_PRIV_H
#define GT_PTX_LOWER_PRIV_H

#include <stdint.h>

#include "compiler/ptx_lower.h"

#define PL_FRAME 512
#define PL_SLOTS (PL_FRAME / 8)

/* What the analysis knows about a register's value. */
enum pl_kind {
	PK_NONE,		/* not written on any path here */
	PK_CONST,		/* known scalar: val */
	PK_SCALAR,		/* unknown scalar */
	PK_STACK,		/* r10 + val */
	PK_STACK_ANY,		/* r10 + an offset that depends on the path */
	PK_MAPV,		/* a map value (or NULL) */
	PK_MIXED,		/* a stack or map pointer, or a scalar */
};

struct pl_val {
	uint8_t kind;
	int64_t val;
};

struct pl_state {
	bool reached;
	struct pl_val r[11];
};

/* per 8-byte stack slot */
enum {
	PS_USED = 1,		/* accessed with a known offset */
	PS_NARROW = 2,		/* some access is not an aligned 8 bytes */
	PS_ESCAPED = 4,		/* its address reaches the runtime */
};

/* Growable text. */
struct pl_buf {
	char *s;
	size_t len, cap;
	bool oom;
};

void pl_printf(struct pl_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct pl_ctx {
	const struct bpf_insn *insns;
	size_t n;
	const struct gt_dev_map *maps;
	int nmaps;
	const struct pl_opts *opts;
	struct pl_state *in;	/* state before each instruction */
	bool *target;		/* is a jump target */
	bool *in_loop;		/* may run more than once per call */
	bool has_loop;		/* some jump goes back */
	bool changed;		/* the analysis needs another pass */
	uint8_t slot[PL_SLOTS];
	bool unknown_stack;	/* stack reached through an unknown offset */
	bool need_fp;		/* r10's value is used */
	bool uses_t0, uses_lanes;
	int ndefer;		/* deferred updates (opts->defer) */
	/*
	 * opts->defer and the body's only memory effects are deferred
	 * updates: no branch on the probe's common path, %pskip (context
	 * 0, or not the warp's leader) folded into each update's predicate.
	 */
	bool straight;
	/*
	 * Straight, and a jump to the probe's end (a filter) became "this
	 * lane skips" (%pskip |= its condition): lanes of one warp may now
	 * differ in %pskip, so warp aggregation votes on it.
	 */
	bool guarded;
	/*
	 * A gpu:mem clause: every lane of the site's mask runs it on the
	 * elected lane's values (%plead, %pmsk), memory updates predicated
	 * on !%pskip, runtime calls warp-uniform (DEVRT_OP_F_UNI), so no
	 * lane branches away (docs/ptx-splice.md, "Memory instructions").
	 */
	bool uni;
	unsigned words;		/* PL_W_*: launch parameter words read */
	unsigned mem;		/* gpu:mem builtins read: bit GT_DH_MEM_* -
				 * GT_DH_MEM_ADDR */
	int lowest;		/* lowest stack offset in .local memory */
	int frame;		/* bytes of .local stack */
	int nargs;
	struct pl_buf out;
	char *err;
	size_t errlen;
	int bad_insn;
};

int pl_fail(struct pl_ctx *c, int e, size_t insn, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ptx_lower_an.c: fills in[], target[], slot[] and the flags. */
int pl_analyze(struct pl_ctx *c);
bool pl_promoted(const struct pl_ctx *c, int64_t off);
const struct gt_dev_map *pl_map(const struct pl_ctx *c, int64_t id);

/* ptx_lower_insn.c: the body, one instruction at a time. */
int pl_emit_insn(struct pl_ctx *c, size_t i);

#endif
