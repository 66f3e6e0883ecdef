/* SPDX-License-Identifier: MIT */
/*
 * The lowering's code: one eBPF instruction at a time to PTX.  eBPF r0..r9
 * are %r0..%r9 (.b64), r10 is %fp (the generic address of the top of the
 * .local stack __gt_stk), promoted stack slots are %s<N>; %t*, %u* and %p*
 * are scratch.  Semantics follow the eBPF ISA: 32-bit ops zero-extend,
 * x / 0 = 0, x % 0 = x, shift amounts are masked to the width.
 */
#include "compiler/ptx_lower_priv.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>

#include "gpucode/devrt.h"

static const char *const rname[11] = {
	"%r0", "%r1", "%r2", "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r9",
	"%fp",
};

static const char *R(int r)
{
	return rname[r];
}

static const char *uty(int size)
{
	switch (size) {
	case 1: return "u8";
	case 2: return "u16";
	case 4: return "u32";
	default: return "u64";
	}
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

static struct pl_val base_of(const struct pl_ctx *c, size_t i, int r)
{
	if (r == BPF_REG_10)
		return (struct pl_val){ PK_STACK, 0 };
	return c->in[i].r[r];
}

/* ---- ALU ---- */

static void alu64(struct pl_ctx *c, const struct bpf_insn *in)
{
	struct pl_buf *b = &c->out;
	bool x = BPF_SRC(in->code) == BPF_X;
	const char *d = R(in->dst_reg);
	char s[24];

	if (x)
		snprintf(s, sizeof(s), "%s", R(in->src_reg));
	else
		snprintf(s, sizeof(s), "%" PRId64, (int64_t)in->imm);
	switch (BPF_OP(in->code)) {
	case BPF_ADD: pl_printf(b, "\tadd.s64 %s, %s, %s;\n", d, d, s); break;
	case BPF_SUB: pl_printf(b, "\tsub.s64 %s, %s, %s;\n", d, d, s); break;
	case BPF_MUL: pl_printf(b, "\tmul.lo.s64 %s, %s, %s;\n", d, d, s); break;
	case BPF_OR: pl_printf(b, "\tor.b64 %s, %s, %s;\n", d, d, s); break;
	case BPF_AND: pl_printf(b, "\tand.b64 %s, %s, %s;\n", d, d, s); break;
	case BPF_XOR: pl_printf(b, "\txor.b64 %s, %s, %s;\n", d, d, s); break;
	case BPF_MOV: pl_printf(b, "\tmov.b64 %s, %s;\n", d, s); break;
	case BPF_NEG: pl_printf(b, "\tneg.s64 %s, %s;\n", d, d); break;
	case BPF_LSH:
	case BPF_RSH:
	case BPF_ARSH: {
		const char *op = BPF_OP(in->code) == BPF_LSH ? "shl.b64" :
				 BPF_OP(in->code) == BPF_RSH ? "shr.b64" :
				 "shr.s64";

		if (x)
			pl_printf(b, "\tcvt.u32.u64 %%u0, %s;\n"
				  "\tand.b32 %%u0, %%u0, 63;\n"
				  "\t%s %s, %s, %%u0;\n", s, op, d, d);
		else
			pl_printf(b, "\t%s %s, %s, %d;\n", op, d, d,
				  in->imm & 63);
		break;
	}
	case BPF_DIV:
	case BPF_MOD: {
		bool div = BPF_OP(in->code) == BPF_DIV;

		if (!x) {
			/* eBPF: the immediate is sign-extended, then unsigned */
			if (!in->imm)
				pl_printf(b, div ? "\tmov.b64 %s, 0;\n" : "",
					  d);
			else
				pl_printf(b, "\t%s.u64 %s, %s, 0x%" PRIx64 ";\n",
					  div ? "div" : "rem", d, d,
					  (uint64_t)(int64_t)in->imm);
			break;
		}
		pl_printf(b, "\tsetp.eq.u64 %%p0, %s, 0;\n"
			  "\t%s.u64 %%t0, %s, %s;\n"
			  "\tselp.b64 %s, %s, %%t0, %%p0;\n",
			  s, div ? "div" : "rem", d, s, d, div ? "0" : d);
		break;
	}
	}
}

/* BPF_END: to little-endian truncates, to big-endian swaps bytes. */
static void alu_end(struct pl_ctx *c, const struct bpf_insn *in)
{
	struct pl_buf *b = &c->out;
	const char *d = R(in->dst_reg);

	if (BPF_SRC(in->code) == BPF_TO_LE) {
		if (in->imm < 64)
			pl_printf(b, "\tand.b64 %s, %s, %s;\n", d, d,
				  in->imm == 16 ? "0xffff" : "0xffffffff");
		return;
	}
	if (in->imm == 64) {
		pl_printf(b, "\tmov.b64 {%%u0, %%u1}, %s;\n"
			  "\tprmt.b32 %%u2, %%u0, 0, 0x0123;\n"
			  "\tprmt.b32 %%u3, %%u1, 0, 0x0123;\n"
			  "\tmov.b64 %s, {%%u3, %%u2};\n", d, d);
		return;
	}
	pl_printf(b, "\tcvt.u32.u64 %%u0, %s;\n"
		  "\tprmt.b32 %%u0, %%u0, 0, %s;\n"
		  "\tcvt.u64.u32 %s, %%u0;\n", d,
		  in->imm == 16 ? "0x4401" : "0x0123", d);
}

static void alu32(struct pl_ctx *c, const struct bpf_insn *in)
{
	struct pl_buf *b = &c->out;
	bool x = BPF_SRC(in->code) == BPF_X;
	unsigned op = BPF_OP(in->code);
	const char *d = R(in->dst_reg);
	const char *ins = NULL;
	char s[24];

	if (op == BPF_END) {
		alu_end(c, in);
		return;
	}
	if (x) {
		pl_printf(b, "\tcvt.u32.u64 %%u1, %s;\n", R(in->src_reg));
		snprintf(s, sizeof(s), "%%u1");
	} else {
		snprintf(s, sizeof(s), "%u", (uint32_t)in->imm);
	}
	if (op == BPF_MOV) {
		if (x)
			pl_printf(b, "\tcvt.u64.u32 %s, %%u1;\n", d);
		else
			pl_printf(b, "\tmov.b64 %s, %s;\n", d, s);
		return;
	}
	pl_printf(b, "\tcvt.u32.u64 %%u0, %s;\n", d);
	switch (op) {
	case BPF_ADD: ins = "add.s32"; break;
	case BPF_SUB: ins = "sub.s32"; break;
	case BPF_MUL: ins = "mul.lo.s32"; break;
	case BPF_OR: ins = "or.b32"; break;
	case BPF_AND: ins = "and.b32"; break;
	case BPF_XOR: ins = "xor.b32"; break;
	case BPF_NEG:
		pl_printf(b, "\tneg.s32 %%u0, %%u0;\n");
		break;
	case BPF_LSH:
	case BPF_RSH:
	case BPF_ARSH:
		ins = op == BPF_LSH ? "shl.b32" : op == BPF_RSH ? "shr.b32" :
		      "shr.s32";
		if (x)
			pl_printf(b, "\tand.b32 %%u1, %%u1, 31;\n");
		else
			snprintf(s, sizeof(s), "%u", (uint32_t)in->imm & 31);
		break;
	case BPF_DIV:
	case BPF_MOD:
		if (!x && !(uint32_t)in->imm) {
			if (op == BPF_DIV)
				pl_printf(b, "\tmov.b32 %%u0, 0;\n");
			break;
		}
		if (!x) {
			ins = op == BPF_DIV ? "div.u32" : "rem.u32";
			break;
		}
		pl_printf(b, "\tsetp.eq.u32 %%p0, %%u1, 0;\n"
			  "\t%s.u32 %%u2, %%u0, %%u1;\n"
			  "\tselp.b32 %%u0, %s, %%u2, %%p0;\n",
			  op == BPF_DIV ? "div" : "rem",
			  op == BPF_DIV ? "0" : "%u0");
		break;
	}
	if (ins)
		pl_printf(b, "\t%s %%u0, %%u0, %s;\n", ins, s);
	pl_printf(b, "\tcvt.u64.u32 %s, %%u0;\n", d);
}

/* ---- jumps ---- */

/* Does the program end at T: `exit`, or `r0 = K; exit`? */
static bool ends_at(const struct pl_ctx *c, size_t t)
{
	const struct bpf_insn *in = &c->insns[t];

	if (t < c->n && in->code == (BPF_ALU64 | BPF_MOV | BPF_K) &&
	    in->dst_reg == BPF_REG_0)
		in = &c->insns[++t];
	return t < c->n && in->code == (BPF_JMP | BPF_EXIT);
}

static int jump(struct pl_ctx *c, size_t i)
{
	static const char *const cmp[16] = {
		[BPF_JEQ >> 4] = "eq.u", [BPF_JNE >> 4] = "ne.u",
		[BPF_JGT >> 4] = "gt.u", [BPF_JGE >> 4] = "ge.u",
		[BPF_JLT >> 4] = "lt.u", [BPF_JLE >> 4] = "le.u",
		[BPF_JSGT >> 4] = "gt.s", [BPF_JSGE >> 4] = "ge.s",
		[BPF_JSLT >> 4] = "lt.s", [BPF_JSLE >> 4] = "le.s",
	};
	const struct bpf_insn *in = &c->insns[i];
	struct pl_buf *b = &c->out;
	bool is32 = BPF_CLASS(in->code) == BPF_JMP32;
	bool x = BPF_SRC(in->code) == BPF_X;
	unsigned op = BPF_OP(in->code);
	size_t t = i + 1 + in->off;
	const char *a = R(in->dst_reg);
	char s[24];

	if (op == BPF_JA) {
		pl_printf(b, "\tbra.uni $L%zu;\n", t);
		return 0;
	}
	if (op != BPF_JSET && !cmp[op >> 4])
		return pl_fail(c, -EINVAL, i, "invalid jump 0x%02x", in->code);
	if (x)
		snprintf(s, sizeof(s), "%s", R(in->src_reg));
	else if (is32)
		snprintf(s, sizeof(s), "%u", (uint32_t)in->imm);
	else
		snprintf(s, sizeof(s), "%" PRId64, (int64_t)in->imm);
	if (is32) {
		pl_printf(b, "\tcvt.u32.u64 %%u0, %s;\n", a);
		a = "%u0";
		if (x) {
			pl_printf(b, "\tcvt.u32.u64 %%u1, %s;\n", s);
			snprintf(s, sizeof(s), "%%u1");
		}
	}
	if (op == BPF_JSET)
		pl_printf(b, "\tand.b%d %s, %s, %s;\n"
			  "\tsetp.ne.u%d %%p0, %s, 0;\n",
			  is32 ? 32 : 64, is32 ? "%u2" : "%t0", a, s,
			  is32 ? 32 : 64, is32 ? "%u2" : "%t0");
	else
		pl_printf(b, "\tsetp.%s%d %%p0, %s, %s;\n", cmp[op >> 4],
			  is32 ? 32 : 64, a, s);
	/*
	 * Straight, a jump to the end (a filter: /threadIdx.x == 0/) need
	 * not branch: the lanes that take it skip every update after it,
	 * whose predicates all start from %pskip, and run the rest as
	 * no-ops.  A branch would diverge the warp at the kernel's start
	 * (stencil, bench/real (d): 1.09x with the branch).  `lanes` counts
	 * the lanes that run the clause: those keep the branch.
	 */
	if (c->straight && !c->uses_lanes && t > i && ends_at(c, t)) {
		pl_printf(b, "\tor.pred %%pskip, %%pskip, %%p0;\n");
		c->guarded = true;
		return 0;
	}
	pl_printf(b, "\t@%%p0 bra $L%zu;\n", t);
	return 0;
}

/* ---- helpers ---- */

static const char *const sreg[] = {
	[GT_DH_SMID - GT_DH_BASE] = "%smid",
	[GT_DH_NSMID - GT_DH_BASE] = "%nsmid",
	[GT_DH_WARPID - GT_DH_BASE] = "%warpid",
	[GT_DH_LANEID - GT_DH_BASE] = "%laneid",
	[GT_DH_CTAID_X - GT_DH_BASE] = "%ctaid.x",
	[GT_DH_CTAID_Y - GT_DH_BASE] = "%ctaid.y",
	[GT_DH_CTAID_Z - GT_DH_BASE] = "%ctaid.z",
	[GT_DH_TID_X - GT_DH_BASE] = "%tid.x",
	[GT_DH_TID_Y - GT_DH_BASE] = "%tid.y",
	[GT_DH_TID_Z - GT_DH_BASE] = "%tid.z",
	[GT_DH_NTID_X - GT_DH_BASE] = "%ntid.x",
	[GT_DH_NTID_Y - GT_DH_BASE] = "%ntid.y",
	[GT_DH_NTID_Z - GT_DH_BASE] = "%ntid.z",
	[GT_DH_NCTAID_X - GT_DH_BASE] = "%nctaid.x",
	[GT_DH_NCTAID_Y - GT_DH_BASE] = "%nctaid.y",
	[GT_DH_NCTAID_Z - GT_DH_BASE] = "%nctaid.z",
};

static int ctx_field(int id)
{
	switch (id) {
	case GT_DH_GPU: return DEVRT_CTX_GPU;
	case GT_DH_PID: return DEVRT_CTX_PID;
	default: return -1;
	}
}

/*
 * count(), hist() and smload() on a map without key, inline (no call:
 * these are most probes), on the SM's shard of gpucode/devrt.h's
 * layout: the one slot after the shard header, its words after the
 * state and live words; shard counts are powers of two.  count and hist:
 * lanes adding to the same word (for count, all of them) are one update
 * by the lowest of them (gpu:warp clauses run on one lane already);
 * hist's bucket is bpftrace 0.17's (0 below zero, 1 for zero, else
 * 2 + log2, at most 33).  smload: each active lane adds its value to its
 * SM's word (a warp is on one SM, so these updates are few and spread
 * over the SMs' words).  sum, in gpu:warp clauses only (one lane, no
 * lanes to combine): the value added, and the live word set for values
 * <= 0, since a total of 0 is still printed.  r4 is scratch: helpers
 * clobber r1-r5.
 */
enum agg_inline { AI_COUNT, AI_HIST, AI_SMLOAD, AI_SUM };

/*
 * %t0 = the shard to update, %u5 = the map's nwords (SMLOAD).  smload's
 * shards hold a word per SM: %u2 = %smid, and SM s adds to shard
 * s % DEVRT_SMLOAD_SHARDS (a line of its own; the hot words keep nwords
 * where other maps keep nshards - 1, so the count is the constant).
 * Other maps spread their updates so that warps running side by side hit
 * different shards (same address atomics serialize in L2): %u2 = the
 * thread's shard index (%psh: the splicer's %gt_shard, ctaid.x * 32 +
 * the warp's row in its block), computed once near the kernel's start:
 * read at an exit, where ptxas leaves them, its special registers lay on
 * the warp's last dependent chain.  The first DEVRT_HOT_MAPS maps are
 * addressed from the launch parameter's hot words, which cost no memory
 * access; others from their descriptor in the context.
 */
static void shard_addr(struct pl_ctx *c, int64_t map, bool smload)
{
	struct pl_buf *b = &c->out;
	int d = DEVRT_CTX_SIZE + (int)map * DEVRT_DESC_SIZE;
	int w = DEVRT_PW_HOT + 2 * (int)map;

	if (smload) {
		pl_printf(b, "\tmov.u32 %%u2, %%smid;\n");
	} else {
		c->words |= PL_W_SHARD;
		pl_printf(b, "\tcvt.u32.u64 %%u2, %%psh;\n");
	}
	if (map < DEVRT_HOT_MAPS) {
		c->words |= 3u << w;
		/* low half: shard_bytes; high: nshards - 1, or nwords */
		pl_printf(b, "\tmov.b64 {%%u4, %%u5}, %%pw%d;\n", w + 1);
		if (smload)
			pl_printf(b, "\tand.b32 %%u1, %%u2, %d;\n"
				  "\tmad.wide.u32 %%t0, %%u1, %%u4, %%pw%d;\n",
				  DEVRT_SMLOAD_SHARDS - 1, w);
		else
			pl_printf(b, "\tand.b32 %%u1, %%u2, %%u5;\n"
				  "\tmad.wide.u32 %%t0, %%u1, %%u4, %%pw%d;\n", w);
		return;
	}
	pl_printf(b, "\tld.global.nc.L1::evict_last.u32 %%u1, [%%pg+%d];\n"
		  "\tadd.u32 %%u1, %%u1, -1;\n"
		  "\tand.b32 %%u1, %%u2, %%u1;\n"
		  "\tld.global.nc.L1::evict_last.u64 %%t0, [%%pg+%d];\n"
		  "\tld.global.nc.L1::evict_last.u64 %%t1, [%%pg+%d];\n"
		  "\tcvt.u64.u32 %%r4, %%u1;\n"
		  "\tmad.lo.u64 %%t0, %%r4, %%t1, %%t0;\n",
		  d + (int)offsetof(struct devrt_map_desc, nshards),
		  d + (int)offsetof(struct devrt_map_desc, base),
		  d + (int)offsetof(struct devrt_map_desc, shard_bytes));
	if (smload)
		pl_printf(b, "\tld.global.nc.L1::evict_last.u32 %%u5, [%%pg+%d];\n",
			  d + (int)offsetof(struct devrt_map_desc, nwords));
}

/*
 * Add VAL to value word WORD of the slot whose shard ADDR holds.  In an
 * entry probe with opts->defer the add waits for the thread's exit: the
 * address and value stay in kernel-wide registers (%gt_d<probe>_<n>a,
 * v, and p: whether to add) and pl_func.flush, spliced before every exit,
 * adds them.  An entry probe's update then costs the kernel nothing
 * before its own memory accesses; map contents are the same once the
 * thread is done.  An update in a loop (insn I) may run several times
 * per call, and a deferred one keeps only its last: it is made at once.
 */
static void update(struct pl_ctx *c, size_t i, const char *addr, int word,
		   const char *val)
{
	struct pl_buf *b = &c->out;
	int k = c->opts->index, n = c->ndefer, off = DEVRT_LINE + 16 + 8 * word;

	if (!c->opts->defer || c->in_loop[i]) {
		pl_printf(b, "\t%sred.global.add.u64 [%s+%d], %s;\n",
			  c->uni ? "@!%pskip " : "", addr, off, val);
		return;
	}
	pl_printf(b, "\tadd.u64 %%gt_d%d_%da, %s, %d;\n"
		  "\tmov.b64 %%gt_d%d_%dv, %s;\n",
		  k, n, addr, off, k, n, val);
	/* straight: %p1 says whether this lane skips (agg0_inline) */
	if (c->straight)
		pl_printf(b, "\tnot.pred %%gt_d%d_%dp, %%p1;\n", k, n);
	else
		pl_printf(b, "\tmov.pred %%gt_d%d_%dp, 1;\n", k, n);
	c->ndefer++;
}

/*
 * Skip the update when "setp.CMP.u32 OPS" holds: straight, by or-ing it
 * into %p1 together with ACC (the predicate so far), else by a branch
 * to $Lc<I>.
 */
static void skip_if(struct pl_ctx *c, const char *cmp, const char *ops,
		    const char *acc, size_t i)
{
	if (c->straight)
		pl_printf(&c->out, "\tsetp.%s.or.u32 %%p1, %s, %s;\n", cmp, ops,
			  acc);
	else
		pl_printf(&c->out, "\tsetp.%s.u32 %%p1, %s;\n"
			  "\t@%%p1 bra $Lc%zu;\n", cmp, ops, i);
}

/*
 * hist's sum: the values %r3 of the lanes of group %u0 (those adding to
 * one bucket) added up into %r3 of its lowest lane, which makes the
 * group's update.  A scan over the lanes' ranks in the group, each step
 * adding the value of the lane S ranks up (devrt.cu's group_reduce);
 * redux.sync would be shorter but needs sm_80, and the probes are
 * spliced into kernels of any target.  Every lane of the group runs it
 * (before the leader is chosen); the sum's update is one more red per
 * group.
 */
static void group_sum(struct pl_ctx *c)
{
	struct pl_buf *b = &c->out;

	pl_printf(b, "\tmov.u32 %%u2, %%laneid;\n");
	for (int s = 1; s < 32; s <<= 1)
		pl_printf(b, "\tfns.b32 %%u1, %%u0, %%u2, %d;\n"
			  "\tsetp.lt.u32 %%p0, %%u1, 32;\n"
			  "\tselp.b32 %%u1, %%u1, %%u2, %%p0;\n"
			  "\tmov.b64 {%%u4, %%u5}, %%r3;\n"
			  "\tshfl.sync.idx.b32 %%u4, %%u4, %%u1, 31, %%u0;\n"
			  "\tshfl.sync.idx.b32 %%u5, %%u5, %%u1, 31, %%u0;\n"
			  "\tmov.b64 %%t1, {%%u4, %%u5};\n"
			  "\t@%%p0 add.u64 %%r3, %%r3, %%t1;\n", s + 1);
}

static void agg0_inline(struct pl_ctx *c, int64_t map, enum agg_inline k,
			size_t i)
{
	struct pl_buf *b = &c->out;

	if (k == AI_HIST)
		pl_printf(b, "\tbfind.u64 %%u3, %%r3;\n"
			  "\tadd.u32 %%u3, %%u3, 2;\n"
			  "\tmin.u32 %%u3, %%u3, %d;\n"
			  "\tsetp.lt.s64 %%p1, %%r3, 0;\n"
			  "\tselp.b32 %%u3, 0, %%u3, %%p1;\n",
			  DEVRT_HIST_BUCKETS - 1);
	/* straight: %p1 = this lane skips the update, nothing branches */
	if (c->straight)
		pl_printf(b, "\tmov.pred %%p1, %%pskip;\n");
	if (k == AI_SUM) {
		/* warp clauses only: the lane that runs it adds %r3 */
	} else if (k != AI_SMLOAD && c->opts->mode == PL_WARP) {
		pl_printf(b, "\tmov.b64 %%r0, 1;\n");
	} else if (k != AI_SMLOAD) {
		pl_printf(b, "\tactivemask.b32 %%u0;\n");
		/* after a filter, lanes that skip take no part: count's
		 * group is the lanes that go on, and hist's skippers match
		 * on a bucket of their own (-1; buckets are 0-33) */
		if (c->guarded && k == AI_COUNT)
			pl_printf(b, "\tvote.sync.ballot.b32 %%u0, !%%pskip, "
				  "%%u0;\n");
		if (c->guarded && k == AI_HIST)
			pl_printf(b, "\tselp.b32 %%u4, -1, %%u3, %%pskip;\n"
				  "\tmatch.any.sync.b32 %%u0, %%u4, %%u0;\n");
		else if (k == AI_HIST)
			pl_printf(b, "\tmatch.any.sync.b32 %%u0, %%u3, %%u0;\n");
		if (k == AI_HIST && c->opts->hist_sum)
			group_sum(c);
		pl_printf(b, "\tbrev.b32 %%u1, %%u0;\n"
			  "\tbfind.shiftamt.u32 %%u1, %%u1;\n"
			  "\tmov.u32 %%u2, %%laneid;\n");
		skip_if(c, "ne", "%u2, %u1", "%pskip", i);
		pl_printf(b, "\tpopc.b32 %%u0, %%u0;\n"
			  "\tcvt.u64.u32 %%r0, %%u0;\n");
	}
	shard_addr(c, map, k == AI_SMLOAD);
	/* no live flag: a nonzero word says the map was updated
	 * (devrt_map_foreach), and the update is the only memory access */
	switch (k) {
	case AI_COUNT:
		update(c, i, "%t0", 0, "%r0");
		break;
	case AI_HIST:
		pl_printf(b, "\tmul.wide.u32 %%t1, %%u3, 8;\n");
		if (!c->opts->hist_sum) {
			pl_printf(b, "\tadd.u64 %%t0, %%t0, %%t1;\n");
			update(c, i, "%t0", 0, "%r0");
			break;
		}
		/* the bucket, then the sum word after the buckets (%r3: the
		 * group's values added up) */
		pl_printf(b, "\tadd.u64 %%t1, %%t0, %%t1;\n");
		update(c, i, "%t1", 0, "%r0");
		update(c, i, "%t0", DEVRT_HIST_BUCKETS, "%r3");
		break;
	case AI_SUM:
		/* the live word, only for a value <= 0: a total that only
		 * positive values made is nonzero, which says the same
		 * (devrt_host.c); a store by every warp to one word cost a
		 * stencil 1.34x */
		if (c->straight)
			pl_printf(b, "\tsetp.gt.or.s64 %%p0, %%r3, 0, %%p1;\n");
		else if (c->uni)
			pl_printf(b, "\tsetp.gt.or.s64 %%p0, %%r3, 0, %%pskip;\n");
		else
			pl_printf(b, "\tsetp.gt.s64 %%p0, %%r3, 0;\n");
		pl_printf(b, "\t@!%%p0 st.global.u64 [%%t0+%d], 1;\n",
			  DEVRT_LINE + 8);
		update(c, i, "%t0", 0, "%r3");
		break;
	case AI_SMLOAD:
		/* its words are per SM: word smid, if the map has that many */
		skip_if(c, "ge", "%u2, %u5", "%p1", i);
		pl_printf(b, "\tmul.wide.u32 %%t1, %%u2, 8;\n"
			  "\tadd.u64 %%t0, %%t0, %%t1;\n");
		update(c, i, "%t0", 0, "%r3");
		break;
	}
	pl_printf(b, "$Lc%zu:\n", i);
}

/*
 * A gpu:mem clause (c->uni): the 64-bit register REG of the elected lane
 * into every lane, for values a lane reads for itself (an atomic's
 * result, a clock) that must agree across the lanes running the clause.
 */
static void bcast(struct pl_ctx *c, const char *reg)
{
	if (!c->uni)
		return;
	pl_printf(&c->out, "\tmov.b64 {%%u4, %%u5}, %s;\n"
		  "\tshfl.sync.idx.b32 %%u4, %%u4, %%plead, 31, %%pmsk;\n"
		  "\tshfl.sync.idx.b32 %%u5, %%u5, %%plead, 31, %%pmsk;\n"
		  "\tmov.b64 %s, {%%u4, %%u5};\n", reg, reg);
}

static int call(struct pl_ctx *c, size_t i)
{
	const struct bpf_insn *in = &c->insns[i];
	struct pl_buf *b = &c->out;
	int id = in->imm, off = ctx_field(id);

	if (id >= GT_DH_SMID && id <= GT_DH_NCTAID_Z && id != GT_DH_LANES) {
		pl_printf(b, "\tmov.u32 %%u0, %s;\n", sreg[id - GT_DH_BASE]);
		/* a lane's own: the elected lane's in all */
		if (c->uni && (id == GT_DH_LANEID || (id >= GT_DH_TID_X &&
						      id <= GT_DH_TID_Z)))
			pl_printf(b, "\tshfl.sync.idx.b32 %%u0, %%u0, %%plead, "
				  "31, %%pmsk;\n");
		pl_printf(b, "\tcvt.u64.u32 %%r0, %%u0;\n");
		return 0;
	}
	if (off >= 0) {
		pl_printf(b, "\tld.global.u64 %%r0, [%%pg+%d];\n", off);
		return 0;
	}
	switch (id) {
	case GT_DH_LAUNCH:
		pl_printf(b, "\tmov.b64 %%r0, %%pw1;\n");
		return 0;
	case GT_DH_LAUNCH_NS:
		pl_printf(b, "\tmov.b64 %%r0, %%pw2;\n");
		return 0;
	case GT_DH_KERNEL:
		pl_printf(b, "\tmov.b64 %%r0, %%pw3;\n");
		return 0;
	case GT_DH_KERNEL_NAME:
		/* 64 bytes from the context's name table, at the kernel id */
		pl_printf(b, "\tld.global.u64 %%t0, [%%pg+%d];\n"
			  "\tsetp.eq.u64 %%p0, %%t0, 0;\n"
			  "\t@%%p0 bra $Lkn%zu;\n"
			  "\tmad.lo.u64 %%t0, %%pw3, %d, %%t0;\n",
			  DEVRT_CTX_NAMES, i, DEVRT_NAME_BYTES);
		for (int k = 0; k < DEVRT_NAME_BYTES; k += 8)
			pl_printf(b, "\tld.global.u64 %%t1, [%%t0+%d];\n"
				  "\tst.u64 [%%r1+%d], %%t1;\n", k, k);
		pl_printf(b, "$Lkn%zu:\n", i);
		return 0;
	case GT_DH_LANES:
		if (c->opts->mode == PL_WARP)
			pl_printf(b, "\tmov.b64 %%r0, %%plan;\n");
		else
			pl_printf(b, "\tactivemask.b32 %%u0;\n"
				  "\tpopc.b32 %%u0, %%u0;\n"
				  "\tcvt.u64.u32 %%r0, %%u0;\n");
		return 0;
	case GT_DH_GTIME:
		pl_printf(b, "\tmov.u64 %%r0, %%globaltimer;\n");
		bcast(c, "%r0");
		return 0;
	case GT_DH_CLOCK:
		pl_printf(b, "\tmov.u64 %%r0, %%clock64;\n");
		bcast(c, "%r0");
		return 0;
	case GT_DH_DURATION:
		/* low 32 bits of both times: exact below 4.29 s */
		pl_printf(b, "\tsub.s64 %%r0, %%pte, %%pt0;\n"
			  "\tand.b64 %%r0, %%r0, 4294967295;\n");
		return 0;
	case GT_DH_ARG:
		pl_printf(b, "\tmov.b64 %%r0, %%pa%" PRId64 ";\n",
			  c->in[i].r[BPF_REG_1].val);
		return 0;
	case GT_DH_MAP_LOOKUP:
		pl_printf(b, "\tcall (%%r0), __gt_rt_lookup, "
			  "(%%pctx, %%r1, %%r2);\n");
		return 0;
	case GT_DH_MAP_UPDATE:
		pl_printf(b, "\tcall __gt_rt_update%s, "
			  "(%%pctx, %%r1, %%r2, %%r3);\n", c->uni ? "_u" : "");
		return 0;
	case GT_DH_MAP_DELETE:
		pl_printf(b, "\tcall __gt_rt_delete, (%%pctx, %%r1, %%r2);\n");
		return 0;
	case GT_DH_PRINTF:
		pl_printf(b, "\tcall __gt_rt_printf%s, "
			  "(%%pctx, %%r1, %%r2, %%r3);\n", c->uni ? "_u" : "");
		return 0;
	case GT_DH_READ:
		pl_printf(b, "\tcall __gt_rt_read%s, "
			  "(%%pctx, %%r1, %%r2, %%r3);\n", c->uni ? "_u" : "");
		return 0;
	}
	if (id >= GT_DH_MEM_ADDR && id <= GT_DH_MEM_CONFLICTS) {
		/* inline: the splicer's value at the instruction */
		pl_printf(b, "\tld.param.u64 %%r0, [__gt_pm%s];\n",
			  pl_mem_names[id - GT_DH_MEM_ADDR]);
		return 0;
	}
	if (id >= GT_DH_AGG_COUNT && id <= GT_DH_AGG_SMLOAD) {
		const struct pl_val *r1 = &c->in[i].r[BPF_REG_1];
		const struct gt_dev_map *m = NULL;
		const char *val = id == GT_DH_AGG_COUNT ? "0" : "%r3";
		int op = DEVRT_OP_COUNT + (id - GT_DH_AGG_COUNT);

		if (c->opts->hist_sum &&
		    (id == GT_DH_AGG_HIST || id == GT_DH_AGG_LHIST))
			op |= DEVRT_OP_F_SUM;

		if (r1->kind == PK_CONST)
			m = pl_map(c, r1->val);
		if (m && m->per_kernel && id != GT_DH_AGG_COUNT &&
		    id != GT_DH_AGG_HIST)
			return pl_fail(c, -EINVAL, i, "map %d is kept per "
				       "kernel: count() and hist() only",
				       m->id);
		/* per kernel: the launch's hot words address its slot */
		if (m && (!m->key_size || m->per_kernel) &&
		    (id == GT_DH_AGG_COUNT || id == GT_DH_AGG_HIST ||
		     id == GT_DH_AGG_SMLOAD)) {
			agg0_inline(c, r1->val, id == GT_DH_AGG_COUNT ? AI_COUNT :
				    id == GT_DH_AGG_HIST ? AI_HIST : AI_SMLOAD, i);
			return 0;
		}
		/* a warp clause's sum: one lane, nothing to combine (the
		 * call cost a stencil's warp-exit sum(duration) 1.78x) */
		if (m && !m->key_size && id == GT_DH_AGG_SUM &&
		    c->opts->mode == PL_WARP) {
			agg0_inline(c, r1->val, AI_SUM, i);
			return 0;
		}
		/* one elected lane runs a warp clause: nothing to combine,
		 * and no warp-synchronous instruction on its path; a
		 * gpu:mem clause's lanes all call, one updates */
		if (c->uni)
			op |= DEVRT_OP_F_UNI;
		else if (c->opts->mode == PL_WARP)
			op |= DEVRT_OP_F_ONE;
		/* smaller entries for maps without key or with a one-word
		 * key: fewer registers in the instrumented kernel */
		if (m && !m->key_size)
			pl_printf(b, "\tcall __gt_rt_agg0, (%%pctx, %%r1, %s, "
				  "%d);\n", val, op);
		else if (m && m->key_size <= 8)
			pl_printf(b, "\tcall __gt_rt_agg8, (%%pctx, %%r1, %%r2, "
				  "%s, %d);\n", val, op);
		else
			pl_printf(b, "\tcall __gt_rt_agg, (%%pctx, %%r1, %%r2, "
				  "%s, %d);\n", val, op);
		return 0;
	}
	return pl_fail(c, -EINVAL, i, "helper %d has no lowering", id);
}

/* ---- memory ---- */

/* The stack operand for offset OFF: a register or a .local address. */
static void stack_at(const struct pl_ctx *c, int64_t off, char *s, size_t n)
{
	if (pl_promoted(c, off))
		snprintf(s, n, "%%s%d", (int)((off + PL_FRAME) / 8));
	else
		snprintf(s, n, "[__gt_stk+%d]", (int)(c->frame + off));
}

static void ldx(struct pl_ctx *c, size_t i)
{
	const struct bpf_insn *in = &c->insns[i];
	struct pl_val bv = base_of(c, i, in->src_reg);
	int size = size_of(in->code);
	const char *d = R(in->dst_reg);
	char a[40];

	if (bv.kind == PK_STACK) {
		stack_at(c, bv.val + in->off, a, sizeof(a));
		if (a[0] == '%')
			pl_printf(&c->out, "\tmov.b64 %s, %s;\n", d, a);
		else
			pl_printf(&c->out, "\tld.local.%s %s, %s;\n", uty(size),
				  d, a);
		return;
	}
	/* map values: generic addresses from the runtime */
	pl_printf(&c->out, "\tld.%s %s, [%s+%d];\n", uty(size), d,
		  R(in->src_reg), in->off);
}

static void store(struct pl_ctx *c, size_t i, const char *val)
{
	const struct bpf_insn *in = &c->insns[i];
	struct pl_val bv = base_of(c, i, in->dst_reg);
	int size = size_of(in->code);
	char a[40];

	if (bv.kind == PK_STACK) {
		stack_at(c, bv.val + in->off, a, sizeof(a));
		if (a[0] == '%')
			pl_printf(&c->out, "\tmov.b64 %s, %s;\n", a, val);
		else
			pl_printf(&c->out, "\tst.local.%s %s, %s;\n", uty(size),
				  a, val);
		return;
	}
	pl_printf(&c->out, "\tst.%s [%s+%d], %s;\n", uty(size),
		  R(in->dst_reg), in->off, val);
}

/*
 * An atomic on the stack: the stack is the thread's own, so a plain
 * read-modify-write of %t1 does it.
 */
static void atomic_stack(struct pl_ctx *c, size_t i, const char *a)
{
	const struct bpf_insn *in = &c->insns[i];
	struct pl_buf *b = &c->out;
	int size = size_of(in->code), op = in->imm & ~BPF_FETCH;
	const char *s = R(in->src_reg);
	bool reg = a[0] == '%';

	if (reg)
		pl_printf(b, "\tmov.b64 %%t1, %s;\n", a);
	else
		pl_printf(b, "\tld.local.%s %%t1, %s;\n", uty(size), a);
	if (in->imm == BPF_CMPXCHG) {
		if (size == 4)
			pl_printf(b, "\tcvt.u32.u64 %%u0, %%r0;\n"
				  "\tcvt.u32.u64 %%u1, %%t1;\n"
				  "\tsetp.eq.u32 %%p0, %%u0, %%u1;\n");
		else
			pl_printf(b, "\tsetp.eq.u64 %%p0, %%r0, %%t1;\n");
		pl_printf(b, "\tselp.b64 %%t0, %s, %%t1, %%p0;\n", s);
	} else if (in->imm == BPF_XCHG) {
		pl_printf(b, "\tmov.b64 %%t0, %s;\n", s);
	} else {
		const char *ins = op == BPF_ADD ? "add.s64" :
				  op == BPF_OR ? "or.b64" :
				  op == BPF_AND ? "and.b64" : "xor.b64";

		pl_printf(b, "\t%s %%t0, %%t1, %s;\n", ins, s);
	}
	if (reg)
		pl_printf(b, "\tmov.b64 %s, %%t0;\n", a);
	else
		pl_printf(b, "\tst.local.%s %s, %%t0;\n", uty(size), a);
	if (in->imm == BPF_CMPXCHG)
		pl_printf(b, "\tmov.b64 %%r0, %%t1;\n");
	else if (in->imm & BPF_FETCH)
		pl_printf(b, "\tmov.b64 %s, %%t1;\n", s);
}

static int atomic(struct pl_ctx *c, size_t i)
{
	const struct bpf_insn *in = &c->insns[i];
	struct pl_val bv = base_of(c, i, in->dst_reg);
	struct pl_buf *b = &c->out;
	int size = size_of(in->code), op = in->imm & ~BPF_FETCH;
	bool w = size == 4, fetch = in->imm & BPF_FETCH;
	const char *s = R(in->src_reg), *aop;
	/* a gpu:mem clause's lanes all come here: the elected one updates */
	const char *pred = c->uni ? "@!%pskip " : "";
	char a[48];

	if (size != 4 && size != 8)
		return pl_fail(c, -EINVAL, i, "atomic of %d bytes", size);
	if (bv.kind == PK_STACK) {
		stack_at(c, bv.val + in->off, a, sizeof(a));
		atomic_stack(c, i, a);
		return 0;
	}
	if (bv.kind == PK_STACK_ANY || bv.kind == PK_MIXED)
		return pl_fail(c, -ENOTSUP, i, "atomic through a pointer that "
			       "may point to the stack or to a map value");
	/* a map value: generic atomics (the runtime hands out generic
	 * addresses) */
	snprintf(a, sizeof(a), "[%s+%d]", R(in->dst_reg), in->off);
	if (w)
		pl_printf(b, "\tcvt.u32.u64 %%u1, %s;\n", s);
	if (in->imm == BPF_CMPXCHG) {
		if (w)
			pl_printf(b, "\tcvt.u32.u64 %%u0, %%r0;\n"
				  "\t%satom.cas.b32 %%u2, %s, %%u0, %%u1;\n"
				  "\tcvt.u64.u32 %%r0, %%u2;\n", pred, a);
		else
			pl_printf(b, "\t%satom.cas.b64 %%r0, %s, %%r0, %s;\n",
				  pred, a, s);
		bcast(c, "%r0");
		return 0;
	}
	if (in->imm == BPF_XCHG)
		aop = "exch.b";
	else if (op == BPF_ADD)
		aop = "add.u";
	else if (op == BPF_OR)
		aop = "or.b";
	else if (op == BPF_AND)
		aop = "and.b";
	else if (op == BPF_XOR)
		aop = "xor.b";
	else
		return pl_fail(c, -EINVAL, i, "invalid atomic 0x%x", in->imm);
	if (!fetch && in->imm != BPF_XCHG) {
		pl_printf(b, "\t%sred.%s%d %s, %s;\n", pred, aop, w ? 32 : 64,
			  a, w ? "%u1" : s);
		return 0;
	}
	if (w)
		pl_printf(b, "\t%satom.%s32 %%u2, %s, %%u1;\n"
			  "\tcvt.u64.u32 %s, %%u2;\n", pred, aop, a, s);
	else
		pl_printf(b, "\t%satom.%s64 %s, %s, %s;\n", pred, aop, s, a, s);
	bcast(c, s);
	return 0;
}

int pl_emit_insn(struct pl_ctx *c, size_t i)
{
	const struct bpf_insn *in = &c->insns[i];
	char v[32];

	switch (BPF_CLASS(in->code)) {
	case BPF_ALU64:
		if (BPF_OP(in->code) == BPF_END)
			return pl_fail(c, -EINVAL, i, "bswap (cpu v4)");
		alu64(c, in);
		return 0;
	case BPF_ALU:
		alu32(c, in);
		return 0;
	case BPF_LD:
		pl_printf(&c->out, "\tmov.b64 %s, 0x%" PRIx64 ";\n",
			  R(in->dst_reg), (uint64_t)(uint32_t)in->imm |
			  (uint64_t)(uint32_t)in[1].imm << 32);
		return 0;
	case BPF_LDX:
		if (BPF_MODE(in->code) != BPF_MEM)
			break;
		ldx(c, i);
		return 0;
	case BPF_ST:
		if (BPF_MODE(in->code) != BPF_MEM)
			break;
		snprintf(v, sizeof(v), "%%t0");
		pl_printf(&c->out, "\tmov.b64 %%t0, %" PRId64 ";\n",
			  (int64_t)in->imm);
		store(c, i, v);
		return 0;
	case BPF_STX:
		if (BPF_MODE(in->code) == BPF_ATOMIC)
			return atomic(c, i);
		if (BPF_MODE(in->code) != BPF_MEM)
			break;
		store(c, i, R(in->src_reg));
		return 0;
	case BPF_JMP:
	case BPF_JMP32:
		if (BPF_OP(in->code) == BPF_CALL)
			return call(c, i);
		if (BPF_OP(in->code) == BPF_EXIT) {
			pl_printf(&c->out, "\tbra.uni $Lret;\n");
			return 0;
		}
		return jump(c, i);
	}
	return pl_fail(c, -EINVAL, i, "invalid opcode 0x%02x", in->code);
}
