/* SPDX-License-Identifier: MIT */
/*
 * Inside the device verifier: the abstract state and the pieces that
 * verifier.c (exploration), verifier_insn.c (one instruction) and
 * verifier_state.c (comparing and printing states) share.
 */
#ifndef GT_VERIFIER_PRIV_H
#define GT_VERIFIER_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler/verifier.h"

#define VF_NREGS	11
#define VF_SLOTS	(VF_STACK_SIZE / 8)

enum vf_type {
	VT_NOT_INIT,		/* never written on this path */
	VT_SCALAR,		/* a number in [umin, umax]; known: umin == umax */
	VT_CTX,			/* r1 at entry: may be copied, nothing else */
	VT_STACK,		/* r10 + off */
	VT_MAP_VALUE,		/* value of maps[map] + off */
	VT_MAP_VALUE_OR_NULL,	/* lookup result before its null check */
};

/*
 * One register.  Unused fields stay zero so that states compare with
 * memcmp-like rules in verifier_state.c.
 */
struct vf_reg {
	uint8_t type;
	uint8_t known;		/* scalar: val is exact */
	int16_t map;		/* map values: index in the maps array */
	int32_t id;		/* or-null: call insn + 1, shared by copies */
	int64_t off;		/* pointers: constant offset */
	uint64_t val;		/* known scalars */
	uint64_t umin, umax;	/* scalars: unsigned bounds (loops need them) */
};

enum vf_byte {
	VS_INVALID,		/* never written */
	VS_MISC,		/* some scalar bytes */
	VS_SPILL,		/* part of an 8-byte register spill */
};

#define VF_LOOP_DEPTH	8

/* A loop a path is in: back-edge from TAIL to HEAD taken TRIPS times. */
struct vf_loop {
	int head, tail;
	int trips;
	bool forked;		/* a branch in it went both ways */
};

struct vf_state {
	struct vf_reg regs[VF_NREGS];
	uint8_t stack[VF_STACK_SIZE];		/* enum vf_byte; [0] is fp-512 */
	struct vf_reg spill[VF_SLOTS];		/* [0] is fp-512 */
	int pc;
	int from;		/* branch this path took last, for the walk */
	/* not compared: the loops this path is going round, for messages */
	struct vf_loop loops[VF_LOOP_DEPTH];	/* [0] outermost */
	int nloops;
};

struct vf_env {
	const struct bpf_insn *insns;
	size_t n;
	const struct gt_dev_map *maps;
	int nmaps;
	const char *clause;
	FILE *walk;
	char *err;
	size_t errlen;
	int err_pc;		/* instruction an error is reported at */
	int err_loop;		/* loop an error is about (its first insn), or -1 */
};

/* Record "CLAUSE: insn PC: MSG" in ERR (first error only); returns RET. */
int vf_fail(struct vf_env *v, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Execute the non-branching instruction at st->pc (ALU, loads, stores,
 * ld_imm64, calls) on ST.  Returns 0 or a negative errno after vf_fail.
 * Does not move st->pc.
 */
int vf_do_insn(struct vf_env *v, struct vf_state *st);

/* Set every copy of the or-null pointer ID to NULL or to a map value. */
void vf_mark_null(struct vf_state *st, int32_t id, bool is_null);

/* True when exploring CUR cannot find anything OLD's exploration did not. */
bool vf_state_covers(const struct vf_state *old, const struct vf_state *cur);

void vf_print_reg(FILE *f, const struct vf_env *v, const struct vf_reg *r);
void vf_print_state(FILE *f, const struct vf_env *v,
		    const struct vf_state *st);

/* A scalar in [LO, HI] (LO <= HI); known when they are equal. */
static inline void vf_set_range(struct vf_reg *r, uint64_t lo, uint64_t hi)
{
	*r = (struct vf_reg){ .type = VT_SCALAR, .known = lo == hi,
			      .val = lo == hi ? lo : 0, .umin = lo,
			      .umax = hi };
}

static inline void vf_set_scalar(struct vf_reg *r, bool known, uint64_t val)
{
	if (known)
		vf_set_range(r, val, val);
	else
		vf_set_range(r, 0, UINT64_MAX);
}

static inline bool vf_is_ptr(const struct vf_reg *r)
{
	return r->type >= VT_CTX;
}

static inline bool vf_is_null(const struct vf_reg *r)
{
	return r->type == VT_SCALAR && r->known && r->val == 0;
}

#endif
