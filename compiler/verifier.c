/* SPDX-License-Identifier: MIT */
/*
 * Device verifier: structure checks (jumps, reachability), then a depth
 * first walk over every path with one abstract state per path.  States
 * reaching a jump target are remembered; a later path arriving there with
 * a state that an earlier one covers is not walked again.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/bpf_disasm.h"
#include "compiler/verifier_priv.h"

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
};

struct seen {
	struct seen *next;
	struct vf_state st;
};

struct explorer {
	struct vf_state *todo;	/* paths waiting: the other side of branches */
	size_t ntodo, cap;
	struct seen **seen;	/* per instruction */
	uint8_t *nseen_at;	/* per instruction */
	size_t nseen;
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
	if (jump && s <= pc && s >= 0)
		return vf_fail(v, -EINVAL, "back-edge from insn %d to %lld "
			       "(loops must be unrolled)", pc, (long long)s);
	if (!jump && s >= (int64_t)v->n)
		return vf_fail(v, -EINVAL, "falls off the end of the program");
	if (s < 0 || s >= (int64_t)v->n)
		return vf_fail(v, -EINVAL, "jump out of range to insn %lld",
			       (long long)s);
	if (flags[s] & F_SECOND)
		return vf_fail(v, -EINVAL, "jump into the middle of ld_imm64 "
			       "at insn %lld", (long long)s - 1);
	flags[s] |= F_REACH | (jump ? F_TARGET : 0);
	return 0;
}

/*
 * Structure, independent of values: ld_imm64 pairs, every jump forward and
 * in range, nothing unreachable, no way to fall off the end.
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
	flags[0] |= F_REACH;
	for (pc = 0; pc < n && !err; pc++) {
		in = &v->insns[pc];
		v->err_pc = pc;
		if (flags[pc] & F_SECOND)
			continue;
		if (!(flags[pc] & F_REACH))
			return vf_fail(v, -EINVAL, "unreachable instruction");
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
	return err;
}

static bool eval_cond(unsigned op, uint64_t a, uint64_t b, bool is32)
{
	int64_t sa = (int64_t)a, sb = (int64_t)b;

	if (is32) {
		a = (uint32_t)a;
		b = (uint32_t)b;
		sa = (int32_t)a;
		sb = (int32_t)b;
	}
	switch (op) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	case BPF_JLT: return a < b;
	case BPF_JLE: return a <= b;
	case BPF_JSET: return a & b;
	case BPF_JSGT: return sa > sb;
	case BPF_JSGE: return sa >= sb;
	case BPF_JSLT: return sa < sb;
	default: return sa <= sb;	/* BPF_JSLE */
	}
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
	struct vf_state *eq;
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
		*jump = eval_cond(op, dst.val, src.val, is32);
		*fall = !*jump;
		return 0;
	}
	*fall = *jump = true;
	/* r == K tells us r on the equal side (64-bit compares only) */
	if (is32 || (op != BPF_JEQ && op != BPF_JNE))
		return 0;
	eq = op == BPF_JEQ ? jst : st;
	if (!dst.known)
		vf_set_scalar(&eq->regs[in->dst_reg], true, src.val);
	else if (x)
		vf_set_scalar(&eq->regs[in->src_reg], true, dst.val);
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
	struct vf_state *p;

	if (x->ntodo == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 16;
		p = realloc(x->todo, x->cap * sizeof(*p));
		if (!p)
			return vf_fail(v, -ENOMEM, "out of memory");
		x->todo = p;
	}
	x->todo[x->ntodo++] = *st;
	return 0;
}

/* True when an earlier path reached ST's instruction in a covering state. */
static bool prune(struct explorer *x, const struct vf_state *st)
{
	struct seen *s;

	for (s = x->seen[st->pc]; s; s = s->next)
		if (vf_state_covers(&s->st, st))
			return true;
	if (x->nseen < VF_MAX_SEEN && x->nseen_at[st->pc] < VF_MAX_SEEN_AT) {
		s = malloc(sizeof(*s));
		if (s) {
			s->st = *st;
			s->next = x->seen[st->pc];
			x->seen[st->pc] = s;
			x->nseen++;
			x->nseen_at[st->pc]++;
		}
	}
	return false;
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
			return vf_fail(v, -EACCES, "program too complex: more "
				       "than %d instructions explored",
				       VF_MAX_VISITS);
		if ((x->flags[st->pc] & F_TARGET) && prune(x, st)) {
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
			st->pc = (int)jump_target(in, st->pc);
		} else {
			if ((err = do_cond(v, st, &jst, &fall, &jump)))
				return err;
			from = st->pc;
			jst.pc = (int)jump_target(in, from);
			jst.from = from;
			st->pc = from + 1;
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
		st = x->todo[--x->ntodo];
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
		  FILE *walk, char *err, size_t errlen, struct bpf_insn *drop)
{
	struct vf_env v = {
		.insns = insns, .n = n, .maps = maps, .nmaps = nmaps,
		.clause = clause, .walk = walk, .err = err, .errlen = errlen,
	};
	struct explorer x = { 0 };
	struct seen *s, *next;
	size_t i;
	int ret;

	if (err && errlen)
		err[0] = '\0';
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
	if (!x.flags || !x.seen || !x.nseen_at)
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
	free(x.nseen_at);
	free(x.flags);
	free(x.todo);
	return ret;
}

int vf_verify(const struct bpf_insn *insns, size_t n,
	      const struct gt_dev_map *maps, int nmaps, const char *clause,
	      FILE *walk, char *err, size_t errlen)
{
	return verify(insns, n, maps, nmaps, clause, walk, err, errlen, NULL);
}

int vf_verify_drop(struct bpf_insn *insns, size_t n,
		   const struct gt_dev_map *maps, int nmaps, const char *clause,
		   FILE *walk, char *err, size_t errlen)
{
	return verify(insns, n, maps, nmaps, clause, walk, err, errlen, insns);
}
