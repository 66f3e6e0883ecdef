/* SPDX-License-Identifier: MIT */
/*
 * The lowering's analysis: passes in instruction order, repeated until
 * nothing changes (a jump back brings a loop's end state to its start;
 * values only ever widen, toward PK_MIXED, so this ends), that know for
 * each register whether it is a constant, a stack pointer at a known
 * offset, or a map value.  From it: constants the lowering needs (kernel
 * argument indexes), which memory accesses hit the stack at a constant
 * offset (then .local with a constant address, or a register), and which
 * 8-byte stack slots never have their address taken, so they can live in
 * registers.
 */
#include "compiler/ptx_lower_priv.h"

#include <errno.h>
#include <stdlib.h>

static struct pl_val mkval(int kind, int64_t v)
{
	return (struct pl_val){ .kind = (uint8_t)kind, .val = v };
}

static bool is_scalar(const struct pl_val *v)
{
	return v->kind == PK_CONST || v->kind == PK_SCALAR;
}

static bool is_stack(const struct pl_val *v)
{
	return v->kind == PK_STACK || v->kind == PK_STACK_ANY;
}

static struct pl_val meet(struct pl_val a, struct pl_val b)
{
	if (a.kind == PK_NONE)
		return b;
	if (b.kind == PK_NONE)
		return a;
	if (a.kind == b.kind && a.val == b.val)
		return a;
	if (is_scalar(&a) && is_scalar(&b))
		return mkval(PK_SCALAR, 0);
	if (is_stack(&a) && is_stack(&b))
		return mkval(PK_STACK_ANY, 0);
	/* NULL on one side of a lookup's check */
	if ((a.kind == PK_MAPV && is_scalar(&b)) ||
	    (b.kind == PK_MAPV && is_scalar(&a)))
		return mkval(PK_MAPV, 0);
	return mkval(PK_MIXED, 0);
}

/*
 * ST flows from instruction FROM into TO.  A change at or before FROM
 * (a jump back) needs another pass; later ones this pass still sees.
 */
static void flow(struct pl_ctx *c, size_t from, size_t to,
		 const struct pl_state *st)
{
	struct pl_state *d = &c->in[to];
	bool changed = false;

	if (!d->reached) {
		*d = *st;
		changed = true;
	}
	for (int r = 0; r < 11 && !changed; r++) {
		struct pl_val m = meet(d->r[r], st->r[r]);

		if (m.kind != d->r[r].kind || m.val != d->r[r].val)
			changed = true;
	}
	for (int r = 0; r < 11; r++)
		d->r[r] = meet(d->r[r], st->r[r]);
	if (changed && to <= from)
		c->changed = true;
}

const struct gt_dev_map *pl_map(const struct pl_ctx *c, int64_t id)
{
	for (int i = 0; i < c->nmaps; i++)
		if (c->maps[i].id == id)
			return &c->maps[i];
	return NULL;
}

static struct pl_val reg(const struct pl_state *st, int r)
{
	return r == BPF_REG_10 ? mkval(PK_STACK, 0) : st->r[r];
}

/* Stack bytes [OFF, OFF + LEN) are used; ESC: their address escapes. */
static void touch(struct pl_ctx *c, int64_t off, int64_t len, int flags)
{
	int64_t end = off + len;

	if (off < -PL_FRAME)
		off = -PL_FRAME;
	if (end > 0)
		end = 0;
	for (int64_t a = off & ~7ll; a < end; a += 8)
		c->slot[(a + PL_FRAME) / 8] |= (uint8_t)(PS_USED | flags);
}

/* A load or store of SIZE bytes at BASE + OFF. */
static void access(struct pl_ctx *c, const struct pl_val *base, int64_t off,
		   int size)
{
	int64_t a = base->val + off;

	if (base->kind == PK_STACK)
		touch(c, a, size, size == 8 && !(a & 7) ? 0 : PS_NARROW);
	else if (base->kind == PK_STACK_ANY || base->kind == PK_MIXED)
		c->unknown_stack = true;
}

/* V reaches the runtime as a buffer of LEN bytes (< 0: unknown). */
static void escape(struct pl_ctx *c, const struct pl_val *v, int64_t len)
{
	if (v->kind == PK_STACK)
		touch(c, v->val, len < 0 ? -v->val : len, PS_ESCAPED);
	else if (v->kind == PK_STACK_ANY || v->kind == PK_MIXED)
		c->unknown_stack = true;
}

static int size_of(uint8_t code)
{
	switch (BPF_SIZE(code)) {
	case BPF_B: return 1;
	case BPF_H: return 2;
	case BPF_W: return 4;
	default: return 8;
	}
}

static uint64_t fold(unsigned op, uint64_t a, uint64_t b, bool is64, bool *ok)
{
	unsigned sh = is64 ? 63 : 31;

	*ok = true;
	if (!is64) {
		a = (uint32_t)a;
		b = (uint32_t)b;
	}
	switch (op) {
	case BPF_ADD: a += b; break;
	case BPF_SUB: a -= b; break;
	case BPF_MUL: a *= b; break;
	case BPF_OR: a |= b; break;
	case BPF_AND: a &= b; break;
	case BPF_XOR: a ^= b; break;
	case BPF_LSH: a <<= b & sh; break;
	case BPF_RSH: a >>= b & sh; break;
	case BPF_DIV: a = b ? a / b : 0; break;
	case BPF_MOD: a = b ? a % b : a; break;
	case BPF_NEG: a = -a; break;
	default: *ok = false;
	}
	return is64 ? a : (uint32_t)a;
}

static void an_alu(struct pl_ctx *c, struct pl_state *st,
		   const struct bpf_insn *in)
{
	bool is64 = BPF_CLASS(in->code) == BPF_ALU64;
	bool x = BPF_SRC(in->code) == BPF_X;
	unsigned op = BPF_OP(in->code);
	struct pl_val *d = &st->r[in->dst_reg], s;
	uint64_t v;
	bool ok;

	if (x && in->src_reg == BPF_REG_10 && op != BPF_END)
		c->need_fp = true;
	s = x ? reg(st, in->src_reg) :
		mkval(PK_CONST, is64 ? (int64_t)in->imm : (uint32_t)in->imm);
	if (op == BPF_END) {
		*d = mkval(PK_SCALAR, 0);
		return;
	}
	if (op == BPF_MOV) {
		if (is64)
			*d = s;
		else
			*d = s.kind == PK_CONST ?
				mkval(PK_CONST, (uint32_t)s.val) :
				mkval(PK_SCALAR, 0);
		return;
	}
	if (is64 && (op == BPF_ADD || op == BPF_SUB) && s.kind == PK_CONST &&
	    (is_stack(d) || d->kind == PK_MAPV || d->kind == PK_MIXED)) {
		if (d->kind == PK_STACK)
			d->val += op == BPF_ADD ? s.val : -s.val;
		return;
	}
	if (is64 && op == BPF_ADD && d->kind == PK_CONST &&
	    (is_stack(&s) || s.kind == PK_MAPV || s.kind == PK_MIXED)) {
		int64_t k = d->val;

		*d = s;
		if (d->kind == PK_STACK)
			d->val += k;
		return;
	}
	if (d->kind == PK_CONST && (op == BPF_NEG || s.kind == PK_CONST)) {
		v = fold(op, (uint64_t)d->val, (uint64_t)s.val, is64, &ok);
		*d = ok ? mkval(PK_CONST, (int64_t)v) : mkval(PK_SCALAR, 0);
		return;
	}
	*d = mkval(PK_SCALAR, 0);
}

/* Length of the buffer helper argument A (r(A+1)) points to, or -1. */
static int64_t arg_len(const struct pl_ctx *c, const struct pl_state *st,
		       const struct gt_dev_helper_desc *h, int a)
{
	const struct gt_dev_map *m = NULL;

	if (st->r[BPF_REG_1].kind == PK_CONST)
		m = pl_map(c, st->r[BPF_REG_1].val);
	switch (h->args[a]) {
	case GT_DHA_KEY:
		return m ? m->key_size : -1;
	case GT_DHA_VALUE_PTR:
		return m ? m->value_size : -1;
	case GT_DHA_STACK_BUF:
		if (a < 4 && st->r[a + 2].kind == PK_CONST)
			return st->r[a + 2].val;
		return -1;
	default:
		return -1;
	}
}

static int an_call(struct pl_ctx *c, struct pl_state *st, size_t i)
{
	const struct bpf_insn *in = &c->insns[i];
	const struct gt_dev_helper_desc *h = gt_dev_helper(in->imm);

	if (!h || in->src_reg)
		return pl_fail(c, -EINVAL, i, "not a device helper call");
	for (int a = 0; a < 5 && h->args[a] != GT_DHA_NONE; a++)
		escape(c, &st->r[a + 1], arg_len(c, st, h, a));
	if (h->id == GT_DH_ARG) {
		const struct pl_val *r1 = &st->r[BPF_REG_1];

		if (r1->kind != PK_CONST)
			return pl_fail(c, -ENOTSUP, i, "kernel argument index "
				       "is not a constant");
		if (r1->val < 0 || r1->val > 1023)
			return pl_fail(c, -EINVAL, i, "kernel argument %lld "
				       "out of range", (long long)r1->val);
		if (r1->val + 1 > c->nargs)
			c->nargs = (int)r1->val + 1;
	}
	if (h->id == GT_DH_DURATION)
		c->uses_t0 = true;
	if (h->id == GT_DH_LAUNCH)
		c->words |= PL_W_LAUNCH;
	if (h->id == GT_DH_LAUNCH_NS)
		c->words |= PL_W_LAUNCH_NS;
	if (h->id == GT_DH_KERNEL || h->id == GT_DH_KERNEL_NAME)
		c->words |= PL_W_KERNEL;
	if (h->id == GT_DH_LANES)
		c->uses_lanes = true;
	if (h->id >= GT_DH_MEM_ADDR && h->id <= GT_DH_MEM_CONFLICTS)
		c->mem |= 1u << (h->id - GT_DH_MEM_ADDR);
	for (int r = BPF_REG_1; r <= BPF_REG_5; r++)
		st->r[r] = mkval(PK_NONE, 0);
	st->r[0] = mkval(h->ret == GT_DHR_MAP_VALUE_OR_NULL ? PK_MAPV :
			 h->ret == GT_DHR_VOID ? PK_NONE : PK_SCALAR, 0);
	return 0;
}

/* Whether a stack pointer / a map value pointer was stored to memory. */
struct an_spill {
	bool stack, mapv;
};

static int an_mem(struct pl_ctx *c, struct pl_state *st, size_t i,
		  struct an_spill *sp)
{
	const struct bpf_insn *in = &c->insns[i];
	int size = size_of(in->code);
	struct pl_val b, s;

	switch (BPF_CLASS(in->code)) {
	case BPF_LDX:
		b = reg(st, in->src_reg);
		access(c, &b, in->off, size);
		if (size == 8 && sp->stack)
			st->r[in->dst_reg] = mkval(PK_MIXED, 0);
		else if (size == 8 && sp->mapv)
			st->r[in->dst_reg] = mkval(PK_MAPV, 0);
		else
			st->r[in->dst_reg] = mkval(PK_SCALAR, 0);
		return 0;
	case BPF_ST:
		b = reg(st, in->dst_reg);
		access(c, &b, in->off, size);
		return 0;
	}
	b = reg(st, in->dst_reg);
	s = reg(st, in->src_reg);
	access(c, &b, in->off, size);
	if (in->src_reg == BPF_REG_10)
		c->need_fp = true;
	if (BPF_MODE(in->code) == BPF_ATOMIC) {
		if (in->imm & BPF_FETCH || in->imm == BPF_XCHG)
			st->r[in->src_reg] = mkval(PK_SCALAR, 0);
		if (in->imm == BPF_CMPXCHG)
			st->r[0] = mkval(PK_SCALAR, 0);
		return 0;
	}
	if (is_stack(&s) || s.kind == PK_MIXED)
		sp->stack = true;
	else if (s.kind == PK_MAPV)
		sp->mapv = true;
	return 0;
}

static int an_jmp(struct pl_ctx *c, struct pl_state *st, size_t i)
{
	const struct bpf_insn *in = &c->insns[i];
	unsigned op = BPF_OP(in->code);
	size_t t = i + 1 + in->off;

	if (op == BPF_CALL)
		return an_call(c, st, i);
	if (op == BPF_EXIT)
		return 0;
	if (op == BPF_JA && BPF_CLASS(in->code) == BPF_JMP32)
		return pl_fail(c, -EINVAL, i, "gotol is not supported");
	if ((int64_t)i + 1 + in->off < 0 || t >= c->n)
		return pl_fail(c, -EINVAL, i, "jump out of range");
	/* a loop: [t, i] holds every instruction of it (and maybe more) */
	for (size_t k = t; k <= i && t <= i; k++)
		c->in_loop[k] = c->has_loop = true;
	if (in->dst_reg == BPF_REG_10 ||
	    (BPF_SRC(in->code) == BPF_X && in->src_reg == BPF_REG_10))
		c->need_fp = true;
	c->target[t] = true;
	flow(c, i, t, st);
	return 0;
}

/* One pass over the program in instruction order. */
static int an_pass(struct pl_ctx *c, struct an_spill *sp)
{
	struct pl_state st;
	int err;

	for (size_t i = 0; i < c->n; i++) {
		const struct bpf_insn *in = &c->insns[i];
		size_t next = i + 1;

		if (!c->in[i].reached)
			continue;	/* ld_imm64's second half */
		st = c->in[i];
		switch (BPF_CLASS(in->code)) {
		case BPF_ALU:
		case BPF_ALU64:
			an_alu(c, &st, in);
			break;
		case BPF_LD:
			if (in->code != (BPF_LD | BPF_DW | BPF_IMM) ||
			    in->src_reg || i + 1 >= c->n)
				return pl_fail(c, -EINVAL, i, "unsupported "
					       "load 0x%02x", in->code);
			st.r[in->dst_reg] = mkval(PK_CONST, (int64_t)(
				(uint64_t)(uint32_t)in->imm |
				(uint64_t)(uint32_t)in[1].imm << 32));
			next = i + 2;
			break;
		case BPF_LDX:
		case BPF_ST:
		case BPF_STX:
			if ((err = an_mem(c, &st, i, sp)))
				return err;
			break;
		case BPF_JMP:
		case BPF_JMP32:
			if ((err = an_jmp(c, &st, i)))
				return err;
			if (BPF_OP(in->code) == BPF_EXIT ||
			    BPF_OP(in->code) == BPF_JA)
				next = c->n;	/* no fall-through */
			break;
		default:
			return pl_fail(c, -EINVAL, i, "invalid opcode 0x%02x",
				       in->code);
		}
		if (next < c->n)
			flow(c, i, next, &st);
	}
	return 0;
}

int pl_analyze(struct pl_ctx *c)
{
	struct an_spill sp = { false, false }, was;
	int err;

	c->in[0].reached = true;
	/*
	 * Until nothing changes (one pass without loops): what an
	 * instruction adds to the flags and slots only grows, so the last
	 * pass's state is what holds.  In a loop a load may also come after
	 * a spill later in the text: a pass that finds a spill goes again.
	 */
	do {
		c->changed = false;
		was = sp;
		if ((err = an_pass(c, &sp)))
			return err;
		if (c->has_loop && (sp.stack != was.stack || sp.mapv != was.mapv))
			c->changed = true;
	} while (c->changed);
	if (c->unknown_stack || sp.stack)
		touch(c, -PL_FRAME, PL_FRAME, PS_ESCAPED);
	if (c->unknown_stack || sp.stack)
		c->need_fp = true;
	if (c->opts->no_promote)
		for (int s = 0; s < PL_SLOTS; s++)
			if (c->slot[s])
				c->slot[s] |= PS_ESCAPED;
	for (int s = 0; s < PL_SLOTS; s++)
		if ((c->slot[s] & PS_USED) && !pl_promoted(c, s * 8 - PL_FRAME)
		    && c->frame < PL_FRAME - s * 8)
			c->frame = PL_FRAME - s * 8;
	return 0;
}

bool pl_promoted(const struct pl_ctx *c, int64_t off)
{
	uint8_t f;

	if (off < -PL_FRAME || off >= 0 || (off & 7))
		return false;
	f = c->slot[(off + PL_FRAME) / 8];
	return (f & PS_USED) && !(f & (PS_NARROW | PS_ESCAPED));
}
