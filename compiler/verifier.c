/* SPDX-License-Identifier: MIT */
/*
 * Device verifier: structure checks (jumps, reachability), then a depth
 * first walk over every path with one abstract state per path.  States
 * reaching a jump target are remembered; a later path arriving there with
 * a state that a finished one covers is not walked again.  Loops are
 * walked round by round, as the kernel does: a path that comes back to a
 * state its own earlier round covers could go round forever, and is
 * refused; the visit budget bounds the rest.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/bpf_disasm.h"
#include "compiler/verifier_priv.h"
#include "gpucode/hbpf.h"

/*
 * Remembered states, all jump targets together and at one target; beyond
 * that paths are just walked (the visit budget still bounds the work).
 */
#define VF_MAX_SEEN	8192
#define VF_MAX_SEEN_AT	32

enum {
	F_SECOND = 1,		/* second slot of an ld_imm64 */
	F_TARGET = 2,		/* a jump lands here: paths may join */
	F_REACH = 4,		/* some edge leads here */
	F_LIVE = 8,		/* some path of the walk reaches it */
	F_BACK = 16,		/* a jump to here or before it: a loop's end */
};

struct seen {
	struct seen *next;
	bool active;		/* on the path being walked: not finished */
	struct vf_state st;
};

/* A path waiting to be walked, and how many remembered states lead to it. */
struct todo {
	struct vf_state st;
	size_t depth;
};

struct explorer {
	struct todo *todo;	/* paths waiting: the other side of branches */
	size_t ntodo, cap;
	struct seen **seen;	/* per instruction */
	uint8_t *nseen_at;	/* per instruction */
	size_t nseen;
	/*
	 * Remembered states of the path being walked, oldest first: the
	 * ones whose exploration is not finished.  A state covered by one
	 * of them is a loop that may not end; covered by any other, it is
	 * safe to stop.
	 */
	struct seen **path;
	size_t npath;
	long visits;
	uint8_t *flags;
};

int vf_fail(struct vf_env *v, int ret, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (v->err && v->errlen) {
		k = snprintf(v->err, v->errlen, "%s: insn %d: ",
			     v->clause ? v->clause : "program", v->err_pc);
		if (k >= 0 && (size_t)k < v->errlen) {
			va_start(ap, fmt);
			vsnprintf(v->err + k, v->errlen - k, fmt, ap);
			va_end(ap);
		}
	}
	if (v->walk) {
		fprintf(v->walk, "insn %d: ", v->err_pc);
		va_start(ap, fmt);
		vfprintf(v->walk, fmt, ap);
		va_end(ap);
		fputc('\n', v->walk);
	}
	return ret;
}

static bool is_ld_imm64(const struct bpf_insn *in)
{
	return in->code == (BPF_LD | BPF_IMM | BPF_DW);
}

static bool is_jmp(const struct bpf_insn *in)
{
	return BPF_CLASS(in->code) == BPF_JMP ||
	       BPF_CLASS(in->code) == BPF_JMP32;
}

static bool is_cond_op(unsigned op)
{
	return op != BPF_JA && op != BPF_CALL && op != BPF_EXIT &&
	       op <= BPF_JSLE;
}

static int64_t jump_target(const struct bpf_insn *in, int pc)
{
	if (BPF_OP(in->code) == BPF_JA && BPF_CLASS(in->code) == BPF_JMP32)
		return (int64_t)pc + in->imm + 1;	/* gotol */
	return (int64_t)pc + in->off + 1;
}

/* Mark an edge from PC to S; JUMP when it is a jump, not a fall-through. */
static int add_edge(struct vf_env *v, uint8_t *flags, int pc, int64_t s,
		    bool jump)
{
	if (!jump && s >= (int64_t)v->n)
		return vf_fail(v, -EINVAL, "falls off the end of the program");
	if (s < 0 || s >= (int64_t)v->n)
		return vf_fail(v, -EINVAL, "jump out of range to insn %lld",
			       (long long)s);
	if (flags[s] & F_SECOND)
		return vf_fail(v, -EINVAL, "jump into the middle of ld_imm64 "
			       "at insn %lld", (long long)s - 1);
	flags[s] |= F_REACH | (jump ? F_TARGET : 0);
	if (jump && s <= pc)
		flags[pc] |= F_BACK;
	return 0;
}

/* Successors of the (well formed) instruction at PC; returns how many. */
static int succs(const struct vf_env *v, int pc, int out[2])
{
	const struct bpf_insn *in = &v->insns[pc];
	unsigned op = BPF_OP(in->code);

	if (is_ld_imm64(in)) {
		out[0] = pc + 2;
		return 1;
	}
	if (!is_jmp(in) || op == BPF_CALL) {
		out[0] = pc + 1;
		return 1;
	}
	if (op == BPF_EXIT)
		return 0;
	out[0] = (int)jump_target(in, pc);
	if (op == BPF_JA)
		return 1;
	out[1] = pc + 1;
	return 2;
}

/* Every instruction is on some path from the first (like the kernel). */
static int check_reach(struct vf_env *v, uint8_t *flags)
{
	int n = (int)v->n, *stack = malloc(n * sizeof(*stack));
	int sp = 0, next[2], k, pc;

	if (!stack)
		return vf_fail(v, -ENOMEM, "out of memory");
	for (pc = 0; pc < n; pc++)
		flags[pc] &= ~F_REACH;
	flags[0] |= F_REACH;
	stack[sp++] = 0;
	while (sp) {
		pc = stack[--sp];
		for (k = succs(v, pc, next); k-- > 0;)
			if (!(flags[next[k]] & F_REACH)) {
				flags[next[k]] |= F_REACH;
				stack[sp++] = next[k];
			}
	}
	free(stack);
	for (pc = 0; pc < n; pc++)
		if (!(flags[pc] & (F_REACH | F_SECOND))) {
			v->err_pc = pc;
			return vf_fail(v, -EINVAL, "unreachable instruction");
		}
	return 0;
}

/*
 * Structure, independent of values: ld_imm64 pairs, every jump in range,
 * nothing unreachable, no way to fall off the end.
 */
static int check_cfg(struct vf_env *v, uint8_t *flags)
{
	const struct bpf_insn *in;
	int pc, n = (int)v->n, err = 0;
	unsigned op;

	for (pc = 0; pc < n; pc++) {
		in = &v->insns[pc];
		if (!is_ld_imm64(in))
			continue;
		v->err_pc = pc;
		if (pc + 1 >= n)
			return vf_fail(v, -EINVAL, "ld_imm64 is missing its "
				       "second slot");
		in++;
		if (in->code || in->dst_reg || in->src_reg || in->off)
			return vf_fail(v, -EINVAL, "invalid ld_imm64 second "
				       "slot");
		flags[++pc] |= F_SECOND;
	}
	for (pc = 0; pc < n && !err; pc++) {
		in = &v->insns[pc];
		v->err_pc = pc;
		if (flags[pc] & F_SECOND)
			continue;
		/*
		 * Every instruction, walked or not, is lowered: no register
		 * number past r10 anywhere (the lowering indexes with it).
		 */
		if (in->dst_reg >= VF_NREGS ||
		    (in->src_reg >= VF_NREGS && !is_ld_imm64(in)))
			return vf_fail(v, -EINVAL, "invalid register r%d",
				       in->dst_reg >= VF_NREGS ? in->dst_reg :
				       in->src_reg);
		op = BPF_OP(in->code);
		if (is_ld_imm64(in)) {
			err = add_edge(v, flags, pc, pc + 2, false);
		} else if (!is_jmp(in) || op == BPF_CALL) {
			err = add_edge(v, flags, pc, pc + 1, false);
		} else if (op == BPF_JA) {
			err = add_edge(v, flags, pc, jump_target(in, pc), true);
		} else if (is_cond_op(op)) {
			err = add_edge(v, flags, pc, jump_target(in, pc), true);
			if (!err)
				err = add_edge(v, flags, pc, pc + 1, false);
		} else if (op != BPF_EXIT) {
			return vf_fail(v, -EINVAL, "invalid jump opcode 0x%02x",
				       in->code);
		}
	}
	return err ? err : check_reach(v, flags);
}

/*
 * A comparison involving a pointer: only ==/!= 0, which is how a lookup
 * result is null checked.  Every copy of the checked pointer learns the
 * outcome.
 */
static int ptr_cond(struct vf_env *v, struct vf_state *st, struct vf_state *jst,
		    const struct vf_reg *dst, const struct vf_reg *src,
		    bool *fall, bool *jump)
{
	const struct bpf_insn *in = &v->insns[st->pc];
	unsigned op = BPF_OP(in->code);
	struct vf_reg p = vf_is_ptr(dst) ? *dst : *src;
	const struct vf_reg *other = vf_is_ptr(dst) ? src : dst;
	struct vf_state *eq = op == BPF_JEQ ? jst : st;
	struct vf_state *ne = op == BPF_JEQ ? st : jst;

	if (BPF_CLASS(in->code) == BPF_JMP32)
		return vf_fail(v, -EACCES, "32-bit comparison of a pointer");
	if (vf_is_ptr(other))
		return vf_fail(v, -EACCES, "comparison between two pointers");
	if ((op != BPF_JEQ && op != BPF_JNE) || !vf_is_null(other))
		return vf_fail(v, -EACCES, "a pointer may only be compared "
			       "with == 0 or != 0");
	if (p.type == VT_MAP_VALUE_OR_NULL) {
		vf_mark_null(eq, p.id, true);
		vf_mark_null(ne, p.id, false);
		*fall = *jump = true;
		return 0;
	}
	/* other pointers are never NULL: only the != side is taken */
	*jump = op == BPF_JNE;
	*fall = op == BPF_JEQ;
	return 0;
}

/*
 * OP as an unsigned comparison of DST and SRC's bounds, or 0 when bounds
 * cannot decide it: 32-bit compares need values below 2^32, signed ones
 * values whose sign bit is clear, so that every order agrees.
 */
static unsigned unsigned_op(unsigned op, bool is32, const struct vf_reg *dst,
			    const struct vf_reg *src)
{
	uint64_t top = is32 ? UINT32_MAX : UINT64_MAX;
	bool sgn = op == BPF_JSGT || op == BPF_JSGE || op == BPF_JSLT ||
		   op == BPF_JSLE;

	if (op == BPF_JSET)
		return 0;
	if (sgn)
		top >>= 1;
	if (dst->umax > top || src->umax > top)
		return 0;
	switch (op) {
	case BPF_JSGT: return BPF_JGT;
	case BPF_JSGE: return BPF_JGE;
	case BPF_JSLT: return BPF_JLT;
	case BPF_JSLE: return BPF_JLE;
	default: return op;
	}
}

/* Is "A OP B" (unsigned) the same for every value in the bounds? */
static bool range_cond(unsigned op, const struct vf_reg *a,
		       const struct vf_reg *b, bool *res)
{
	bool t = false, f = false;

	switch (op) {
	case BPF_JEQ:
	case BPF_JNE:
		f = a->umax < b->umin || b->umax < a->umin;
		if (op == BPF_JNE) {
			t = f;
			f = false;
		}
		break;
	case BPF_JGT: t = a->umin > b->umax; f = a->umax <= b->umin; break;
	case BPF_JGE: t = a->umin >= b->umax; f = a->umax < b->umin; break;
	case BPF_JLT: t = a->umax < b->umin; f = a->umin >= b->umax; break;
	case BPF_JLE: t = a->umax <= b->umin; f = a->umin > b->umax; break;
	}
	*res = t;
	return t || f;
}

static unsigned negate(unsigned op)
{
	switch (op) {
	case BPF_JEQ: return BPF_JNE;
	case BPF_JNE: return BPF_JEQ;
	case BPF_JGT: return BPF_JLE;
	case BPF_JGE: return BPF_JLT;
	case BPF_JLT: return BPF_JGE;
	default: return BPF_JGT;	/* BPF_JLE */
	}
}

/* Narrow A and B (copies) to what "A OP B" (unsigned) leaves possible. */
static void narrow(unsigned op, struct vf_reg *a, struct vf_reg *b)
{
	uint64_t alo = a->umin, ahi = a->umax, blo = b->umin, bhi = b->umax;

	switch (op) {
	case BPF_JEQ:
		alo = blo = alo > blo ? alo : blo;
		ahi = bhi = ahi < bhi ? ahi : bhi;
		break;
	case BPF_JLT:
		if (bhi - 1 < ahi)
			ahi = bhi - 1;
		if (alo + 1 > blo)
			blo = alo + 1;
		break;
	case BPF_JLE:
		if (bhi < ahi)
			ahi = bhi;
		if (alo > blo)
			blo = alo;
		break;
	case BPF_JGT:
		narrow(BPF_JLT, b, a);
		return;
	case BPF_JGE:
		narrow(BPF_JLE, b, a);
		return;
	case BPF_JNE:		/* only a known value at an end of a range */
		if (b->known && alo == b->val && alo < ahi)
			alo++;
		else if (b->known && ahi == b->val && alo < ahi)
			ahi--;
		else if (a->known && blo == a->val && blo < bhi)
			blo++;
		else if (a->known && bhi == a->val && blo < bhi)
			bhi--;
		break;
	default:
		return;
	}
	/* an empty range means this side is never taken; keep it simple */
	if (alo <= ahi && blo <= bhi) {
		vf_set_range(a, alo, ahi);
		vf_set_range(b, blo, bhi);
	}
}

/* The registers of the 64-bit compare at ST's insn learn "dst OP src". */
static void learn(struct vf_state *st, const struct bpf_insn *in, unsigned op)
{
	struct vf_reg *a = &st->regs[in->dst_reg], b;

	if (BPF_SRC(in->code) == BPF_X) {
		narrow(op, a, &st->regs[in->src_reg]);
		return;
	}
	vf_set_scalar(&b, true, (uint64_t)(int64_t)in->imm);
	narrow(op, a, &b);
}

/*
 * Conditional jump at st->pc.  On return *FALL and *JUMP say which sides
 * can be taken; ST holds the fall-through state and JST the jump's.
 */
static int do_cond(struct vf_env *v, struct vf_state *st, struct vf_state *jst,
		   bool *fall, bool *jump)
{
	const struct bpf_insn *in = &v->insns[st->pc];
	bool is32 = BPF_CLASS(in->code) == BPF_JMP32;
	bool x = BPF_SRC(in->code) == BPF_X;
	unsigned op = BPF_OP(in->code);
	struct vf_reg dst, src;
	int regs[2] = { in->dst_reg, x ? in->src_reg : -1 };
	int i;

	if (x ? in->imm != 0 : in->src_reg != 0)
		return vf_fail(v, -EINVAL, "reserved field set in jump");
	for (i = 0; i < 2 && regs[i] >= 0; i++) {
		if (regs[i] >= VF_NREGS)
			return vf_fail(v, -EINVAL, "invalid register r%d",
				       regs[i]);
		if (st->regs[regs[i]].type == VT_NOT_INIT)
			return vf_fail(v, -EACCES, "R%d is not initialised",
				       regs[i]);
	}
	dst = st->regs[in->dst_reg];
	if (x)
		src = st->regs[in->src_reg];
	else
		vf_set_scalar(&src, true, is32 ? (uint32_t)in->imm :
					  (uint64_t)(int64_t)in->imm);
	*jst = *st;
	if (vf_is_ptr(&dst) || vf_is_ptr(&src))
		return ptr_cond(v, st, jst, &dst, &src, fall, jump);
	if (dst.known && src.known) {
		*jump = hbpf_cond(op, dst.val, src.val, is32);
		*fall = !*jump;
		return 0;
	}
	op = unsigned_op(op, is32, &dst, &src);
	if (op && range_cond(op, &dst, &src, jump)) {
		*fall = !*jump;
		return 0;
	}
	*fall = *jump = true;
	/* each side learns bounds (64-bit compares: 32 say nothing of r) */
	if (!op || is32 || (x && in->src_reg == in->dst_reg))
		return 0;
	learn(jst, in, op);
	learn(st, in, negate(op));
	return 0;
}

static int do_exit(struct vf_env *v, struct vf_state *st)
{
	const struct vf_reg *r0 = &st->regs[0];

	if (r0->type == VT_NOT_INIT)
		return vf_fail(v, -EACCES, "R0 is not initialised at exit");
	if (r0->type != VT_SCALAR)
		return vf_fail(v, -EACCES, "exit with a pointer in R0");
	return 0;
}

static int push(struct vf_env *v, struct explorer *x, const struct vf_state *st)
{
	struct todo *p;

	if (x->ntodo == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 16;
		p = realloc(x->todo, x->cap * sizeof(*p));
		if (!p)
			return vf_fail(v, -ENOMEM, "out of memory");
		x->todo = p;
	}
	x->todo[x->ntodo].st = *st;
	x->todo[x->ntodo++].depth = x->npath;
	return 0;
}

/*
 * The loop that took the path from OLD to CUR round: the outermost one
 * whose rounds differ between them.
 */
static int loop_between(const struct vf_state *old, const struct vf_state *cur)
{
	for (int i = 0; i < cur->nloops; i++)
		if (i >= old->nloops || old->loops[i].head != cur->loops[i].head ||
		    old->loops[i].trips != cur->loops[i].trips)
			return cur->loops[i].head;
	return cur->pc;
}

/*
 * True when a finished path reached ST's instruction in a covering state:
 * nothing new can happen from ST.  Equal to a state of its own path (an
 * earlier round of a loop), ST would go round forever: refused.
 */
static int prune(struct vf_env *v, struct explorer *x,
		 const struct vf_state *st)
{
	struct seen *s;

	for (s = x->seen[st->pc]; s; s = s->next) {
		if (!vf_state_covers(&s->st, st))
			continue;
		if (!s->active)
			return 1;
		/*
		 * An earlier round that covers this one proves nothing
		 * (bounds may still shrink to an exit: walk on), but the
		 * same state again would be walked the same way forever.
		 */
		if (!vf_state_covers(st, &s->st))
			continue;
		v->err_loop = loop_between(&s->st, st);
		return vf_fail(v, -EACCES, "loop at insn %d may never end: "
			       "a round comes back to insn %d in the state "
			       "of an earlier round (its exit condition "
			       "depends on a value the verifier cannot bound)",
			       v->err_loop, st->pc);
	}
	if (x->nseen < VF_MAX_SEEN && x->nseen_at[st->pc] < VF_MAX_SEEN_AT) {
		s = malloc(sizeof(*s));
		if (!s)
			return vf_fail(v, -ENOMEM, "out of memory");
		s->st = *st;
		s->active = true;
		s->next = x->seen[st->pc];
		x->seen[st->pc] = s;
		x->nseen++;
		x->nseen_at[st->pc]++;
		x->path[x->npath++] = s;
	}
	return 0;
}

/* The path goes back from TAIL to HEAD: one more round of that loop. */
static void round_trip(struct vf_state *st, int head, int tail)
{
	struct vf_loop *l;

	/* loops inside this one, or left behind, are done */
	while (st->nloops) {
		l = &st->loops[st->nloops - 1];
		if (l->head == head || (l->head < head && l->tail > tail))
			break;
		st->nloops--;
	}
	if (st->nloops && st->loops[st->nloops - 1].head == head) {
		st->loops[st->nloops - 1].trips++;
		return;
	}
	if (st->nloops == VF_LOOP_DEPTH)
		return;
	st->loops[st->nloops++] = (struct vf_loop){ .head = head,
						    .tail = tail, .trips = 1 };
}

/* The visit budget ran out: name the loop that took it, if any. */
static int too_complex(struct vf_env *v, const struct vf_state *st)
{
	const struct vf_loop *l = NULL;

	for (int i = 0; i < st->nloops; i++)
		if (!l || st->loops[i].trips > l->trips)
			l = &st->loops[i];
	if (!l)
		return vf_fail(v, -EACCES, "program too complex: more than %d "
			       "instructions explored", VF_MAX_VISITS);
	v->err_loop = l->head;
	if (l->forked)
		return vf_fail(v, -EACCES, "loop at insn %d is not bounded: "
			       "still going round after %d rounds and %d "
			       "instructions explored (its exit condition "
			       "depends on a value the verifier cannot bound)",
			       l->head, l->trips, VF_MAX_VISITS);
	return vf_fail(v, -EACCES, "loop at insn %d runs too long: more than "
		       "%d instructions explored (the bound on one run of a "
		       "probe) after %d rounds", l->head, VF_MAX_VISITS,
		       l->trips);
}

static void walk_insn(struct vf_env *v, int pc)
{
	char buf[128];

	bpf_insn_str(buf, sizeof(buf), &v->insns[pc],
		     pc + 1 < (int)v->n ? &v->insns[pc + 1] : NULL);
	fprintf(v->walk, "%d: %-36s ; ", pc, buf);
}

/* Walk one path from ST until it exits, is pruned or fails. */
static int walk_path(struct vf_env *v, struct explorer *x, struct vf_state *st)
{
	struct vf_state jst;
	const struct bpf_insn *in;
	bool fall = false, jump = false;
	unsigned op;
	int err, from;

	for (;;) {
		v->err_pc = st->pc;
		if (++x->visits > VF_MAX_VISITS)
			return too_complex(v, st);
		if ((x->flags[st->pc] & F_TARGET) && (err = prune(v, x, st))) {
			if (err < 0)
				return err;
			if (v->walk)
				fprintf(v->walk, "%d: safe\n", st->pc);
			return 0;
		}
		in = &v->insns[st->pc];
		op = BPF_OP(in->code);
		x->flags[st->pc] |= F_LIVE;
		if (v->walk)
			walk_insn(v, st->pc);
		if (!is_jmp(in) || op == BPF_CALL) {
			if (BPF_CLASS(in->code) == BPF_JMP32)
				return vf_fail(v, -EINVAL, "invalid opcode "
					       "0x%02x", in->code);
			if ((err = vf_do_insn(v, st)))
				return err;
			st->pc += is_ld_imm64(in) ? 2 : 1;
		} else if (op == BPF_EXIT) {
			if (BPF_CLASS(in->code) == BPF_JMP32)
				return vf_fail(v, -EINVAL, "invalid opcode "
					       "0x%02x", in->code);
			if ((err = do_exit(v, st)))
				return err;
			if (v->walk)
				vf_print_state(v->walk, v, st);
			return 0;
		} else if (op == BPF_JA) {
			from = st->pc;
			st->pc = (int)jump_target(in, from);
			if (st->pc <= from)
				round_trip(st, st->pc, from);
		} else {
			if ((err = do_cond(v, st, &jst, &fall, &jump)))
				return err;
			from = st->pc;
			jst.pc = (int)jump_target(in, from);
			jst.from = from;
			st->pc = from + 1;
			if (fall && jump) {
				for (int i = 0; i < st->nloops; i++)
					st->loops[i].forked = true;
				memcpy(jst.loops, st->loops, sizeof(st->loops));
			}
			if (jump && jst.pc <= from)
				round_trip(&jst, jst.pc, from);
			if (fall && jump) {
				if ((err = push(v, x, &jst)))
					return err;
			} else if (jump) {
				*st = jst;
			}
		}
		if (v->walk)
			vf_print_state(v->walk, v, st);
	}
}

static int explore(struct vf_env *v, struct explorer *x)
{
	struct vf_state st;
	int err;

	memset(&st, 0, sizeof(st));
	st.regs[BPF_REG_1].type = VT_CTX;
	st.regs[BPF_REG_10].type = VT_STACK;
	if (v->walk) {
		fprintf(v->walk, "0: ");
		vf_print_state(v->walk, v, &st);
	}
	if ((err = push(v, x, &st)))
		return err;
	while (x->ntodo) {
		x->ntodo--;
		st = x->todo[x->ntodo].st;
		/* what the path walked after this branch is finished */
		while (x->npath > x->todo[x->ntodo].depth)
			x->path[--x->npath]->active = false;
		if (v->walk && x->visits) {
			fprintf(v->walk, "from %d to %d: ", st.from, st.pc);
			vf_print_state(v->walk, v, &st);
		}
		if ((err = walk_path(v, x, &st)))
			return err;
	}
	return 0;
}

/*
 * Replace what no path reached with "ja +0": the walk proved nothing about
 * it (a store through an uninitialised register behind a branch never
 * taken), and the lowering emits every instruction.
 */
static int drop_dead(struct bpf_insn *insns, size_t n, const uint8_t *flags)
{
	const struct bpf_insn nop = { .code = BPF_JMP | BPF_JA };
	int ndead = 0;

	for (size_t i = 0; i < n; i++) {
		if (flags[i] & (F_LIVE | F_SECOND))
			continue;
		if (is_ld_imm64(&insns[i]) && i + 1 < n)
			insns[i + 1] = nop;
		insns[i] = nop;
		ndead++;
	}
	return ndead;
}

static int verify(const struct bpf_insn *insns, size_t n,
		  const struct gt_dev_map *maps, int nmaps, const char *clause,
		  FILE *walk, char *err, size_t errlen, struct bpf_insn *drop,
		  int *loop)
{
	struct vf_env v = {
		.insns = insns, .n = n, .maps = maps, .nmaps = nmaps,
		.clause = clause, .walk = walk, .err = err, .errlen = errlen,
		.err_loop = -1,
	};
	struct explorer x = { 0 };
	struct seen *s, *next;
	size_t i;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (loop)
		*loop = -1;
	if (n == 0)
		return vf_fail(&v, -EINVAL, "empty program");
	if (n > VF_MAX_INSNS)
		return vf_fail(&v, -EINVAL, "program too large: %zu "
			       "instructions (max %d)", n, VF_MAX_INSNS);
	if (nmaps < 0 || nmaps > INT16_MAX || (nmaps && !maps))
		return vf_fail(&v, -EINVAL, "bad map table");
	x.flags = calloc(n, 1);
	x.seen = calloc(n, sizeof(*x.seen));
	x.nseen_at = calloc(n, 1);
	x.path = calloc(VF_MAX_SEEN, sizeof(*x.path));
	if (!x.flags || !x.seen || !x.nseen_at || !x.path)
		ret = vf_fail(&v, -ENOMEM, "out of memory");
	else
		ret = check_cfg(&v, x.flags);
	if (!ret)
		ret = explore(&v, &x);
	if (walk && !ret)
		fprintf(walk, "verified: %ld instructions explored, %zu states "
			"kept\n", x.visits, x.nseen);
	if (drop && !ret) {
		int ndead = drop_dead(drop, n, x.flags);

		if (walk && ndead)
			fprintf(walk, "dropped %d instructions no path reaches\n",
				ndead);
	}
	for (i = 0; x.seen && i < n; i++)
		for (s = x.seen[i]; s; s = next) {
			next = s->next;
			free(s);
		}
	free(x.seen);
	free(x.path);
	free(x.nseen_at);
	free(x.flags);
	free(x.todo);
	if (loop && ret)
		*loop = v.err_loop;
	return ret;
}

int vf_verify(const struct bpf_insn *insns, size_t n,
	      const struct gt_dev_map *maps, int nmaps, const char *clause,
	      FILE *walk, char *err, size_t errlen)
{
	return verify(insns, n, maps, nmaps, clause, walk, err, errlen, NULL,
		      NULL);
}

int vf_verify_drop(struct bpf_insn *insns, size_t n,
		   const struct gt_dev_map *maps, int nmaps, const char *clause,
		   FILE *walk, char *err, size_t errlen, int *loop)
{
	return verify(insns, n, maps, nmaps, clause, walk, err, errlen, insns,
		      loop);
}
