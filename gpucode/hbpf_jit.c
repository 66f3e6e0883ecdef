// SPDX-License-Identifier: MIT
/*
 * hbpf_jit: verified host eBPF to x86-64 (gpucode/hbpf_jit.h; the design
 * in docs/hostpath.md, "JIT").
 *
 * Registers live in x86 registers for the whole run: r0-r5 in caller-
 * saved ones (a helper call clobbers them anyway), r6-r9 in callee-saved
 * ones, r10 in rbp, the run's state (struct jit_ctx) in r12; r9, r10 and
 * r11 are scratch.  Memory is checked as the interpreter checks it: an
 * access at a constant offset of an unchanged r10 inside the stack needs
 * no check, any other goes through a small stub per size (the value
 * looked up last, the stack, the context inline, then hbpf_int_mem).
 * Helpers go through hbpf_int_call with the registers stored in the
 * context.  The instruction budget only matters for programs with a
 * backward jump: those count each block's instructions at its start, and
 * a block that would pass the budget is run by the interpreter from its
 * start (hbpf_int_resume), so the outcome and the memory written are
 * the interpreter's.  All code (stubs at the end) in one mapping, made
 * read-only and executable once written.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpucode/hbpf_int.h"
#include "gpucode/hbpf_jit.h"

/* What a run's code works on: r12 points here. */
struct jit_ctx {
	long budget;			/* instructions left (loops only) */
	uint64_t ret;
	const struct hbpf_ops *ops;
	void *arg;
	uint64_t top;			/* r10 at the start */
	struct hbpf_memo *memo;		/* per map; NULL: none */
	struct hbpf_run r;
	uint64_t reg[11];	/* helper calls, the budget's way out */
};

typedef int (*jit_fn)(struct jit_ctx *c, const void *ctx);

struct hbpf_jit {
	jit_fn fn;
	const struct hbpf_ops *ops;
	struct hbpf_prog prog;	/* insns and maps: copies, below */
	void *code;
	size_t len, maplen;
};

#if defined(__x86_64__)

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13,
       R14, R15 };
enum { CC_B = 2, CC_AE = 3, CC_E = 4, CC_NE = 5, CC_BE = 6, CC_A = 7,
       CC_L = 0xc, CC_GE = 0xd, CC_LE = 0xe, CC_G = 0xf, JMP = -1 };

/* eBPF register -> x86 register */
static const uint8_t jit_map[11] = {
	RAX, RDI, RSI, RDX, RCX, R8, RBX, R13, R14, R15, RBP,
};

#define OFF(f)		((int32_t)offsetof(struct jit_ctx, f))
#define OFF_R(f)	(OFF(r) + (int32_t)offsetof(struct hbpf_run, f))
#define UNSET		UINT32_MAX
#define PASSES		16

/*
 * What a register or an 8-byte stack slot is known to hold, so that an
 * access the interpreter would allow for certain needs no check: r10's
 * stack plus OFF, the context plus OFF (read only; the run checks once
 * that there is a context), a value of SIZE bytes plus OFF that a lookup
 * returned (until the next lookup: the interpreter keeps the last 16),
 * or one or NULL (a null test makes it a value), a map reference.
 */
enum { A_UNK, A_STK, A_CTX, A_VAL, A_VALNULL, A_MAP };

struct jit_av {
	uint8_t k;
	int32_t off;
	uint32_t size;		/* A_VAL(NULL): value; A_MAP: index */
};

#define SLOTS	(HBPF_STACK / 8)
#define MAXOFF	(1 << 30)
#define MAXBLOCKS 4096			/* beyond: no analysis */

struct jit_state {
	struct jit_av r[11];
	struct jit_av s[SLOTS];		/* the stack's words, top last */
};

struct jit {
	const struct hbpf_prog *p;
	uint8_t *buf;
	size_t len, cap;
	bool oom;			/* or a short jump too far */
	uint32_t *lab, *plab;	/* labels this pass, the last one */
	size_t nlab;
	uint8_t *leader;		/* a block starts at pc */
	uint32_t *blen;			/* its instructions */
	bool count;			/* a backward jump: count blocks */
	bool r10_fixed;			/* no atomic fetch into r10 */
	bool ctx_static;		/* an unchecked context read */
	bool call_used, lookup_used, chk_used[8];
	uint16_t used;			/* registers the program reads */
	uint32_t *block;		/* leader pc -> its block */
	size_t nblocks;
	struct jit_state *in;	/* what is known at each block's start */
	bool *seen;
	struct jit_state *cur;	/* ... at the instruction emitted */
};

/* Labels: each instruction, each block's budget stub, then these. */
#define L_SHORT(j, pc)	((j)->p->n + (pc))
#define L_EXIT(j)	(2 * (j)->p->n)
#define L_ERR(j)	(L_EXIT(j) + 1)
#define L_CALL(j)	(L_EXIT(j) + 2)
#define L_RESUME(j)	(L_EXIT(j) + 3)
#define L_NOCTX(j)	(L_EXIT(j) + 4)
#define L_LOOKUP(j)	(L_EXIT(j) + 5)
#define L_CHK(j, i)	(L_EXIT(j) + 6 + (i))
#define NLABELS(n)	(2 * (n) + 14)

/* ------------------------------------------------------------ bytes -- */

static void jit_b(struct jit *j, uint8_t b)
{
	if (j->len == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 4096;
		uint8_t *nb = j->oom ? NULL : realloc(j->buf, cap);

		if (!nb) {
			j->oom = true;
			return;
		}
		j->buf = nb;
		j->cap = cap;
	}
	j->buf[j->len++] = b;
}

static void jit_u16(struct jit *j, uint16_t v)
{
	jit_b(j, v);
	jit_b(j, v >> 8);
}

static void jit_u32(struct jit *j, uint32_t v)
{
	jit_u16(j, v);
	jit_u16(j, v >> 16);
}

static void jit_u64(struct jit *j, uint64_t v)
{
	jit_u32(j, v);
	jit_u32(j, v >> 32);
}

static bool jit_s8(int64_t v)
{
	return v >= -128 && v <= 127;
}

/* REX for W, modrm.reg R, modrm.rm B; FORCE: sil, dil, bpl as bytes */
static void jit_rex(struct jit *j, bool w, int r, int b, bool force)
{
	uint8_t rex = 0x40 | w << 3 | (r & 8) >> 1 | (b & 8) >> 3;

	if (rex != 0x40 || force)
		jit_b(j, rex);
}

static void jit_op(struct jit *j, unsigned op)
{
	if (op > 0xff)
		jit_b(j, op >> 8);	/* 0x0f */
	jit_b(j, op);
}

/* OP, modrm.reg REG, modrm.rm the register RM */
static void jit_rr(struct jit *j, bool w, unsigned op, int reg, int rm)
{
	jit_rex(j, w, reg, rm, false);
	jit_op(j, op);
	jit_b(j, 0xc0 | (reg & 7) << 3 | (rm & 7));
}

/* OP, modrm.reg REG, memory at BASE + DISP */
static void jit_rm(struct jit *j, bool w, unsigned op, int reg, int base,
		   int32_t disp, bool force)
{
	int mod = !disp && (base & 7) != RBP ? 0 : jit_s8(disp) ? 1 : 2;

	jit_rex(j, w, reg, base, force);
	jit_op(j, op);
	jit_b(j, mod << 6 | (reg & 7) << 3 | (base & 7));
	if ((base & 7) == RSP)
		jit_b(j, 0x24);		/* SIB: no index */
	if (mod == 1)
		jit_b(j, (uint8_t)disp);
	else if (mod == 2)
		jit_u32(j, (uint32_t)disp);
}

/* Group 1 (add or adc sbb and sub xor cmp: EXT) of RM and IMM. */
static void jit_ri(struct jit *j, bool w, int ext, int rm, int32_t imm)
{
	bool s8 = jit_s8(imm);

	jit_rr(j, w, s8 ? 0x83 : 0x81, ext, rm);
	if (s8)
		jit_b(j, (uint8_t)imm);
	else
		jit_u32(j, (uint32_t)imm);
}

/* The same on the 64 bits at BASE + DISP. */
static void jit_mi(struct jit *j, int ext, int base, int32_t disp,
		   int32_t imm)
{
	bool s8 = jit_s8(imm);

	jit_rm(j, true, s8 ? 0x83 : 0x81, ext, base, disp, false);
	if (s8)
		jit_b(j, (uint8_t)imm);
	else
		jit_u32(j, (uint32_t)imm);
}

/* R = V, in the fewest bytes (xor clobbers the flags). */
static void jit_mov_imm(struct jit *j, int r, uint64_t v)
{
	if (!v) {
		jit_rr(j, false, 0x31, r, r);
	} else if (v <= UINT32_MAX) {
		jit_rex(j, false, 0, r, false);
		jit_b(j, 0xb8 | (r & 7));
		jit_u32(j, v);
	} else if ((int64_t)v == (int32_t)v) {
		jit_rr(j, true, 0xc7, 0, r);
		jit_u32(j, v);
	} else {
		jit_rex(j, true, 0, r, false);
		jit_b(j, 0xb8 | (r & 7));
		jit_u64(j, v);
	}
}

static void jit_mov(struct jit *j, int dst, int src)
{
	jit_rr(j, true, 0x89, src, dst);
}

static void jit_push(struct jit *j, int r)
{
	jit_rex(j, false, 0, r, false);
	jit_b(j, 0x50 | (r & 7));
}

static void jit_pop(struct jit *j, int r)
{
	jit_rex(j, false, 0, r, false);
	jit_b(j, 0x58 | (r & 7));
}

/* call FN (C): rsp must be 16-aligned here */
static void jit_call_c(struct jit *j, const void *fn)
{
	jit_mov_imm(j, RAX, (uintptr_t)fn);
	jit_rr(j, false, 0xff, 2, RAX);
}

/* ----------------------------------------------------------- labels -- */

static void jit_bind(struct jit *j, size_t l)
{
	j->lab[l] = j->len;
}

/* Where label L is: bound this pass (behind us), else as the last pass
 * left it; the passes repeat until the two agree. */
static uint32_t jit_where(const struct jit *j, size_t l)
{
	return j->lab[l] != UNSET ? j->lab[l] : j->plab[l];
}

/* jcc CC (JMP: jmp) to label L, short when it reaches */
static void jit_jmp(struct jit *j, int cc, size_t l)
{
	uint32_t t = jit_where(j, l);
	int64_t d;

	if (t != UNSET && jit_s8((int64_t)t - (int64_t)(j->len + 2))) {
		jit_b(j, cc == JMP ? 0xeb : 0x70 | cc);
		jit_b(j, (uint8_t)((int64_t)t - (int64_t)(j->len + 1)));
		return;
	}
	if (cc == JMP) {
		jit_b(j, 0xe9);
	} else {
		jit_b(j, 0x0f);
		jit_b(j, 0x80 | cc);
	}
	d = t == UNSET ? 0 : (int64_t)t - (int64_t)(j->len + 4);
	jit_u32(j, (uint32_t)d);
}

static void jit_call(struct jit *j, size_t l)
{
	uint32_t t = jit_where(j, l);

	jit_b(j, 0xe8);
	jit_u32(j, t == UNSET ? 0 :
		(uint32_t)((int64_t)t - (int64_t)(j->len + 4)));
}

/* A short jump forward inside one sequence: patched by jit_here. */
static size_t jit_fwd(struct jit *j, int cc)
{
	jit_b(j, cc == JMP ? 0xeb : 0x70 | cc);
	jit_b(j, 0);
	return j->len;
}

static void jit_here(struct jit *j, size_t at)
{
	if (j->len - at > 127)
		j->oom = true;
	else if (!j->oom)
		j->buf[at - 1] = (uint8_t)(j->len - at);
}

/* -------------------------------------------------------------- ALU -- */

static void jit_shift(struct jit *j, bool w, bool x, int ext, int d, int s,
		      int32_t k)
{
	if (!x) {
		int c = k & (w ? 63 : 31);

		if (c) {
			jit_rr(j, w, 0xc1, ext, d);
			jit_b(j, c);
		} else if (!w) {
			jit_rr(j, false, 0x89, d, d);	/* zero-extends */
		}
		return;
	}
	/* the count in cl, which is r4's */
	if (s == RCX) {
		jit_rr(j, w, 0xd3, ext, d);
	} else {
		jit_mov(j, R11, RCX);
		jit_mov(j, RCX, s);
		jit_rr(j, w, 0xd3, ext, d == RCX ? R11 : d);
		jit_mov(j, RCX, R11);
	}
	/* a 32-bit shift by 0: zero-extended as any 32-bit result */
	if (!w)
		jit_rr(j, false, 0x89, d, d);
}

/* alu()'s division by zero: DIV 0, MOD the dividend */
static void jit_div0(struct jit *j, bool w, bool mod, int d)
{
	if (!mod)
		jit_rr(j, false, 0x31, d, d);
	else if (!w)
		jit_rr(j, false, 0x89, d, d);
}

/* Unsigned division in rdx:rax (r3 and r0), the divisor in r11. */
static void jit_div(struct jit *j, bool w, bool x, bool mod, int d, int s,
		    int32_t k)
{
	size_t nz = 0, done = 0;

	if (!x) {
		uint64_t v = w ? (uint64_t)(int64_t)k : (uint32_t)k;

		if (!v) {
			jit_div0(j, w, mod, d);
			return;
		}
		jit_mov_imm(j, R11, v);
	} else {
		jit_mov(j, R11, s);
		jit_rr(j, w, 0x85, R11, R11);
		nz = jit_fwd(j, CC_NE);
		jit_div0(j, w, mod, d);
		done = jit_fwd(j, JMP);
		jit_here(j, nz);
	}
	jit_mov(j, R9, RAX);
	jit_mov(j, R10, RDX);
	if (d != RAX)
		jit_rr(j, w, 0x89, d == RDX ? R10 : d, RAX);
	jit_rr(j, false, 0x31, RDX, RDX);
	jit_rr(j, w, 0xf7, 6, R11);
	jit_mov(j, R11, mod ? RDX : RAX);
	jit_mov(j, RAX, R9);
	jit_mov(j, RDX, R10);
	jit_mov(j, d, R11);
	if (x)
		jit_here(j, done);
}

static void jit_end(struct jit *j, bool be, int bits, int d)
{
	if (!be) {		/* x86 is little endian: truncation */
		if (bits == 16)
			jit_rr(j, false, 0x0fb7, d, d);
		else if (bits == 32)
			jit_rr(j, false, 0x89, d, d);
		return;
	}
	if (bits == 16) {
		jit_b(j, 0x66);		/* ror d16, 8 */
		jit_rr(j, false, 0xc1, 1, d);
		jit_b(j, 8);
		jit_rr(j, false, 0x0fb7, d, d);
		return;
	}
	jit_rex(j, bits == 64, 0, d, false);
	jit_b(j, 0x0f);
	jit_b(j, 0xc8 | (d & 7));
}

static void jit_alu(struct jit *j, const struct bpf_insn *in)
{
	static const struct {
		uint8_t op, ext;
	} arith[16] = {
		[BPF_ADD >> 4] = { 0x01, 0 }, [BPF_SUB >> 4] = { 0x29, 5 },
		[BPF_AND >> 4] = { 0x21, 4 }, [BPF_OR >> 4] = { 0x09, 1 },
		[BPF_XOR >> 4] = { 0x31, 6 },
	};
	static const uint8_t shift[16] = {
		[BPF_LSH >> 4] = 4, [BPF_RSH >> 4] = 5, [BPF_ARSH >> 4] = 7,
	};
	bool w = BPF_CLASS(in->code) == BPF_ALU64;
	bool x = BPF_SRC(in->code) == BPF_X;
	int d = jit_map[in->dst_reg], s = jit_map[in->src_reg];
	int op = BPF_OP(in->code);
	int32_t k = in->imm;

	switch (op) {
	case BPF_ADD: case BPF_SUB: case BPF_AND: case BPF_OR: case BPF_XOR:
		if (x)
			jit_rr(j, w, arith[op >> 4].op, s, d);
		else
			jit_ri(j, w, arith[op >> 4].ext, d, k);
		break;
	case BPF_MOV:
		if (x && (!w || d != s))
			jit_rr(j, w, 0x89, s, d);
		else if (!x)
			jit_mov_imm(j, d, w ? (uint64_t)(int64_t)k :
				    (uint32_t)k);
		break;
	case BPF_MUL:
		if (x) {
			jit_rr(j, w, 0x0faf, d, s);
		} else if (jit_s8(k)) {
			jit_rr(j, w, 0x6b, d, d);
			jit_b(j, (uint8_t)k);
		} else {
			jit_rr(j, w, 0x69, d, d);
			jit_u32(j, (uint32_t)k);
		}
		break;
	case BPF_NEG:
		jit_rr(j, w, 0xf7, 3, d);
		break;
	case BPF_LSH: case BPF_RSH: case BPF_ARSH:
		jit_shift(j, w, x, shift[op >> 4], d, s, k);
		break;
	case BPF_DIV: case BPF_MOD:
		jit_div(j, w, x, op == BPF_MOD, d, s, k);
		break;
	case BPF_END:
		jit_end(j, x, k, d);
		break;
	}
}

/* --------------------------------------------------------- analysis -- */

static const uint8_t jit_sizes[4] = { 4, 2, 1, 8 };	/* BPF_SIZE >> 3 */
static const struct jit_av jit_unk;

static void jit_set(struct jit_av *a, int k, int64_t off, uint32_t size)
{
	if (off <= -MAXOFF || off >= MAXOFF) {
		*a = jit_unk;
		return;
	}
	a->k = k;
	a->off = (int32_t)off;
	a->size = size;
}

/* The slot of the word at r10 + OFF, or -1. */
static int jit_slot(int64_t off)
{
	if (off < -HBPF_STACK || off > -8 || off % 8)
		return -1;
	return (int)((off + HBPF_STACK) / 8);
}

/* Bytes [LO, HI) of the stack (r10-relative) written: what their slots
 * held is gone; LO > HI: anywhere. */
static void jit_kill_slots(struct jit_state *st, int64_t lo, int64_t hi)
{
	for (int i = 0; i < SLOTS; i++) {
		int64_t a = 8 * i - HBPF_STACK;

		if (lo > hi || (a < hi && lo < a + 8))
			st->s[i] = jit_unk;
	}
}

/* A lookup: the values known so far may have left the value ring. */
static void jit_kill_vals(struct jit_state *st)
{
	for (int i = 0; i < 11 + SLOTS; i++) {
		struct jit_av *a = i < 11 ? &st->r[i] : &st->s[i - 11];

		if (a->k == A_VAL || a->k == A_VALNULL)
			*a = jit_unk;
	}
}

/* What the start of the program, or a block not analysed, knows. */
static void jit_state_init(const struct jit *j, struct jit_state *st,
			   bool entry)
{
	memset(st, 0, sizeof(*st));
	if (entry)
		jit_set(&st->r[1], A_CTX, 0, 0);
	if (entry || j->r10_fixed)
		jit_set(&st->r[10], A_STK, 0, 0);
}

/* Whether the access of N bytes at register R + OFF needs no check. */
static bool jit_known(const struct jit *j, const struct jit_state *st, int r,
		      int16_t off, int n, bool write)
{
	const struct jit_av *a = &st->r[r];
	int64_t o = (int64_t)a->off + off;

	switch (a->k) {
	case A_STK:
		return o >= -HBPF_STACK && o <= -n;
	case A_CTX:
		return !write && o >= 0 && o + n <= j->p->ctx_size;
	case A_VAL:
		return o >= 0 && o + n <= a->size;
	}
	return false;
}

static void jit_step_call(struct jit *j, struct jit_state *st, int id)
{
	struct jit_av r1 = st->r[1];

	if (id == BPF_FUNC_map_lookup_elem)
		jit_kill_vals(st);
	if (id == BPF_FUNC_probe_read_user ||
	    id == BPF_FUNC_probe_read_user_str ||
	    id == BPF_FUNC_get_current_comm)
		jit_kill_slots(st, 1, 0);
	for (int i = 0; i <= 5; i++)
		st->r[i] = jit_unk;
	if (id == BPF_FUNC_map_lookup_elem && r1.k == A_MAP &&
	    r1.size < (uint32_t)j->p->nmaps)
		jit_set(&st->r[0], A_VALNULL, 0,
			j->p->maps[r1.size].value_size);
}

/* ST, STX, atomics: the slots they write, a fetch's register. */
static void jit_step_store(struct jit_state *st, const struct bpf_insn *in,
			   int n)
{
	const struct jit_av *b = &st->r[in->dst_reg];
	int64_t o = (int64_t)b->off + in->off;
	int i = jit_slot(o);

	if (b->k != A_STK) {
		jit_kill_slots(st, 1, 0);	/* it may be the stack too */
	} else {
		jit_kill_slots(st, o, o + n);
		if (BPF_CLASS(in->code) == BPF_STX &&
		    BPF_MODE(in->code) == BPF_MEM && n == 8 && i >= 0)
			st->s[i] = st->r[in->src_reg];	/* a spill */
	}
	if (BPF_MODE(in->code) == BPF_ATOMIC && (in->imm & BPF_FETCH))
		st->r[in->src_reg] = jit_unk;
}

/* What IN (not a jump) leaves known. */
static void jit_step(struct jit *j, struct jit_state *st,
		     const struct bpf_insn *in)
{
	uint8_t c = in->code, cls = BPF_CLASS(c), op = BPF_OP(c);
	struct jit_av *d = &st->r[in->dst_reg];
	int n = jit_sizes[BPF_SIZE(c) >> 3];
	int64_t o;

	switch (cls) {
	case BPF_ALU64:
		if (op == BPF_MOV && BPF_SRC(c) == BPF_X) {
			*d = st->r[in->src_reg];
		} else if ((op == BPF_ADD || op == BPF_SUB) &&
			   BPF_SRC(c) == BPF_K &&
			   (d->k == A_STK || d->k == A_CTX || d->k == A_VAL)) {
			o = op == BPF_ADD ? in->imm : -(int64_t)in->imm;
			jit_set(d, d->k, d->off + o, d->size);
		} else {
			*d = jit_unk;
		}
		break;
	case BPF_ALU:
		*d = jit_unk;
		break;
	case BPF_LDX:
		o = (int64_t)st->r[in->src_reg].off + in->off;
		if (st->r[in->src_reg].k == A_CTX &&
		    jit_known(j, st, in->src_reg, in->off, n, false))
			j->ctx_static = true;
		if (n == 8 && st->r[in->src_reg].k == A_STK && jit_slot(o) >= 0)
			*d = st->s[jit_slot(o)];
		else
			*d = jit_unk;
		break;
	case BPF_ST:
	case BPF_STX:
		jit_step_store(st, in, n);
		break;
	case BPF_LD:
		if (in->src_reg == BPF_PSEUDO_MAP_FD)
			jit_set(d, A_MAP, 0, (uint32_t)in->imm);
		else
			*d = jit_unk;
		break;
	case BPF_JMP:
		if (op == BPF_CALL)
			jit_step_call(j, st, in->imm);
		break;
	}
}

/* Along the edge of jump IN (TAKEN or not): a null test of a lookup's
 * result makes it a value where it is not NULL. */
static void jit_edge(struct jit_state *st, const struct bpf_insn *in,
		     bool taken)
{
	struct jit_av *d = &st->r[in->dst_reg];
	uint8_t op = BPF_OP(in->code);

	if (BPF_CLASS(in->code) != BPF_JMP || BPF_SRC(in->code) != BPF_K ||
	    in->imm || d->k != A_VALNULL || (op != BPF_JEQ && op != BPF_JNE))
		return;
	if ((op == BPF_JEQ) != taken)
		d->k = A_VAL;
	else
		*d = jit_unk;
}

/* A <- A join B; whether A changed. */
static bool jit_join1(struct jit_av *a, const struct jit_av *b)
{
	bool vals = (a->k == A_VAL || a->k == A_VALNULL) &&
		    (b->k == A_VAL || b->k == A_VALNULL);

	if (!memcmp(a, b, sizeof(*a)) || a->k == A_UNK)
		return false;
	if (vals && a->off == b->off && a->size == b->size) {
		if (a->k == A_VALNULL)
			return false;
		a->k = A_VALNULL;
		return true;
	}
	*a = jit_unk;
	return true;
}

struct jit_work {
	uint32_t *stack, *lead;
	size_t top;
	bool *inq;
};

static void jit_flow_to(struct jit *j, struct jit_work *w, size_t pc,
			const struct jit_state *st)
{
	uint32_t b = j->block[pc];
	bool changed = false;

	if (!j->seen[b]) {
		j->in[b] = *st;
		j->seen[b] = changed = true;
	} else {
		for (int i = 0; i < 11; i++)
			changed |= jit_join1(&j->in[b].r[i], &st->r[i]);
		for (int i = 0; i < SLOTS; i++)
			changed |= jit_join1(&j->in[b].s[i], &st->s[i]);
	}
	if (changed && !w->inq[b]) {
		w->inq[b] = true;
		w->stack[w->top++] = b;
	}
}

/* Block B from its start: its successors get what is known at its end. */
static void jit_flow_block(struct jit *j, struct jit_work *w, uint32_t b)
{
	const struct bpf_insn *v = j->p->insns;
	struct jit_state st = j->in[b], t;
	size_t pc = w->lead[b];

	for (;;) {
		const struct bpf_insn *in = &v[pc];
		uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);

		if ((cls == BPF_JMP || cls == BPF_JMP32) && op != BPF_CALL) {
			if (op == BPF_EXIT)
				return;
			if (op != BPF_JA) {
				t = st;
				jit_edge(&t, in, true);
				jit_flow_to(j, w, pc + 1 + in->off, &t);
				jit_edge(&st, in, false);
				jit_flow_to(j, w, pc + 1, &st);
			} else {
				jit_flow_to(j, w, pc + 1 + in->off, &st);
			}
			return;
		}
		jit_step(j, &st, in);
		pc += in->code == (BPF_LD | BPF_IMM | BPF_DW) ? 2 : 1;
		if (pc >= j->p->n)
			return;
		if (j->leader[pc]) {
			jit_flow_to(j, w, pc, &st);
			return;
		}
	}
}

/* What is known at each block's start, to a fixed point (the joins only
 * ever lose knowledge).  0, or -ENOMEM. */
static int jit_flow(struct jit *j)
{
	struct jit_work w = { 0 };
	struct jit_state st;
	int e = -ENOMEM;

	for (size_t pc = 0; pc < j->p->n; pc++)
		j->nblocks += j->leader[pc];
	if (j->nblocks > MAXBLOCKS)
		return 0;	/* nothing known: every access checked */
	j->in = malloc(j->nblocks * sizeof(*j->in));
	j->seen = calloc(j->nblocks, sizeof(*j->seen));
	w.stack = malloc(j->nblocks * sizeof(*w.stack));
	w.lead = malloc(j->nblocks * sizeof(*w.lead));
	w.inq = calloc(j->nblocks, sizeof(*w.inq));
	if (!j->in || !j->seen || !w.stack || !w.lead || !w.inq)
		goto out;
	for (size_t pc = 0, b = 0; pc < j->p->n; pc++)
		if (j->leader[pc]) {
			j->block[pc] = b;
			w.lead[b++] = pc;
		}
	jit_state_init(j, &st, true);
	jit_flow_to(j, &w, 0, &st);
	while (w.top) {
		uint32_t b = w.stack[--w.top];

		w.inq[b] = false;
		jit_flow_block(j, &w, b);
	}
	e = 0;
out:
	free(w.stack);
	free(w.lead);
	free(w.inq);
	return e;
}

/* ----------------------------------------------------------- memory -- */

static int jit_log2(int n)
{
	return n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : 3;
}

/*
 * The operand of an access of N bytes at eBPF register R + OFF: the
 * stack itself when static, else r11 once a check stub has passed it.
 */
static void jit_addr(struct jit *j, int r, int16_t off, int n, bool write,
		     int *base, int32_t *disp)
{
	int i = jit_log2(n) * 2 + write;

	if (jit_known(j, j->cur, r, off, n, write)) {
		*base = jit_map[r];
		*disp = off;
		return;
	}
	jit_rm(j, true, 0x8d, R11, jit_map[r], off, false);
	j->chk_used[i] = true;
	jit_call(j, L_CHK(j, i));
	*base = R11;
	*disp = 0;
}

static void jit_ldx(struct jit *j, const struct bpf_insn *in, int n)
{
	static const unsigned op[4] = { 0x0fb6, 0x0fb7, 0x8b, 0x8b };
	int d = jit_map[in->dst_reg], b;
	int32_t disp;

	jit_addr(j, in->src_reg, in->off, n, false, &b, &disp);
	jit_rm(j, n == 8, op[jit_log2(n)], d, b, disp, false);
}

static void jit_st(struct jit *j, const struct bpf_insn *in, int n)
{
	int b;
	int32_t disp;

	jit_addr(j, in->dst_reg, in->off, n, true, &b, &disp);
	if (n == 2)
		jit_b(j, 0x66);
	jit_rm(j, n == 8, n == 1 ? 0xc6 : 0xc7, 0, b, disp, false);
	if (n == 1)
		jit_b(j, (uint8_t)in->imm);
	else if (n == 2)
		jit_u16(j, (uint16_t)in->imm);
	else
		jit_u32(j, (uint32_t)in->imm);	/* 8: sign-extended */
}

static void jit_stx(struct jit *j, const struct bpf_insn *in, int n)
{
	int s = jit_map[in->src_reg], b;
	int32_t disp;

	jit_addr(j, in->dst_reg, in->off, n, true, &b, &disp);
	if (BPF_MODE(in->code) == BPF_ATOMIC) {
		/* lock add, or lock xadd: the old value into src */
		jit_b(j, 0xf0);
		jit_rm(j, n == 8, in->imm & BPF_FETCH ? 0x0fc1 : 0x01, s, b,
		       disp, false);
		return;
	}
	if (n == 2)
		jit_b(j, 0x66);
	jit_rm(j, n == 8, n == 1 ? 0x88 : 0x89, s, b, disp,
	       n == 1 && s >= RSP && s <= RDI);
}

/* ------------------------------------------------------------ jumps -- */

static void jit_cond(struct jit *j, const struct bpf_insn *in, size_t pc)
{
	static const int8_t cc[16] = {
		[BPF_JEQ >> 4] = CC_E, [BPF_JGT >> 4] = CC_A,
		[BPF_JGE >> 4] = CC_AE, [BPF_JSET >> 4] = CC_NE,
		[BPF_JNE >> 4] = CC_NE, [BPF_JSGT >> 4] = CC_G,
		[BPF_JSGE >> 4] = CC_GE, [BPF_JLT >> 4] = CC_B,
		[BPF_JLE >> 4] = CC_BE, [BPF_JSLT >> 4] = CC_L,
		[BPF_JSLE >> 4] = CC_LE,
	};
	bool w = BPF_CLASS(in->code) == BPF_JMP;
	bool x = BPF_SRC(in->code) == BPF_X;
	int d = jit_map[in->dst_reg], s = jit_map[in->src_reg];
	int op = BPF_OP(in->code);

	if (!in->off)		/* to the next instruction either way */
		return;
	if (op == BPF_JSET && x) {
		jit_rr(j, w, 0x85, s, d);
	} else if (op == BPF_JSET) {
		jit_rr(j, w, 0xf7, 0, d);
		jit_u32(j, (uint32_t)in->imm);
	} else if (x) {
		jit_rr(j, w, 0x39, s, d);
	} else if (!in->imm) {
		jit_rr(j, w, 0x85, d, d);	/* flags as cmp d, 0 */
	} else {
		jit_ri(j, w, 7, d, in->imm);
	}
	jit_jmp(j, cc[op >> 4], pc + 1 + in->off);
}

/* ---------------------------------------------------- instructions -- */

/* A lookup whose checks can be made here: a map reference in r1, a key
 * inside the stack in r2 (in rsi: the C function's second argument). */
static bool jit_lookup_known(const struct jit *j, const struct bpf_insn *in)
{
	const struct jit_av *m = &j->cur->r[1], *k = &j->cur->r[2];

	return in->imm == BPF_FUNC_map_lookup_elem && m->k == A_MAP &&
	       m->size < (uint32_t)j->p->nmaps && !j->p->maps[m->size].ring &&
	       k->k == A_STK && k->off >= -HBPF_STACK &&
	       (int64_t)k->off + j->p->maps[m->size].key_size <= 0;
}

/* Instruction PC; the slots it takes (2: LD_IMM64). */
static int jit_insn(struct jit *j, size_t pc)
{
	const struct bpf_insn *in = &j->p->insns[pc];
	uint8_t c = in->code, cls = BPF_CLASS(c), op = BPF_OP(c);
	int n = jit_sizes[BPF_SIZE(c) >> 3];

	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		jit_alu(j, in);
		break;
	case BPF_LDX:
		jit_ldx(j, in, n);
		break;
	case BPF_ST:
		jit_st(j, in, n);
		break;
	case BPF_STX:
		jit_stx(j, in, n);
		break;
	case BPF_LD:
		jit_mov_imm(j, jit_map[in->dst_reg],
			    in->src_reg == BPF_PSEUDO_MAP_FD ?
			    HBPF_MAP_TAG | (uint32_t)in->imm :
			    (uint32_t)in->imm |
			    (uint64_t)(uint32_t)in[1].imm << 32);
		return 2;
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_EXIT) {
			if (pc + 1 < j->p->n)	/* else it falls into it */
				jit_jmp(j, JMP, L_EXIT(j));
		} else if (op == BPF_CALL && jit_lookup_known(j, in)) {
			jit_mov_imm(j, RDX, j->cur->r[1].size);
			jit_call(j, L_LOOKUP(j));
			j->lookup_used = true;
		} else if (op == BPF_CALL) {
			jit_mov_imm(j, R10, (uint32_t)in->imm);
			jit_call(j, L_CALL(j));
			j->call_used = true;
		} else if (op == BPF_JA) {
			if (in->off)
				jit_jmp(j, JMP, pc + 1 + in->off);
		} else {
			jit_cond(j, in, pc);
		}
		break;
	}
	return 1;
}

/* ------------------------------------------------------------ stubs -- */

/*
 * Check stub I (size 1 << I / 2, a write when odd): r11 is the address;
 * returns when the interpreter's mem() would allow the access, else the
 * run ends with -EFAULT.  Order does not matter (any region will do):
 * the value looked up last, the stack, the context, then the rest in C.
 */
static void jit_chk_stub(struct jit *j, int i)
{
	int n = 1 << (i / 2);
	bool write = i & 1;
	uint32_t cs = j->p->ctx_size;
	size_t not_last, ok[3], slow = 0, fault;
	int nok = 0;

	jit_bind(j, L_CHK(j, i));
	/* last: addr - last + n <= lsize without a carry */
	jit_mov(j, R10, R11);
	jit_rm(j, true, 0x2b, R10, R12, OFF_R(last), false);
	jit_ri(j, true, 0, R10, n);
	not_last = jit_fwd(j, CC_B);
	jit_rm(j, true, 0x3b, R10, R12, OFF_R(lsize), false);
	ok[nok++] = jit_fwd(j, CC_BE);
	jit_here(j, not_last);
	/* the stack: addr - stack <= HBPF_STACK - n */
	jit_mov(j, R10, R11);
	jit_rm(j, true, 0x2b, R10, R12, OFF_R(stack), false);
	jit_ri(j, true, 7, R10, HBPF_STACK - n);
	ok[nok++] = jit_fwd(j, CC_BE);
	/* the context, read only, when there is one */
	if (!write && cs >= (uint32_t)n && cs - n <= INT32_MAX) {
		jit_mov(j, R10, R11);
		jit_rm(j, true, 0x2b, R10, R12, OFF_R(ctx), false);
		jit_ri(j, true, 7, R10, (int32_t)(cs - n));
		slow = jit_fwd(j, CC_A);
		jit_mi(j, 7, R12, OFF_R(ctx), 0);
		ok[nok++] = jit_fwd(j, CC_NE);
		jit_here(j, slow);
	}
	/* the value ring and anything else: hbpf_int_mem */
	jit_push(j, RAX);
	jit_push(j, RDI);
	jit_push(j, RSI);
	jit_push(j, RDX);
	jit_push(j, RCX);
	jit_push(j, R8);
	jit_push(j, R11);
	jit_push(j, R9);	/* 8 pushes: still 16-aligned */
	jit_rm(j, true, 0x8d, RDI, R12, OFF(r), false);
	jit_mov(j, RSI, R11);
	jit_mov_imm(j, RDX, n);
	jit_mov_imm(j, RCX, write);
	jit_call_c(j, (const void *)hbpf_int_mem);
	jit_pop(j, R9);
	jit_pop(j, R11);
	jit_pop(j, R8);
	jit_pop(j, RCX);
	jit_pop(j, RDX);
	jit_pop(j, RSI);
	jit_pop(j, RDI);
	jit_rr(j, true, 0x85, RAX, RAX);
	jit_pop(j, RAX);
	fault = jit_fwd(j, CC_E);
	while (nok)
		jit_here(j, ok[--nok]);
	jit_b(j, 0xc3);
	jit_here(j, fault);
	jit_pop(j, R11);	/* our return address */
	jit_mov_imm(j, RAX, (uint32_t)-EFAULT);
	jit_jmp(j, JMP, L_ERR(j));
}

/* Helper r10d with r1-r4 as the interpreter has them, r0 its result,
 * r1-r5 zero after; an error ends the run with it. */
static void jit_call_stub(struct jit *j)
{
	size_t bad;

	jit_bind(j, L_CALL(j));
	for (int i = 1; i <= 4; i++)
		jit_rm(j, true, 0x89, jit_map[i], R12, OFF(reg) + 8 * i, false);
	jit_rm(j, true, 0x8d, RDI, R12, OFF(r), false);
	jit_rm(j, true, 0x8b, RSI, R12, OFF(ops), false);
	jit_rm(j, true, 0x8b, RDX, R12, OFF(arg), false);
	jit_rr(j, false, 0x89, R10, RCX);
	jit_rm(j, true, 0x8d, R8, R12, OFF(reg), false);
	jit_call_c(j, (const void *)hbpf_int_call);
	jit_rr(j, false, 0x85, RAX, RAX);
	bad = jit_fwd(j, CC_NE);
	jit_rm(j, true, 0x8b, RAX, R12, OFF(reg), false);
	for (int i = 1; i <= 5; i++)
		jit_mov_imm(j, jit_map[i], 0);
	jit_b(j, 0xc3);
	jit_here(j, bad);
	jit_pop(j, R11);
	jit_jmp(j, JMP, L_ERR(j));
}

/* The memo first (struct hbpf_memo): a launch loop looks up one kernel's
 * name and count again and again. */
static HBPF_HOT void *jit_lookup(struct jit_ctx *c, const void *key, long mi)
{
	const struct hbpf_memo *m = c->memo ? &c->memo[mi] : NULL;

	if (m && m->val &&
	    hbpf_key_eq(m->key, key, c->r.p->maps[mi].key_size)) {
		hbpf_int_keep(&c->r, (int)mi, m->val);
		return m->val;
	}
	return hbpf_int_lookup(&c->r, c->ops, c->arg, (int)mi, key);
}

/* A lookup jit_lookup_known passed: edx the map, rsi (r2) the key. */
static void jit_lookup_stub(struct jit *j)
{
	jit_bind(j, L_LOOKUP(j));
	jit_mov(j, RDI, R12);
	jit_call_c(j, (const void *)jit_lookup);
	for (int i = 1; i <= 5; i++)
		jit_mov_imm(j, jit_map[i], 0);
	jit_b(j, 0xc3);
}

static int jit_resume(struct jit_ctx *c, uint64_t pc)
{
	return hbpf_int_resume(&c->r, c->ops, c->arg, c->reg, pc, c->budget,
			       &c->ret);
}

/* A block that would pass the budget: the interpreter runs it from its
 * start with what is left (r10d: its pc), and the run ends there. */
static void jit_resume_stubs(struct jit *j)
{
	if (j->ctx_static) {	/* no context: all of it interpreted */
		jit_bind(j, L_NOCTX(j));
		jit_mov_imm(j, R10, 0);
		jit_call(j, L_RESUME(j));
	}
	for (size_t pc = 0; j->count && pc < j->p->n; pc++) {
		if (!j->leader[pc])
			continue;
		jit_bind(j, L_SHORT(j, pc));
		jit_mi(j, 0, R12, OFF(budget), (int32_t)j->blen[pc]);
		jit_mov_imm(j, R10, pc);
		jit_call(j, L_RESUME(j));
	}
	jit_bind(j, L_RESUME(j));
	for (int i = 0; i <= 10; i++)
		jit_rm(j, true, 0x89, jit_map[i], R12, OFF(reg) + 8 * i, false);
	jit_mov(j, RDI, R12);
	jit_mov(j, RSI, R10);
	jit_call_c(j, (const void *)jit_resume);
	jit_pop(j, R11);
	jit_jmp(j, JMP, L_ERR(j));
}

/* ------------------------------------------------------------ passes -- */

static void jit_prologue(struct jit *j)
{
	static const uint8_t saved[] = { RBX, RBP, R12, R13, R14, R15 };

	for (size_t i = 0; i < sizeof(saved); i++)
		jit_push(j, saved[i]);
	jit_mov(j, R12, RDI);
	jit_mov(j, RDI, RSI);			/* r1: the context */
	jit_rm(j, true, 0x8b, RBP, R12, OFF(top), false);
	for (int i = 0; i <= 9; i++)
		if (i != 1 && (j->used & 1u << i))
			jit_mov_imm(j, jit_map[i], 0);
	if (j->ctx_static) {	/* the unchecked reads need a context */
		jit_rr(j, true, 0x85, RDI, RDI);
		jit_jmp(j, CC_E, L_NOCTX(j));
	}
}

static void jit_epilogue(struct jit *j)
{
	static const uint8_t saved[] = { R15, R14, R13, R12, RBP, RBX };

	jit_bind(j, L_EXIT(j));
	jit_rm(j, true, 0x89, RAX, R12, OFF(ret), false);
	jit_mov_imm(j, RAX, 0);
	jit_bind(j, L_ERR(j));
	for (size_t i = 0; i < sizeof(saved); i++)
		jit_pop(j, saved[i]);
	jit_b(j, 0xc3);
}

static void jit_pass(struct jit *j)
{
	const struct hbpf_prog *p = j->p;
	size_t next;

	j->len = 0;
	for (size_t i = 0; i < j->nlab; i++)
		j->lab[i] = UNSET;
	jit_prologue(j);
	for (size_t pc = 0; pc < p->n;) {
		jit_bind(j, pc);
		if (j->leader[pc]) {
			if (j->in && j->seen[j->block[pc]])
				*j->cur = j->in[j->block[pc]];
			else		/* unreachable, or not analysed */
				jit_state_init(j, j->cur, false);
		}
		if (j->count && j->leader[pc]) {
			jit_mi(j, 5, R12, OFF(budget), (int32_t)j->blen[pc]);
			jit_jmp(j, CC_L, L_SHORT(j, pc));
		}
		next = pc + jit_insn(j, pc);
		jit_step(j, j->cur, &p->insns[pc]);
		pc = next;
	}
	jit_epilogue(j);
	for (int i = 0; i < 8; i++)
		if (j->chk_used[i])
			jit_chk_stub(j, i);
	if (j->call_used)
		jit_call_stub(j);
	if (j->lookup_used)
		jit_lookup_stub(j);
	if (j->count || j->ctx_static)
		jit_resume_stubs(j);
}

/* Blocks (for the budget), the registers read, whether r10 moves. */
static void jit_scan(struct jit *j)
{
	const struct hbpf_prog *p = j->p;
	const struct bpf_insn *v = p->insns;
	size_t start = 0;

	j->r10_fixed = true;
	j->used = 1;			/* r0: exit */
	j->leader[0] = 1;
	for (size_t pc = 0; pc < p->n; pc++) {
		uint8_t cls = BPF_CLASS(v[pc].code), op = BPF_OP(v[pc].code);

		j->used |= 1u << v[pc].dst_reg | 1u << v[pc].src_reg;
		if (v[pc].code == (BPF_LD | BPF_IMM | BPF_DW)) {
			pc++;
			continue;
		}
		if (cls == BPF_STX && BPF_MODE(v[pc].code) == BPF_ATOMIC &&
		    (v[pc].imm & BPF_FETCH) && v[pc].src_reg == BPF_REG_10)
			j->r10_fixed = false;
		if (cls != BPF_JMP && cls != BPF_JMP32)
			continue;
		if (op == BPF_CALL) {
			j->used |= 0x1e;	/* r1-r4: the helper's */
			continue;
		}
		if (pc + 1 < p->n)
			j->leader[pc + 1] = 1;
		if (op == BPF_EXIT)
			continue;
		j->leader[pc + 1 + v[pc].off] = 1;
		if (v[pc].off < 0)
			j->count = true;
	}
	for (size_t pc = 0, k = 0; pc <= p->n; pc++) {
		if (pc == p->n || (pc > start && j->leader[pc])) {
			j->blen[start] = k;
			start = pc;
			k = 0;
		}
		if (pc < p->n) {
			k++;
			if (v[pc].code == (BPF_LD | BPF_IMM | BPF_DW))
				pc++;
		}
	}
}

/* Emit until no label moves; the code of the last pass then. */
static int jit_emit(struct jit *j, char *err, size_t errlen)
{
	for (int pass = 0; pass < PASSES; pass++) {
		jit_pass(j);
		if (j->oom) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (!memcmp(j->lab, j->plab, j->nlab * sizeof(*j->lab)))
			return 0;
		memcpy(j->plab, j->lab, j->nlab * sizeof(*j->lab));
	}
	snprintf(err, errlen, "code layout did not settle");
	return -EAGAIN;
}

static int jit_map_code(struct hbpf_jit *jt, const struct jit *j,
			char *err, size_t errlen)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (j->len + pg - 1) / pg * pg;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		snprintf(err, errlen, "mmap: %s", strerror(errno));
		return -ENOMEM;
	}
	memcpy(m, j->buf, j->len);
	if (mprotect(m, len, PROT_READ | PROT_EXEC)) {
		snprintf(err, errlen, "mprotect: %s", strerror(errno));
		munmap(m, len);
		return -EPERM;
	}
	jt->code = m;
	jt->fn = (jit_fn)m;
	jt->len = j->len;
	jt->maplen = len;
	return 0;
}

/* Ours: the program's instructions and maps, which the interpreter's
 * way out and the helpers read for as long as the code lives. */
static struct hbpf_jit *jit_new(const struct hbpf_prog *p,
				const struct hbpf_ops *ops)
{
	size_t ni = p->n * sizeof(*p->insns);
	size_t nm = p->nmaps * sizeof(*p->maps);
	struct hbpf_jit *jt = calloc(1, sizeof(*jt) + ni + nm);
	struct bpf_insn *v;
	struct hbpf_map *m;

	if (!jt)
		return NULL;
	v = (struct bpf_insn *)(jt + 1);
	m = (struct hbpf_map *)((char *)v + ni);
	memcpy(v, p->insns, ni);
	if (nm)
		memcpy(m, p->maps, nm);
	jt->prog = *p;
	jt->prog.insns = v;
	jt->prog.maps = nm ? m : NULL;
	jt->ops = ops;
	return jt;
}

/*
 * Whether this process runs with user shadow stacks (CET): the check
 * stubs' error exits drop a return address, which one would fault on.
 * Read once, not at each program compiled (two threads read the same).
 */
static bool jit_shstk(void)
{
	static int known = -1;
	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
	char line[256];
	bool on = false;
	FILE *f;

	if (k >= 0)
		return k;
	f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "x86_Thread_features:", 20)) {
			on = strstr(line, "shstk") != NULL;
			break;
		}
	if (f)
		fclose(f);
	__atomic_store_n(&known, on, __ATOMIC_RELAXED);
	return on;
}

struct hbpf_jit *hbpf_jit_compile(const struct hbpf_prog *p,
				  const struct hbpf_ops *ops, char *err,
				  size_t errlen)
{
	static const struct hbpf_ops none;
	char why[160];
	struct hbpf_jit *jt = NULL;
	struct jit j = { 0 };

	if (!err || !errlen) {
		err = why;
		errlen = sizeof(why);
	}
	if (hbpf_verify(p, NULL, err, errlen))
		return NULL;
	if (jit_shstk()) {
		snprintf(err, errlen, "user shadow stacks are on");
		return NULL;
	}
	j.p = p;
	j.nlab = NLABELS(p->n);
	j.lab = malloc(j.nlab * sizeof(*j.lab));
	j.plab = malloc(j.nlab * sizeof(*j.plab));
	j.leader = calloc(p->n, 1);
	j.blen = calloc(p->n, sizeof(*j.blen));
	if (!j.lab || !j.plab || !j.leader || !j.blen) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < j.nlab; i++)
		j.plab[i] = UNSET;
	jit_scan(&j);
	j.block = malloc(p->n * sizeof(*j.block));
	j.cur = malloc(sizeof(*j.cur));
	if (!j.block || !j.cur || jit_flow(&j)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (jit_emit(&j, err, errlen))
		goto out;
	jt = jit_new(p, ops ? ops : &none);
	if (!jt) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (jit_map_code(jt, &j, err, errlen)) {
		free(jt);
		jt = NULL;
	}
out:
	free(j.buf);
	free(j.lab);
	free(j.plab);
	free(j.leader);
	free(j.blen);
	free(j.block);
	free(j.cur);
	free(j.in);
	free(j.seen);
	return jt;
}

#else	/* not x86-64 */

struct hbpf_jit *hbpf_jit_compile(const struct hbpf_prog *p,
				  const struct hbpf_ops *ops, char *err,
				  size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "the JIT is for x86-64 only");
	return NULL;
}

#endif

HBPF_HOT int hbpf_jit_run_on(const struct hbpf_jit *jt, void *arg,
			     const void *ctx, struct hbpf_memo *memo,
			     uint64_t *stack, uint64_t *ret)
{
	struct jit_ctx c;
	int e;

	c.budget = HBPF_BUDGET;
	c.ops = jt->ops;
	c.arg = arg;
	c.memo = memo;
	c.top = (uintptr_t)stack + HBPF_STACK;
	/* not the value ring: it is read only below nvals */
	c.r.p = &jt->prog;
	c.r.stack = (uint8_t *)stack;
	c.r.ctx = ctx;
	c.r.last = 0;
	c.r.lsize = 0;
	c.r.nvals = 0;
	e = jt->fn(&c, ctx);
	if (!e)
		*ret = c.ret;
	return e;
}

HBPF_HOT int hbpf_jit_run(const struct hbpf_jit *jt, void *arg, const void *ctx,
			  struct hbpf_memo *memo, uint64_t *ret)
{
	uint64_t stack[HBPF_STACK / 8];

	return hbpf_jit_run_on(jt, arg, ctx, memo, stack, ret);
}

size_t hbpf_jit_size(const struct hbpf_jit *jt)
{
	return jt->len;
}

void hbpf_jit_free(struct hbpf_jit *jt)
{
	if (!jt)
		return;
	if (jt->code)
		munmap(jt->code, jt->maplen);
	free(jt);
}
