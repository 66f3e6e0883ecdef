/* SPDX-License-Identifier: MIT */
/*
 * Hand-written device eBPF programs for the lowering's tests: every
 * instruction class and every device helper.  Shared by
 * tests/unit/test_lower.c (verify, lower, assemble) and
 * tests/lower/gpu_lower.c (run on a GPU, check the results).
 *
 * Map ids are indexes into lp_maps (and the device context's table).
 */
#ifndef GT_LOWER_PROGS_H
#define GT_LOWER_PROGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/dev_helpers.h"
#include "compiler/emit.h"
#include "compiler/ptx_lower.h"
#include "gpucode/devrt.h"
#include "gpucode/ptx.h"

#define LP_ALU32_IMM(op, d, k)	I_RAW(BPF_ALU | BPF_OP(op) | BPF_K, d, 0, 0, k)
#define LP_JMP32_IMM(op, d, k, o) I_RAW(BPF_JMP32 | BPF_OP(op) | BPF_K, d, 0, o, k)
#define LP_JMP32_REG(op, d, s, o) I_RAW(BPF_JMP32 | BPF_OP(op) | BPF_X, d, s, o, 0)
#define LP_END(src, d, bits)	I_RAW(BPF_ALU | BPF_END | (src), d, 0, 0, bits)
#define LP_ATOMIC(sz, d, s, o, op) I_RAW(BPF_STX | BPF_SIZE(sz) | BPF_ATOMIC, d, s, o, op)

#define LP_MAX_INSNS 1024

/* The device maps, as the agent would describe them. */
enum {
	LM_COUNT, LM_HIST, LM_PLAIN, LM_SUM, LM_MIN, LM_MAX, LM_AVG,
	LM_STATS, LM_LHIST, LM_SMLOAD, LM_KEY20, LM_ACC, LM_WCOUNT,
	LM_WLANES, LM_LOOPW, LM_LOOPC, LM_LOOPH, LM_LOOPK, LM_N
};

struct lp_mapdef {
	uint32_t kind, flags, key_size, value_size;
	int64_t lmin, lmax, lstep;
};

static const struct lp_mapdef lp_mapdefs[LM_N] = {
	[LM_COUNT] = { DEVRT_K_COUNT, 0, 0, 8, 0, 0, 0 },
	[LM_HIST] = { DEVRT_K_HIST, 0, 8, 8, 0, 0, 0 },
	[LM_PLAIN] = { DEVRT_K_PLAIN, 0, 8, 16, 0, 0, 0 },
	[LM_SUM] = { DEVRT_K_SUM, 0, 0, 8, 0, 0, 0 },
	[LM_MIN] = { DEVRT_K_MIN, DEVRT_F_SIGNED, 0, 8, 0, 0, 0 },
	[LM_MAX] = { DEVRT_K_MAX, 0, 8, 8, 0, 0, 0 },
	[LM_AVG] = { DEVRT_K_AVG, 0, 8, 8, 0, 0, 0 },
	[LM_STATS] = { DEVRT_K_STATS, 0, 0, 8, 0, 0, 0 },
	[LM_LHIST] = { DEVRT_K_LHIST, 0, 0, 8, 0, 100, 10 },
	[LM_SMLOAD] = { DEVRT_K_SMLOAD, 0, 0, 8, 0, 0, 0 },
	[LM_KEY20] = { DEVRT_K_COUNT, 0, 20, 8, 0, 0, 0 },
	[LM_ACC] = { DEVRT_K_PLAIN, 0, 0, 8, 0, 0, 0 },
	[LM_WCOUNT] = { DEVRT_K_COUNT, 0, 0, 8, 0, 0, 0 },
	[LM_WLANES] = { DEVRT_K_SUM, 0, 0, 8, 0, 0, 0 },
	[LM_LOOPW] = { DEVRT_K_COUNT, 0, 0, 8, 0, 0, 0 },
	[LM_LOOPC] = { DEVRT_K_COUNT, 0, 0, 8, 0, 0, 0 },
	[LM_LOOPH] = { DEVRT_K_HIST, 0, 0, 8, 0, 0, 0 },
	[LM_LOOPK] = { DEVRT_K_COUNT, 0, 8, 8, 0, 0, 0 },
};

static inline void lp_maps(struct gt_dev_map *m)
{
	for (int i = 0; i < LM_N; i++)
		m[i] = (struct gt_dev_map){ i, lp_mapdefs[i].key_size,
					    lp_mapdefs[i].value_size, false };
}

struct lp_prog {
	const char *name;
	enum pl_mode mode;
	struct bpf_insn in[LP_MAX_INSNS];
	int n;
};

#define E(x) (p->in[p->n++] = (x))
#define CALL(h) E(I_CALL(h))

/* ALU operations the arithmetic programs go through, with immediates. */
static const struct { int op; int32_t k; } lp_alu_ops[] = {
	{ BPF_ADD, 0x7fffffff }, { BPF_SUB, -3 }, { BPF_MUL, -7 },
	{ BPF_DIV, 7 }, { BPF_OR, 0xf0 }, { BPF_AND, -256 },
	{ BPF_LSH, 13 }, { BPF_RSH, 61 }, { BPF_NEG, 0 }, { BPF_MOD, 1000 },
	{ BPF_XOR, -1 }, { BPF_MOV, -2 }, { BPF_ARSH, 7 },
	{ BPF_DIV, -5 }, { BPF_MOD, -5 },
};
#define LP_NALU (int)(sizeof(lp_alu_ops) / sizeof(lp_alu_ops[0]))

/* r8 = tid.x, r6 = x (arg0 mixed with tid), r7 = y (arg1 >> tid) */
static inline void lp_inputs(struct lp_prog *p)
{
	CALL(GT_DH_TID_X);
	E(I_MOV64_REG(BPF_REG_8, BPF_REG_0));
	E(I_MOV64_IMM(BPF_REG_1, 0));
	CALL(GT_DH_ARG);
	E(I_MOV64_REG(BPF_REG_6, BPF_REG_0));
	E(I_MOV64_REG(BPF_REG_1, BPF_REG_8));
	E(I_ALU64_IMM(BPF_MUL, BPF_REG_1, (int32_t)0x9e3779b9));
	E(I_ALU64_REG(BPF_XOR, BPF_REG_6, BPF_REG_1));
	E(I_MOV64_IMM(BPF_REG_1, 1));
	CALL(GT_DH_ARG);
	E(I_MOV64_REG(BPF_REG_7, BPF_REG_0));
	E(I_ALU64_REG(BPF_RSH, BPF_REG_7, BPF_REG_8));
	/* x spilled to a slot that only sees aligned 8-byte accesses */
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_6, -8));
}

/* printf(FMT, the SIZE bytes at r10 + OFF); return 0 */
static inline void lp_print(struct lp_prog *p, int fmt, int off, int size)
{
	E(I_MOV64_IMM(BPF_REG_1, fmt));
	E(I_MOV64_REG(BPF_REG_2, BPF_REG_10));
	E(I_ALU64_IMM(BPF_ADD, BPF_REG_2, off));
	E(I_MOV64_IMM(BPF_REG_3, size));
	CALL(GT_DH_PRINTF);
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

/* Every ALU op, 64 and 32 bits, K and X, and byte swaps; one printf. */
static inline void lp_alu(struct lp_prog *p)
{
	int buf = -8 - 8 * 61, w = 0;

	p->name = "alu";
	lp_inputs(p);
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_8, buf + 8 * w++));
	for (int cls = 0; cls < 4; cls++) {
		bool is64 = cls < 2, x = cls & 1;

		for (int k = 0; k < LP_NALU; k++) {
			int op = lp_alu_ops[k].op;
			uint8_t c = (is64 ? BPF_ALU64 : BPF_ALU) | op |
				    (x ? BPF_X : BPF_K);

			if (x && (op == BPF_NEG || k >= 13))
				continue;
			if (!is64 && k >= 13)
				continue;
			int32_t imm = lp_alu_ops[k].k;

			if (x || op == BPF_NEG)
				imm = 0;
			else if (!is64 && (op == BPF_LSH || op == BPF_RSH ||
					   op == BPF_ARSH))
				imm &= 31;
			E(I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, -8));
			E(I_RAW(c, BPF_REG_0, x ? BPF_REG_7 : 0, 0, imm));
			E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
		}
	}
	for (int be = 0; be < 2; be++)
		for (int bits = 16; bits <= 64; bits *= 2) {
			E(I_MOV64_REG(BPF_REG_0, BPF_REG_6));
			E(LP_END(be ? BPF_TO_BE : BPF_TO_LE, BPF_REG_0, bits));
			E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
		}
	/* a 32-bit move of a register and ld_imm64 */
	E(I_MOV32_REG(BPF_REG_0, BPF_REG_6));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	E(I_LD64_LO(BPF_REG_0, 0, 0xfedcba9876543210ull));
	E(I_LD64_HI(0xfedcba9876543210ull));
	E(I_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_6));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	lp_print(p, 1, buf, 8 * w);
}

static const int lp_jmp_ops[] = {
	BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JGE, BPF_JLT, BPF_JLE, BPF_JSGT,
	BPF_JSGE, BPF_JSLT, BPF_JSLE, BPF_JSET,
};

/*
 * Every conditional jump (64/32 bits, K/X), ja, narrow stack accesses
 * and atomics on the stack; one printf.
 */
static inline void lp_jmp(struct lp_prog *p)
{
	int buf = -32 - 8 * 56, w = 0;

	p->name = "jmp";
	lp_inputs(p);
	/* y = x on odd threads, so equality is seen both ways */
	E(I_JMP_IMM(BPF_JSET, BPF_REG_8, 1, 1));
	E(I_JA(1));
	E(I_MOV64_REG(BPF_REG_7, BPF_REG_6));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_8, buf + 8 * w++));
	for (int cls = 0; cls < 4; cls++) {
		bool j32 = cls >= 2, x = cls & 1;

		for (int k = 0; k < 11; k++) {
			uint8_t c = (j32 ? BPF_JMP32 : BPF_JMP) | lp_jmp_ops[k] |
				    (x ? BPF_X : BPF_K);

			/* tid if taken, tid + 1000 if not: both unknown, so
			 * the verifier's states join */
			E(I_MOV64_REG(BPF_REG_0, BPF_REG_8));
			E(I_RAW(c, BPF_REG_6, x ? BPF_REG_7 : 0, 1,
				x ? 0 : (k & 1 ? -0x1234 : 0x5678)));
			E(I_ALU64_IMM(BPF_ADD, BPF_REG_0, 1000));
			E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
		}
	}
	/* narrow stores, a wider load over them */
	E(I_STX(BPF_B, BPF_REG_10, BPF_REG_6, -24));
	E(I_STX(BPF_B, BPF_REG_10, BPF_REG_7, -23));
	E(I_STX(BPF_H, BPF_REG_10, BPF_REG_8, -22));
	E(I_ST(BPF_W, BPF_REG_10, -20, -77));
	E(I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, -24));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	E(I_LDX(BPF_H, BPF_REG_0, BPF_REG_10, -24));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	/* atomics on a stack slot (-16) */
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_6, -16));
	E(LP_ATOMIC(BPF_DW, BPF_REG_10, BPF_REG_7, -16, BPF_ADD));
	E(I_MOV64_REG(BPF_REG_1, BPF_REG_7));
	E(LP_ATOMIC(BPF_DW, BPF_REG_10, BPF_REG_1, -16, BPF_OR | BPF_FETCH));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, buf + 8 * w++));
	E(I_MOV64_IMM(BPF_REG_1, 0x55));
	E(LP_ATOMIC(BPF_DW, BPF_REG_10, BPF_REG_1, -16, BPF_XCHG));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, buf + 8 * w++));
	E(I_MOV64_IMM(BPF_REG_0, 0x55));
	E(I_MOV64_IMM(BPF_REG_1, 0x66));
	E(LP_ATOMIC(BPF_DW, BPF_REG_10, BPF_REG_1, -16, BPF_CMPXCHG));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	E(I_MOV64_REG(BPF_REG_1, BPF_REG_6));
	E(LP_ATOMIC(BPF_W, BPF_REG_10, BPF_REG_1, -16,
		    BPF_XOR | BPF_FETCH));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, buf + 8 * w++));
	E(I_MOV64_REG(BPF_REG_0, BPF_REG_7));
	E(I_MOV64_IMM(BPF_REG_1, 9));
	E(LP_ATOMIC(BPF_W, BPF_REG_10, BPF_REG_1, -16, BPF_CMPXCHG));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	E(LP_ATOMIC(BPF_W, BPF_REG_10, BPF_REG_8, -16, BPF_AND));
	E(I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, -16));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	lp_print(p, 2, buf, 8 * w);
}

/* Every builtin helper into a printf record (GPU test: known values). */
static const int lp_builtins[] = {
	GT_DH_TID_X, GT_DH_TID_Y, GT_DH_TID_Z, GT_DH_CTAID_X, GT_DH_CTAID_Y,
	GT_DH_CTAID_Z, GT_DH_NTID_X, GT_DH_NTID_Y, GT_DH_NTID_Z,
	GT_DH_NCTAID_X, GT_DH_NCTAID_Y, GT_DH_NCTAID_Z, GT_DH_SMID,
	GT_DH_NSMID, GT_DH_WARPID, GT_DH_LANEID, GT_DH_LANES, GT_DH_GTIME,
	GT_DH_CLOCK, GT_DH_DURATION, GT_DH_LAUNCH, GT_DH_LAUNCH_NS,
	GT_DH_GPU, GT_DH_PID, GT_DH_KERNEL,
};
#define LP_NBUILTIN (int)(sizeof(lp_builtins) / sizeof(lp_builtins[0]))

static inline void lp_builtin(struct lp_prog *p)
{
	int buf = -8 * (LP_NBUILTIN + 3), w = 0;

	p->name = "builtins";
	for (int k = 0; k < LP_NBUILTIN; k++) {
		CALL(lp_builtins[k]);
		E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	}
	for (int a = 0; a < 3; a++) {
		E(I_MOV64_IMM(BPF_REG_1, a));
		CALL(GT_DH_ARG);
		E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8 * w++));
	}
	lp_print(p, 3, buf, 8 * w);
}

/* key/value scratch for the map programs */
#define LP_K	-8	/* 8-byte key */
#define LP_K20	-32	/* 20-byte key */
#define LP_V	-48	/* 16-byte value */

/* agg(map, key at r10+KOFF or none, value in r3) */
static inline void lp_agg(struct lp_prog *p, int helper, int map, int koff)
{
	E(I_MOV64_IMM(BPF_REG_1, map));
	if (koff) {
		E(I_MOV64_REG(BPF_REG_2, BPF_REG_10));
		E(I_ALU64_IMM(BPF_ADD, BPF_REG_2, koff));
	} else {
		E(I_MOV64_IMM(BPF_REG_2, 0));
	}
	CALL(helper);
}

/* r6 = global thread index */
static inline void lp_gid(struct lp_prog *p)
{
	CALL(GT_DH_CTAID_X);
	E(I_MOV64_REG(BPF_REG_6, BPF_REG_0));
	CALL(GT_DH_NTID_X);
	E(I_ALU64_REG(BPF_MUL, BPF_REG_6, BPF_REG_0));
	CALL(GT_DH_TID_X);
	E(I_ALU64_REG(BPF_ADD, BPF_REG_6, BPF_REG_0));
}

/* key at LP_K = r6 & MASK */
static inline void lp_key(struct lp_prog *p, int mask)
{
	E(I_MOV64_REG(BPF_REG_1, BPF_REG_6));
	E(I_ALU64_IMM(BPF_AND, BPF_REG_1, mask));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, LP_K));
}

/* Every aggregation (gpu_lower.c computes what the maps must hold). */
static inline void lp_aggs(struct lp_prog *p)
{
	p->name = "aggs";
	lp_gid(p);
	lp_agg(p, GT_DH_AGG_COUNT, LM_COUNT, 0);
	lp_key(p, 3);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	lp_agg(p, GT_DH_AGG_HIST, LM_HIST, LP_K);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	lp_agg(p, GT_DH_AGG_SUM, LM_SUM, 0);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	E(I_ALU64_IMM(BPF_SUB, BPF_REG_3, 100));
	lp_agg(p, GT_DH_AGG_MIN, LM_MIN, 0);
	lp_key(p, 1);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	E(I_ALU64_IMM(BPF_MUL, BPF_REG_3, 3));
	lp_agg(p, GT_DH_AGG_MAX, LM_MAX, LP_K);
	lp_key(p, 3);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	lp_agg(p, GT_DH_AGG_AVG, LM_AVG, LP_K);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	lp_agg(p, GT_DH_AGG_STATS, LM_STATS, 0);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	E(I_ALU64_IMM(BPF_MOD, BPF_REG_3, 120));
	lp_agg(p, GT_DH_AGG_LHIST, LM_LHIST, 0);
	E(I_MOV64_IMM(BPF_REG_3, 1));
	lp_agg(p, GT_DH_AGG_SMLOAD, LM_SMLOAD, 0);
	/* 20-byte key: gid & 7, 'k', 0xaabbccdd */
	E(I_MOV64_REG(BPF_REG_1, BPF_REG_6));
	E(I_ALU64_IMM(BPF_AND, BPF_REG_1, 7));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, LP_K20));
	E(I_ST(BPF_DW, BPF_REG_10, LP_K20 + 8, 'k'));
	E(I_ST(BPF_W, BPF_REG_10, LP_K20 + 16, (int32_t)0xaabbccdd));
	lp_agg(p, GT_DH_AGG_COUNT, LM_KEY20, LP_K20);
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

/* @plain[gid & 15] = { k, 2k }; @acc = 0 */
static inline void lp_update(struct lp_prog *p)
{
	p->name = "update";
	lp_gid(p);
	lp_key(p, 15);
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, LP_V));
	E(I_ALU64_IMM(BPF_LSH, BPF_REG_1, 1));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, LP_V + 8));
	E(I_MOV64_IMM(BPF_REG_3, 0));
	E(I_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_10));
	E(I_ALU64_IMM(BPF_ADD, BPF_REG_3, LP_V));
	lp_agg(p, GT_DH_MAP_UPDATE, LM_PLAIN, LP_K);
	E(I_ST(BPF_DW, BPF_REG_10, LP_V, 0));
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_10));
	E(I_ALU64_IMM(BPF_ADD, BPF_REG_3, LP_V));
	lp_agg(p, GT_DH_MAP_UPDATE, LM_ACC, 0);
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

/*
 * v = @plain[gid & 15]: v[1] += 1 (atomic), @acc += v[0] (atomic fetch),
 * a narrow store and load on the value, then a lookup of a missing key.
 */
static inline void lp_lookup(struct lp_prog *p)
{
	p->name = "lookup";
	lp_gid(p);
	lp_key(p, 15);
	lp_agg(p, GT_DH_MAP_LOOKUP, LM_PLAIN, LP_K);
	E(I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 13));
	E(I_MOV64_REG(BPF_REG_7, BPF_REG_0));
	E(I_MOV64_IMM(BPF_REG_1, 1));
	E(LP_ATOMIC(BPF_DW, BPF_REG_7, BPF_REG_1, 8, BPF_ADD));
	E(I_LDX(BPF_DW, BPF_REG_8, BPF_REG_7, 0));
	E(I_LDX(BPF_W, BPF_REG_9, BPF_REG_7, 4));
	E(I_ALU64_REG(BPF_ADD, BPF_REG_8, BPF_REG_9));	/* high half is 0 */
	lp_agg(p, GT_DH_MAP_LOOKUP, LM_ACC, 0);
	E(I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 2));
	E(LP_ATOMIC(BPF_DW, BPF_REG_0, BPF_REG_8, 0, BPF_ADD | BPF_FETCH));
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_ST(BPF_DW, BPF_REG_10, LP_K, 99));
	lp_agg(p, GT_DH_MAP_LOOKUP, LM_PLAIN, LP_K);
	E(I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 1));
	E(I_ST(BPF_W, BPF_REG_0, 4, 1));	/* never: key 99 is missing */
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

/* delete @plain[15] */
static inline void lp_delete(struct lp_prog *p)
{
	p->name = "delete";
	E(I_ST(BPF_DW, BPF_REG_10, LP_K, 15));
	lp_agg(p, GT_DH_MAP_DELETE, LM_PLAIN, LP_K);
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

/* gpu:warp: @w = count(); @l = sum(lanes) */
static inline void lp_warp(struct lp_prog *p)
{
	p->name = "warp";
	p->mode = PL_WARP;
	lp_agg(p, GT_DH_AGG_COUNT, LM_WCOUNT, 0);
	CALL(GT_DH_LANES);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_0));
	lp_agg(p, GT_DH_AGG_SUM, LM_WLANES, 0);
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

/* The register-budget probes: @c = count() and @h[tid & 3] = hist(tid). */
static inline void lp_count(struct lp_prog *p)
{
	p->name = "count";
	lp_agg(p, GT_DH_AGG_COUNT, LM_COUNT, 0);
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

static inline void lp_hist(struct lp_prog *p)
{
	p->name = "hist";
	CALL(GT_DH_TID_X);
	E(I_MOV64_REG(BPF_REG_6, BPF_REG_0));
	lp_key(p, 3);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	lp_agg(p, GT_DH_AGG_HIST, LM_HIST, LP_K);
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

/*
 * A loop whose rounds differ per thread, with continue and break, that
 * stores through a pointer moving down the stack (the lowering must not
 * take it for one slot):  x = lp_inputs' x; i = 0; p = fp-32;
 * while (i < tid % 8) { i++; x = x * 3 + i; if (x & 1) continue;
 * if (x >> 60 == 5) break; *p = x; p -= 8; }  printf(5, fp-88 .. fp-8),
 * whose first word is the tid (the check runs the interpreter for it;
 * the pointer stops at fp-80).
 */
static inline void lp_loop(struct lp_prog *p)
{
	p->name = "loop";
	lp_inputs(p);
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_8, -88));
	for (int off = -80; off <= -16; off += 8)
		E(I_ST(BPF_DW, BPF_REG_10, off, 0));
	E(I_MOV64_REG(BPF_REG_9, BPF_REG_8));
	E(I_ALU64_IMM(BPF_MOD, BPF_REG_9, 8));
	E(I_MOV64_REG(BPF_REG_1, BPF_REG_10));
	E(I_ALU64_IMM(BPF_ADD, BPF_REG_1, -32));
	E(I_MOV64_IMM(BPF_REG_2, 0));
	/* head */
	E(I_JMP_REG(BPF_JGE, BPF_REG_2, BPF_REG_9, 10));
	E(I_ALU64_IMM(BPF_ADD, BPF_REG_2, 1));
	E(I_ALU64_IMM(BPF_MUL, BPF_REG_6, 3));
	E(I_ALU64_REG(BPF_ADD, BPF_REG_6, BPF_REG_2));
	E(I_JMP_IMM(BPF_JSET, BPF_REG_6, 1, -5));	/* continue */
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	E(I_ALU64_IMM(BPF_RSH, BPF_REG_3, 60));
	E(I_JMP_IMM(BPF_JEQ, BPF_REG_3, 5, 3));		/* break */
	E(I_STX(BPF_DW, BPF_REG_1, BPF_REG_6, 0));
	E(I_ALU64_IMM(BPF_ADD, BPF_REG_1, -8));
	E(I_JA(-11));
	/* out */
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_2, -24));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_6, -16));
	lp_print(p, 5, -88, 88);
}

/* gpu:warp: $i = 0; while ($i < 5) { @lw = count(); $i++; } ($i on the
 * stack, in a register once lowered) */
static inline void lp_loop_warp(struct lp_prog *p)
{
	p->name = "loop_warp";
	p->mode = PL_WARP;
	E(I_ST(BPF_DW, BPF_REG_10, -8, 0));
	E(I_LDX(BPF_DW, BPF_REG_6, BPF_REG_10, -8));
	E(I_JMP_IMM(BPF_JGE, BPF_REG_6, 5, 7));
	lp_agg(p, GT_DH_AGG_COUNT, LM_LOOPW, 0);
	E(I_LDX(BPF_DW, BPF_REG_6, BPF_REG_10, -8));
	E(I_ALU64_IMM(BPF_ADD, BPF_REG_6, 1));
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_6, -8));
	E(I_JA(-9));
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

/*
 * Every thread: $i = 0; while ($i < tid % 4) { @lc = count();
 * @lh = hist($i); @lk[$i] = count(); $i++; }  The lanes of a warp leave
 * the loop at different rounds: the warp-level combining of each update
 * (activemask, match.any) must count each lane once.
 */
static inline void lp_loop_thread(struct lp_prog *p)
{
	p->name = "loop_thread";
	CALL(GT_DH_TID_X);
	E(I_MOV64_REG(BPF_REG_7, BPF_REG_0));
	E(I_ALU64_IMM(BPF_MOD, BPF_REG_7, 4));
	E(I_MOV64_IMM(BPF_REG_6, 0));
	E(I_JMP_REG(BPF_JGE, BPF_REG_6, BPF_REG_7, 14));
	lp_agg(p, GT_DH_AGG_COUNT, LM_LOOPC, 0);
	E(I_MOV64_REG(BPF_REG_3, BPF_REG_6));
	lp_agg(p, GT_DH_AGG_HIST, LM_LOOPH, 0);
	E(I_STX(BPF_DW, BPF_REG_10, BPF_REG_6, LP_K));
	lp_agg(p, GT_DH_AGG_COUNT, LM_LOOPK, LP_K);
	E(I_ALU64_IMM(BPF_ADD, BPF_REG_6, 1));
	E(I_JA(-15));
	E(I_MOV64_IMM(BPF_REG_0, 0));
	E(I_EXIT());
}

enum { LP_ALU, LP_JMP, LP_BUILTIN, LP_AGGS, LP_UPDATE, LP_LOOKUP,
       LP_DELETE, LP_WARP, LP_COUNT, LP_HIST, LP_LOOP, LP_LOOPW, LP_LOOPT,
       LP_NPROGS };

static inline void lp_build(struct lp_prog *p, int which)
{
	static void (*const fn[LP_NPROGS])(struct lp_prog *) = {
		lp_alu, lp_jmp, lp_builtin, lp_aggs, lp_update, lp_lookup,
		lp_delete, lp_warp, lp_count, lp_hist, lp_loop, lp_loop_warp,
		lp_loop_thread,
	};

	memset(p, 0, sizeof(*p));
	fn[which](p);
}

#undef E
#undef CALL

/*
 * A complete module around lowered probes: the runtime, the probes and
 * one kernel per probe, gt_test_K(a0, a1, a2, ctx), that calls it with
 * its arguments (malloc'd; NULL when out of memory).
 */
static inline char *lp_module(const struct pl_func *f, int n,
			      const char *version, const char *target)
{
	char *decls = pl_decls(f, n), *m, *p;
	size_t len;

	if (!decls)
		return NULL;
	len = strlen(decls) + 256 + (size_t)n * 2048;
	m = malloc(len);
	if (!m) {
		free(decls);
		return NULL;
	}
	p = m + snprintf(m, len, ".version %s\n.target %s\n"
			 ".address_size 64\n%s", version, target, decls);
	for (int i = 0; i < n; i++) {
		int k = f[i].index;

		p += snprintf(p, len - (size_t)(p - m),
			".visible .entry gt_test_%d(.param .u64 a0, "
			".param .u64 a1, .param .u64 a2, "
			".param .align 8 .b8 ctx[%d])\n{\n"
			"\t.reg .b64 %%x<8>;\n"
			"\t.reg .b64 %%w<%d>;\n"
			"\tmov.u64 %%x4, %%globaltimer;\n"
			"\tld.param.u64 %%x0, [a0];\n"
			"\tld.param.u64 %%x1, [a1];\n"
			"\tld.param.u64 %%x2, [a2];\n"
			"\tld.param.u64 %%x3, [ctx];\n%s",
			k, DEVRT_PWORDS * 8, DEVRT_PWORDS,
			PTX_SHARD_TEXT("%x5"));
		for (int w = 1; w < DEVRT_PWORDS; w++)
			if (f[i].words & (1u << w))
				p += snprintf(p, len - (size_t)(p - m),
					      "\tld.param.u64 %%w%d, [ctx+%d];\n",
					      w, 8 * w);
		p += snprintf(p, len - (size_t)(p - m),
			      "\tcall __gt_probe_%d, (%%x3, %%x4", k);
		for (int w = 1; w < DEVRT_PWORDS; w++)
			if (f[i].words & (1u << w))
				p += snprintf(p, len - (size_t)(p - m), ", %%w%d", w);
		for (int a = 0; a < f[i].nargs && a < 3; a++)
			p += snprintf(p, len - (size_t)(p - m), ", %%x%d", a);
		if (f[i].words & PL_W_SHARD)
			p += snprintf(p, len - (size_t)(p - m), ", %%x5");
		p += snprintf(p, len - (size_t)(p - m), ");\n\tret;\n}\n");
	}
	free(decls);
	return m;
}

#endif
