/* SPDX-License-Identifier: MIT */
/*
 * Lowering device eBPF to PTX (compiler/ptx_lower*.c) and the device
 * runtime's host helpers (gpucode/devrt_host.c).  The programs of
 * tests/lower/lower_progs.h go through vf_verify and pl_lower; the
 * lowered text must assemble with ptxas for sm_75, sm_90 and sm_90a
 * (SKIP without ptxas), and the register cost of a count and a hist
 * probe spliced into real kernels (nvcc -ptx of tests/lower/k_budget.cu)
 * must stay within 16 registers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/verifier.h"
#include "gpucode/ptx.h"
#include "tests/lower/lower_progs.h"
#include "tests/unit/unit.h"

static struct gt_dev_map maps[LM_N];
static struct lp_prog prog;
static char tmpdir[] = "/tmp/gt-lower.XXXXXX";

static const char *tool(const char *name)
{
	static char path[2][256];
	int i = name[0] == 'n';
	const char *home = getenv("CUDA_HOME");

	snprintf(path[i], sizeof(path[i]), "%s/bin/%s",
		 home ? home : "/usr/local/cuda", name);
	return access(path[i], X_OK) ? NULL : path[i];
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -errno;
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1))) {
		*len = fread(s, 1, (size_t)n, f);
		s[*len] = '\0';
	}
	fclose(f);
	return s;
}

/* ptxas -arch=ARCH -v on PTX: exit status; LOG gets its output. */
static int ptxas(const char *ptx, const char *arch, char *log, size_t loglen)
{
	char in[300], cmd[1024], *out;
	size_t n = 0;
	int rc;

	snprintf(in, sizeof(in), "%s/m_%s.ptx", tmpdir, arch);
	if (write_file(in, ptx))
		return -1;
	snprintf(cmd, sizeof(cmd), "'%s' -arch=%s -v '%s' -o /dev/null "
		 ">'%s/log' 2>&1", tool("ptxas"), arch, in, tmpdir);
	rc = system(cmd);
	snprintf(in, sizeof(in), "%s/log", tmpdir);
	out = read_file(in, &n);
	snprintf(log, loglen, "%s", out ? out : "");
	free(out);
	return rc;
}

/* Registers of entry NAME in a ptxas -v log, or -1. */
static int regs_of(const char *log, const char *name)
{
	char pat[300];
	const char *p;
	int r;

	snprintf(pat, sizeof(pat), "entry function '%s'", name);
	p = strstr(log, pat);
	if (!p || !(p = strstr(p, "Used ")) || sscanf(p, "Used %d", &r) != 1)
		return -1;
	return r;
}

/* pl_opts.hist_sum for lower_one(): the program runs with --metrics */
static bool lower_hist_sum;

static int lower_one(int which, bool no_promote, struct pl_func *f,
		     char *err, size_t errlen)
{
	struct pl_opts o;

	lp_build(&prog, which);
	o = (struct pl_opts){ .index = which, .mode = prog.mode,
			       .no_promote = no_promote,
			       .hist_sum = lower_hist_sum };
	return pl_lower(prog.in, (size_t)prog.n, maps, LM_N, &o, f, err,
			errlen);
}

static void test_programs(struct pl_func *f)
{
	static const int nargs[LP_NPROGS] = { [LP_ALU] = 2, [LP_JMP] = 2,
					      [LP_LOOP] = 2,
					      [LP_BUILTIN] = 3 };
	char err[512], name[64];

	for (int i = 0; i < LP_NPROGS; i++) {
		int v, r;

		lp_build(&prog, i);
		v = vf_verify(prog.in, (size_t)prog.n, maps, LM_N, prog.name,
			      NULL, err, sizeof(err));
		snprintf(name, sizeof(name), "verify_%s", prog.name);
		CHECK(v == 0, name);
		if (v)
			printf("    %s\n", err);
		r = lower_one(i, false, &f[i], err, sizeof(err));
		snprintf(name, sizeof(name), "lower_%s", prog.name);
		CHECK(r == 0 && f[i].text && f[i].nargs == nargs[i], name);
		if (r)
			printf("    %s\n", err);
	}
}

static void test_shapes(const struct pl_func *f)
{
	const char *alu = f[LP_ALU].text, *warp = f[LP_WARP].text;

	CHECK(strstr(alu, ".func __gt_probe_0(.param .u64 __gt_pctx, "
		      ".param .u64 __gt_pt0, .param .u64 __gt_pa0, "
		      ".param .u64 __gt_pa1)"), "shape_signature");
	/* x / 0 = 0 and x % 0 = x */
	CHECK(strstr(alu, "\tsetp.eq.u64 %p0, %r7, 0;\n"
		      "\tdiv.u64 %t0, %r0, %r7;\n"
		      "\tselp.b64 %r0, 0, %t0, %p0;\n"), "shape_div_zero");
	CHECK(strstr(alu, "\trem.u64 %t0, %r0, %r7;\n"
		      "\tselp.b64 %r0, %r0, %t0, %p0;\n"), "shape_mod_zero");
	CHECK(strstr(alu, "\tand.b32 %u0, %u0, 63;\n\tshl.b64 %r0, %r0, %u0;"),
	      "shape_shift_mask");
	CHECK(strstr(alu, "\tand.b32 %u1, %u1, 31;\n"), "shape_shift32_mask");
	/* the spilled x at r10-8 lives in a register, the rest in .local */
	CHECK(f[LP_ALU].promoted == 1 && strstr(alu, "mov.b64 %r0, %s63;") &&
	      f[LP_ALU].frame == 496, "promote_spill_slot");
	CHECK(f[LP_JMP].promoted == 1 && f[LP_JMP].frame == 480,
	      "promote_narrow_slots_stay");
	/* count() without key: inline, one red.global per warp, no call */
	CHECK(f[LP_COUNT].frame == 0 && !strstr(f[LP_COUNT].text, ".local") &&
	      !strstr(f[LP_COUNT].text, "__gt_rt_agg0") &&
	      strstr(f[LP_COUNT].text, "red.global.add.u64"),
	      "count_no_stack");
	CHECK(f[LP_HIST].frame == 8 && f[LP_HIST].promoted == 0 &&
	      strstr(f[LP_HIST].text, "call __gt_rt_agg8, (%pctx, %r1, %r2, "
		     "%r3, 6);"), "hist_key_escapes");
	CHECK(strstr(f[LP_AGGS].text, "call __gt_rt_agg, (%pctx, %r1, %r2, "
		     "0, 0);"), "key20_general_entry");
	CHECK(strstr(warp, "activemask.b32 %u0;") &&
	      strstr(warp, "bfind.shiftamt.u32") &&
	      strstr(warp, "mov.b64 %r0, %plan;"), "warp_election_lanes");
	CHECK(strstr(f[LP_BUILTIN].text, "mov.b64 %r0, %pw3;") &&
	      strstr(f[LP_BUILTIN].text, "mov.u32 %u0, %nsmid;") &&
	      strstr(f[LP_BUILTIN].text, "sub.s64 %r0, %pte, %pt0;\n\tand.b64 %r0, %r0, 4294967295;") &&
	      strstr(f[LP_BUILTIN].text, "mov.b64 %r0, %pa2;"),
	      "builtins_lowered");
	CHECK(strstr(f[LP_LOOKUP].text, "call (%r0), __gt_rt_lookup,") &&
	      strstr(f[LP_LOOKUP].text, "red.add.u64 [%r7+8], %r1;") &&
	      strstr(f[LP_LOOKUP].text, "atom.add.u64 %r8, [%r0+0], %r8;"),
	      "map_value_atomics");
}

/*
 * A clause's exit time gets a 0 added that ptxas cannot prove uniform:
 * laneid - leader in a gpu:warp clause, (context & 7) * laneid in a
 * per-thread one, after the context is known and before the body.
 */
static void test_exit_time(const struct pl_func *f)
{
	static const char add[] = "\tcvt.u64.u32 %t0, %u3;\n"
				  "\tadd.s64 %pte, %pte, %t0;\n";
	const char *t = f[LP_BUILTIN].text, *at;
	struct pl_opts o;
	struct pl_func w;
	char err[512];

	at = strstr(t, "\tmov.u64 %pte, %globaltimer;\n"
		       "\tcvt.u32.u64 %u3, %pctx;\n"
		       "\tand.b32 %u3, %u3, 7;\n"
		       "\tmov.u32 %u4, %laneid;\n"
		       "\tmul.lo.u32 %u3, %u3, %u4;\n");
	CHECK(at && strstr(at, add) && strstr(t, "ld.param.u64 %pctx") < at &&
	      strstr(t, "sub.s64 %r0, %pte, %pt0;") > strstr(at, add),
	      "exit_time_thread");
	lp_build(&prog, LP_BUILTIN);
	o = (struct pl_opts){ .index = 5, .mode = PL_WARP };
	if (pl_lower(prog.in, (size_t)prog.n, maps, LM_N, &o, &w, err,
		     sizeof(err))) {
		CHECK(0, "exit_time_warp_lowers");
		printf("    %s\n", err);
		return;
	}
	/* %u1 = the leader, %u2 = laneid, from the election before it */
	at = strstr(w.text, "\tmov.u64 %pte, %globaltimer;\n"
			    "\tsub.u32 %u3, %u2, %u1;\n");
	CHECK(at && strstr(at, add) &&
	      strstr(w.text, "setp.ne.u32 %p0, %u2, %u1;") &&
	      strstr(w.text, "setp.ne.u32 %p0, %u2, %u1;") < at,
	      "exit_time_warp");
	pl_func_free(&w);
}

/*
 * A gpu:mem clause elects from the site's lane mask, the parameter
 * __gt_pmmask (inline: %gt_mmask), never from an activemask of its own:
 * lanes that skipped one clause may run ahead and elect again.
 */
static void test_mem_mask(void)
{
	struct pl_opts o = { .index = 2, .mode = PL_WARP, .mem = true };
	struct pl_func w;
	char err[512], *in;
	const char *el;

	lp_build(&prog, LP_BUILTIN);
	if (pl_lower(prog.in, (size_t)prog.n, maps, LM_N, &o, &w, err,
		     sizeof(err))) {
		CHECK(0, "mem_mask_lowers");
		printf("    %s\n", err);
		return;
	}
	el = strstr(w.text, "\tld.param.u64 %r0, [__gt_pmmask];\n"
			    "\tcvt.u32.u64 %u0, %r0;\n"
			    "\tbrev.b32 %u1, %u0;\n");
	CHECK(el && strstr(w.text, ".param .u64 __gt_pmmask)") &&
	      (w.mem & 1u << PL_MEM_MASK), "mem_mask_elects_from_site");
	in = pl_inline_text(&w);
	CHECK(in && strstr(in, "mov.u64 %gq_r0, %gt_mmask;") &&
	      !strstr(in, "activemask") && !strstr(w.text, "activemask"),
	      "mem_mask_no_own_activemask");
	free(in);
	pl_func_free(&w);
}

/*
 * Entry clauses pasted inline defer their inline updates to the exits:
 * the body sets the kernel-wide registers, flush applies them; the
 * count's shard comes from the block and the warp, not from %smid.
 */
static bool prog_flush_free(int which)
{
	struct pl_func f;
	char err[512];
	bool ok = lower_one(which, false, &f, err, sizeof(err)) == 0 &&
		  !f.flush && strstr(f.text, "red.global.add.u64");

	pl_func_free(&f);
	return ok;
}

static void test_defer(void)
{
	struct pl_opts o;
	struct pl_func f;
	char err[512], *in;

	lp_build(&prog, LP_COUNT);
	o = (struct pl_opts){ .index = 4, .mode = prog.mode, .defer = true };
	if (pl_lower(prog.in, (size_t)prog.n, maps, LM_N, &o, &f, err,
		     sizeof(err))) {
		CHECK(0, "defer_lowers");
		printf("    %s\n", err);
		return;
	}
	in = pl_inline_text(&f);
	CHECK(in && !strstr(in, "red.global") &&
	      strstr(in, "mov.pred %gt_d4_0p, 0;") &&
	      strstr(in, "mov.b64 %gt_d4_0v, %gq_r0;") &&
	      strstr(in, "mov.u64 %gq_psh, %gt_shard;") &&
	      (f.words & PL_W_SHARD) && !strstr(in, "%ctaid") &&
	      !strstr(in, "%smid"), "defer_body_sets_registers");
	/* nothing else touches memory: no branch, the skip is a predicate */
	CHECK(in && !strstr(in, "@%gq_p") &&
	      strstr(in, "setp.eq.u64 %gq_pskip, %gq_pctx, 0;") &&
	      strstr(in, "setp.ne.or.u32 %gq_p1, %gq_u2, %gq_u1, %gq_pskip;") &&
	      strstr(in, "not.pred %gt_d4_0p, %gq_p1;"), "defer_straight_line");
	CHECK(f.flush && !strcmp(f.flush, "\t@%gt_d4_0p red.global.add.u64 "
				 "[%gt_d4_0a], %gt_d4_0v;\n"), "defer_flush");
	free(in);
	pl_func_free(&f);
	/* with calls to the runtime the context check stays a branch */
	lp_build(&prog, LP_AGGS);
	o = (struct pl_opts){ .index = 5, .mode = prog.mode, .defer = true };
	if (pl_lower(prog.in, (size_t)prog.n, maps, LM_N, &o, &f, err,
		     sizeof(err)) == 0) {
		in = pl_inline_text(&f);
		CHECK(in && f.flush && strstr(in, "mov.pred %gt_d5_0p, 1;") &&
		      strstr(in, "mov.pred %gt_d5_0p, 0;") <
		      strstr(in, "@%gq_p0 bra") && !strstr(in, "pskip, "),
		      "defer_branches_with_calls");
		free(in);
		pl_func_free(&f);
	} else {
		CHECK(0, "defer_lowers_aggs");
	}
	/* exit clauses and the call form update in place */
	CHECK(prog_flush_free(LP_COUNT), "defer_off_no_flush");
	/* an exit clause keeps its branches: the lanes that skip leave at
	 * once (straight exits measured 2 points dearer on CUB's scan and a
	 * softmax, docs/device-runtime.md) */
	if (lower_one(LP_COUNT, false, &f, err, sizeof(err)) == 0) {
		CHECK(strstr(f.text, "@%p0 bra $Lret;") &&
		      !strstr(f.text, "%pskip, ") &&
		      strstr(f.text, "\tred.global.add.u64 ["),
		      "exit_keeps_branches");
		pl_func_free(&f);
	} else {
		CHECK(0, "exit_lowers");
	}
}

/*
 * The sum word after a hist's buckets is updated only with
 * pl_opts.hist_sum (--metrics).  Without: the inline hist adds to its
 * bucket alone (no shuffles, one red) and the runtime's calls get the
 * plain op.  With: the bucket group's values added up (a rank scan of
 * shuffles) go to the sum word after the 34 buckets, and the calls get
 * DEVRT_OP_F_SUM.  F: lowered without.
 */
static void test_hist_sum(const struct pl_func *f)
{
	char sumw[64], bucket[96], call0[64], call1[64], err[256];
	struct pl_func t = { 0 }, a = { 0 };
	int r;

	snprintf(sumw, sizeof(sumw), "red.global.add.u64 [%%t0+%u], %%r3;",
		 DEVRT_LINE + 16 + 8 * DEVRT_HIST_BUCKETS);
	snprintf(bucket, sizeof(bucket), "add.u64 %%t0, %%t0, %%t1;\n"
		 "\tred.global.add.u64 [%%t0+%u], %%r0;", DEVRT_LINE + 16);
	snprintf(call0, sizeof(call0), "call __gt_rt_agg8, (%%pctx, %%r1, "
		 "%%r2, %%r3, %d);", DEVRT_OP_HIST);
	snprintf(call1, sizeof(call1), "call __gt_rt_agg8, (%%pctx, %%r1, "
		 "%%r2, %%r3, %u);", DEVRT_OP_HIST | DEVRT_OP_F_SUM);
	CHECK(!strstr(f[LP_LOOPT].text, "fns.b32") &&
	      !strstr(f[LP_LOOPT].text, sumw) &&
	      strstr(f[LP_LOOPT].text, bucket), "inline_hist_no_sum");
	CHECK(strstr(f[LP_AGGS].text, call0) && !strstr(f[LP_AGGS].text, call1),
	      "call_hist_no_sum");
	lower_hist_sum = true;
	r = lower_one(LP_LOOPT, false, &t, err, sizeof(err)) ||
	    lower_one(LP_AGGS, false, &a, err, sizeof(err));
	lower_hist_sum = false;
	CHECK(!r && strstr(t.text, "fns.b32 %u1, %u0, %u2, 17;") &&
	      strstr(t.text, sumw), "inline_hist_sum_word");
	CHECK(!r && strstr(a.text, call1) && !strstr(a.text, call0),
	      "call_hist_sum_flag");
	pl_func_free(&t);
	pl_func_free(&a);
}

/*
 * Loops: the analysis runs to a fixed point over the jump back, updates
 * in a loop are not deferred (a deferred one would keep its last round
 * only), and the code jumps back to the loop's label.
 */
static void test_loops(const struct pl_func *f)
{
	const struct bpf_insn argloop[] = {	/* arg(r6) for r6 = 0, 1 */
		I_MOV64_IMM(BPF_REG_6, 0),
		I_MOV64_REG(BPF_REG_1, BPF_REG_6),
		I_CALL(GT_DH_ARG),
		I_ALU64_IMM(BPF_ADD, BPF_REG_6, 1),
		I_JMP_IMM(BPF_JLT, BPF_REG_6, 2, -4),
		I_MOV64_IMM(BPF_REG_0, 0),
		I_EXIT(),
	};
	const char *loop = f[LP_LOOP].text, *w = f[LP_LOOPW].text;
	struct pl_opts o = { .index = 3, .mode = PL_WARP, .defer = true };
	struct pl_func g;
	char err[256];
	int r;

	/* the pointer moving down the stack is no constant slot: the
	 * whole frame in .local, nothing promoted (one forward pass would
	 * have seen fp-32 only, and kept x at fp-8 in a register) */
	CHECK(f[LP_LOOP].promoted == 0 && f[LP_LOOP].frame == 512 &&
	      strstr(loop, "bra.uni $L28;") && strstr(loop, "\n$L28:\n") <
	      strstr(loop, "bra.uni $L28;"), "loop_pointer_to_fixed_point");
	/* a counter at a constant slot stays in a register round the loop */
	CHECK(f[LP_LOOPW].promoted == 1 && f[LP_LOOPW].frame == 0 &&
	      strstr(w, "\n$L1:\n\tmov.b64 %r6, %s63;") &&
	      strstr(w, "bra.uni $L1;"), "loop_counter_promoted");
	CHECK(strstr(f[LP_LOOPT].text, "match.any.sync.b32") &&
	      strstr(f[LP_LOOPT].text, "call __gt_rt_agg8,"),
	      "loop_thread_warp_helpers");
	test_hist_sum(f);
	/* an entry probe defers its updates, except those in a loop */
	lp_build(&prog, LP_LOOPW);
	r = pl_lower(prog.in, (size_t)prog.n, maps, LM_N, &o, &g, err,
		     sizeof(err));
	CHECK(r == 0 && !g.flush && strstr(g.text, "red.global.add.u64") &&
	      !strstr(g.text, "%gt_d3_") && !strstr(g.text, "%pskip, "),
	      "loop_update_not_deferred");
	if (!r)
		pl_func_free(&g);
	/* a register constant before the loop is not one in it */
	r = pl_lower(argloop, 7, maps, LM_N, &o, &g, err, sizeof(err));
	CHECK(r == -ENOTSUP && strstr(err, "insn 2: kernel argument index "
				      "is not a constant"), "loop_fixed_point");
	if (!r)
		pl_func_free(&g);
}

/*
 * eBPF's "r = 1; if (cond) goto +1; r = 0" (a comparison's value) is one
 * predicated mov, not a branch; a skipped insn that is itself a jump
 * target, or no plain register op, keeps the branch.
 */
static void test_skip_one(void)
{
	const struct bpf_insn cmp[] = {
		I_CALL(GT_DH_TID_X),
		I_MOV64_REG(BPF_REG_6, BPF_REG_0),
		I_MOV64_IMM(BPF_REG_7, 1),
		I_JMP_IMM(BPF_JEQ, BPF_REG_6, 0, 1),
		I_MOV64_IMM(BPF_REG_7, 0),
		I_MOV64_REG(BPF_REG_0, BPF_REG_7),
		I_EXIT(),
	};
	const struct bpf_insn kept[] = {
		I_CALL(GT_DH_TID_X),
		I_MOV64_REG(BPF_REG_6, BPF_REG_0),
		I_JMP_IMM(BPF_JEQ, BPF_REG_6, 7, 1),
		I_JMP_IMM(BPF_JEQ, BPF_REG_6, 0, 1),
		I_MOV64_IMM(BPF_REG_7, 0),
		I_MOV64_REG(BPF_REG_0, BPF_REG_7),
		I_EXIT(),
	};
	struct pl_opts o = { .index = 6, .mode = PL_THREAD };
	struct pl_func f;
	char err[256];

	if (pl_lower(cmp, 7, maps, LM_N, &o, &f, err, sizeof(err)) == 0) {
		CHECK(strstr(f.text, "\tsetp.eq.u64 %p0, %r6, 0;\n"
				     "\t@!%p0 mov.b64 %r7, 0;\n") &&
		      !strstr(f.text, "bra $L5;"), "skip_one_predicated");
		pl_func_free(&f);
	} else {
		CHECK(0, "skip_one_lowers");
		printf("    %s\n", err);
	}
	if (pl_lower(kept, 7, maps, LM_N, &o, &f, err, sizeof(err)) == 0) {
		CHECK(strstr(f.text, "@%p0 bra $L4;") &&
		      strstr(f.text, "@%p0 bra $L5;") &&
		      !strstr(f.text, "@!%p0"), "skip_one_target_kept");
		pl_func_free(&f);
	} else {
		CHECK(0, "skip_one_kept_lowers");
		printf("    %s\n", err);
	}
}

static void test_no_promote(void)
{
	struct pl_func g;
	char err[256];
	int r = lower_one(LP_ALU, true, &g, err, sizeof(err));

	CHECK(r == 0 && g.promoted == 0 && g.frame == 496 &&
	      strstr(g.text, "ld.local.u64 %r0, [__gt_stk+488];"),
	      "no_promote_option");
	pl_func_free(&g);
}

static void test_errors(void)
{
	struct bpf_insn bad[] = {
		I_CALL(GT_DH_TID_X),
		I_MOV64_REG(BPF_REG_1, BPF_REG_0),
		I_CALL(GT_DH_ARG),
		I_EXIT(),
	};
	struct bpf_insn kern[] = {
		I_CALL(BPF_FUNC_ktime_get_ns),
		I_EXIT(),
	};
	struct pl_opts o = { .index = 7, .mode = PL_THREAD };
	struct pl_func f;
	char err[256];
	int r;

	r = pl_lower(bad, 4, maps, LM_N, &o, &f, err, sizeof(err));
	CHECK(r == -ENOTSUP && !f.text, "error_arg_not_constant");
	CHECK_STR(err, "probe 7: insn 2: kernel argument index is not a "
		  "constant", "error_message");
	r = pl_lower(kern, 2, maps, LM_N, &o, &f, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "insn 0"), "error_kernel_helper");
	r = pl_lower(kern, 0, maps, LM_N, &o, &f, err, sizeof(err));
	CHECK(r == -EINVAL, "error_empty");
}

static void test_call_text(void)
{
	struct pl_func fa = { .index = 3, .nargs = 2 };
	struct pl_func fb = { .index = 0 };
	struct pl_func fc = { .index = 1, .nargs = 1,
			      .words = PL_W_LAUNCH_NS | PL_W_KERNEL };
	struct pl_func fd = { .index = 2, .nargs = 1, .words = PL_W_SHARD };
	char *a = pl_call_text(&fa), *b = pl_call_text(&fb), *c = pl_call_text(&fc);
	char *d = pl_call_text(&fd);

	CHECK_STR(a, "call __gt_probe_3, (%gt_ctx, %gt_t0, %gt_arg0, "
		  "%gt_arg1);\n", "call_text_args");
	CHECK_STR(b, "call __gt_probe_0, (%gt_ctx, %gt_t0);\n",
		  "call_text_none");
	CHECK_STR(c, "call __gt_probe_1, (%gt_ctx, %gt_t0, %gt_launch_ns, "
		  "%gt_kernel, %gt_arg0);\n", "call_text_launch_words");
	CHECK_STR(d, "call __gt_probe_2, (%gt_ctx, %gt_t0, %gt_arg0, "
		  "%gt_shard);\n", "call_text_shard");
	free(d);
	free(a);
	free(b);
	free(c);
}

static void test_assemble(const struct pl_func *f)
{
	static const char *const tgt[][2] = {
		{ "7.4", "sm_75" }, { "7.8", "sm_90" }, { "8.0", "sm_90a" },
	};
	char log[16384], name[64];

	for (int t = 0; t < 3; t++) {
		char *m = lp_module(f, LP_NPROGS, tgt[t][0], tgt[t][1]);
		int rc;

		snprintf(name, sizeof(name), "ptxas_%s", tgt[t][1]);
		if (!tool("ptxas") || !pl_runtime_available()) {
			printf("SKIP %s: no ptxas or runtime built without "
			       "nvcc\n", name);
			free(m);
			continue;
		}
		rc = m ? ptxas(m, tgt[t][1], log, sizeof(log)) : -1;
		CHECK(rc == 0, name);
		if (rc)
			printf("%.2000s\n", log);
		if (t == 1 && rc == 0) {
			printf("INFO registers (sm_90) alu %d jmp %d builtins %d "
			       "aggs %d lookup %d warp %d\n",
			       regs_of(log, "gt_test_0"),
			       regs_of(log, "gt_test_1"),
			       regs_of(log, "gt_test_2"),
			       regs_of(log, "gt_test_3"),
			       regs_of(log, "gt_test_5"),
			       regs_of(log, "gt_test_7"));
		}
		free(m);
	}
}

/* ALU and jmp programs with and without promotion, on sm_90. */
static void test_promote_cost(void)
{
	struct pl_func g[2];
	char err[256], log[16384];
	int r[2][2];

	if (!tool("ptxas") || !pl_runtime_available()) {
		printf("SKIP promote_cost: no ptxas\n");
		return;
	}
	for (int np = 0; np < 2; np++) {
		char *m;

		lower_one(LP_ALU, np, &g[0], err, sizeof(err));
		lower_one(LP_JMP, np, &g[1], err, sizeof(err));
		m = lp_module(g, 2, "7.8", "sm_90");
		if (m && ptxas(m, "sm_90", log, sizeof(log)) == 0) {
			r[np][0] = regs_of(log, "gt_test_0");
			r[np][1] = regs_of(log, "gt_test_1");
		} else {
			r[np][0] = r[np][1] = -1;
		}
		free(m);
		pl_func_free(&g[0]);
		pl_func_free(&g[1]);
	}
	printf("INFO promotion (sm_90 registers): alu %d (all .local: %d), "
	       "jmp %d (all .local: %d)\n", r[0][0], r[1][0], r[0][1],
	       r[1][1]);
	CHECK(r[0][0] > 0 && r[1][0] > 0, "promote_cost_measured");
}

/*
 * Splice probe WHICH into every kernel of PTX (nvcc output) at entry (and
 * AT_EXIT, at every exit too); registers of KERNEL before and after.
 */
static int splice_regs(const char *ptx, int which, bool at_exit,
		       const char *kernel, int *before, int *after)
{
	struct ptx_module *m = NULL;
	struct pl_func f = { 0 };
	char err[512], *decls = NULL, *call = NULL, *out = NULL;
	static char log[16384];
	struct ptx_splice_req req = { 0 };
	int rc = -1;

	if (ptx_parse(ptx, strlen(ptx), &m, err, sizeof(err)) ||
	    lower_one(which, false, &f, err, sizeof(err)))
		goto out;
	decls = pl_decls(&f, 1);
	call = pl_call_text(&f);
	req.decls = decls;
	req.entry = call;
	if (at_exit)
		req.exit = call;
	req.min_major = PL_PTX_MIN_MAJOR;
	req.min_minor = PL_PTX_MIN_MINOR;
	if (!decls || !call || ptx_splice(m, &req, &out, err, sizeof(err)) < 0)
		goto out;
	if (ptxas(ptx, "sm_90", log, sizeof(log)))
		goto out;
	*before = regs_of(log, kernel);
	if (ptxas(out, "sm_90", log, sizeof(log)))
		goto out;
	*after = regs_of(log, kernel);
	rc = 0;
out:
	if (rc)
		printf("    splice: %s\n", err);
	free(out);
	free(decls);
	free(call);
	pl_func_free(&f);
	ptx_free(m);
	return rc;
}

static void test_budget(void)
{
	static const char *const kern[] = { "_Z5saxpyifPKfPf",
					    "_Z3mm4iPKfS0_Pf" };
	char cmd[1024], path[300], name[64];
	char *ptx;
	size_t n = 0;

	if (!tool("nvcc") || !tool("ptxas") || !pl_runtime_available()) {
		printf("SKIP register_budget: no nvcc/ptxas\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/k_budget.ptx", tmpdir);
	snprintf(cmd, sizeof(cmd), "'%s' -ptx -arch=sm_90 "
		 "tests/lower/k_budget.cu -o '%s' 2>&1", tool("nvcc"), path);
	if (system(cmd) != 0 || !(ptx = read_file(path, &n))) {
		CHECK(0, "register_budget_nvcc");
		return;
	}
	for (int k = 0; k < 2; k++) {
		int b = -1, c = -1, h = -1, c2 = -1, h2 = -1, hs = -1;

		splice_regs(ptx, LP_COUNT, false, kern[k], &b, &c);
		splice_regs(ptx, LP_HIST, false, kern[k], &b, &h);
		splice_regs(ptx, LP_COUNT, true, kern[k], &b, &c2);
		splice_regs(ptx, LP_HIST, true, kern[k], &b, &h2);
		/* --metrics: the hist's call adds to the sum word too */
		lower_hist_sum = true;
		splice_regs(ptx, LP_HIST, false, kern[k], &b, &hs);
		lower_hist_sum = false;
		printf("INFO registers %s: plain %d, count probe %d (%+d), "
		       "hist probe %d (%+d), with its sum %d (%+d); at entry "
		       "and exit: count %d, hist %d\n", kern[k], b, c, c - b,
		       h, h - b, hs, hs - b, c2, h2);
		snprintf(name, sizeof(name), "register_budget_%s",
			 k ? "mm4" : "saxpy");
		CHECK(b > 0 && c > 0 && h > 0 && hs > 0 && c - b <= 16 &&
		      h - b <= 16 && hs - b <= 16, name);
	}
	free(ptx);
}

/* ---- host helpers: layout, init, merge, rings ---- */

static int collect(const void *key, const uint64_t *val, void *arg)
{
	uint64_t *out = arg;
	uint64_t k = 0;

	if (key)
		memcpy(&k, key, 8);
	out[0]++;
	out[1 + 2 * (k & 3)] = val[0];
	out[2 + 2 * (k & 3)] = val[1];
	return 0;
}

static uint8_t *slot_of(const struct devrt_map_desc *d, uint8_t *img,
			uint32_t shard, uint32_t i)
{
	return img + shard * d->shard_bytes + DEVRT_LINE + i * d->slot_bytes;
}

static void put(uint8_t *p, int word, uint64_t v)
{
	memcpy(p + 8 * word, &v, 8);
}

static void test_host_layout(void)
{
	struct devrt_map_desc d = { .kind = DEVRT_K_HIST, .key_size = 12,
				    .nshards = 4, .capacity = 64 };
	struct devrt_map_desc bad = { .kind = DEVRT_K_COUNT, .nshards = 1,
				      .key_size = 8, .capacity = 48 };
	struct devrt_map_desc lh = { .kind = DEVRT_K_LHIST, .nshards = 1,
				     .lmin = 0, .lmax = 100, .lstep = 10 };

	/* 34 buckets and the sum; lhist: 12 buckets and the sum */
	CHECK(devrt_map_layout(&d) == 0 && d.nwords == 35 &&
	      d.slot_bytes == 16 + 16 + 35 * 8 && d.shard_bytes % 128 == 0 &&
	      d.shard_bytes >= 128 + 64 * d.slot_bytes &&
	      devrt_map_bytes(&d) == 4 * d.shard_bytes, "layout_hist");
	CHECK(devrt_map_layout(&bad) == -EINVAL, "layout_bad_capacity");
	CHECK(devrt_map_layout(&lh) == 0 && lh.nwords == 13 &&
	      lh.capacity == 1, "layout_lhist");
	lh.lstep = 0;
	CHECK(devrt_map_layout(&lh) == -EINVAL, "layout_lhist_step");
	CHECK(devrt_ctx_bytes(3) == 128 + 3 * 80, "ctx_bytes");
}

static void test_host_merge(void)
{
	struct devrt_map_desc mn = { .kind = DEVRT_K_MIN,
				     .flags = DEVRT_F_SIGNED, .nshards = 3 };
	struct devrt_map_desc av = { .kind = DEVRT_K_AVG, .key_size = 8,
				     .nshards = 2, .capacity = 4 };
	uint64_t got[9] = { 0 };
	uint8_t *img;

	devrt_map_layout(&mn);
	img = malloc(devrt_map_bytes(&mn));
	devrt_map_init(&mn, img);
	/* untouched: nothing to report; shard 0 and 2 set, shard 1 not */
	CHECK(devrt_map_foreach(&mn, img, collect, got) == 0,
	      "merge_untouched_empty");
	put(slot_of(&mn, img, 0, 0), 1, 1);
	put(slot_of(&mn, img, 0, 0), 2, (uint64_t)-5);
	put(slot_of(&mn, img, 0, 0), 3, 1);
	put(slot_of(&mn, img, 2, 0), 1, 1);
	put(slot_of(&mn, img, 2, 0), 2, (uint64_t)-9);
	put(slot_of(&mn, img, 2, 0), 3, 1);
	put(slot_of(&mn, img, 1, 0), 1, 1);	/* live, value never set */
	CHECK(devrt_map_foreach(&mn, img, collect, got) == 1 &&
	      (int64_t)got[1] == -9 && got[2] == 1, "merge_min_signed");
	free(img);

	devrt_map_layout(&av);
	img = calloc(1, devrt_map_bytes(&av));
	memset(got, 0, sizeof(got));
	/* key 1 in both shards, key 2 in one, one busy slot ignored */
	for (int s = 0; s < 2; s++) {
		uint8_t *p = slot_of(&av, img, s, 3 - s);

		put(p, 0, DEVRT_SLOT_FULL | 77);
		put(p, 1, 1);
		put(p, 2, 1);
		put(p, 3, 2 + s);
		put(p, 4, 10 * (s + 1));
	}
	put(slot_of(&av, img, 1, 0), 0, DEVRT_SLOT_FULL | 5);
	put(slot_of(&av, img, 1, 0), 1, 1);
	put(slot_of(&av, img, 1, 0), 2, 2);
	put(slot_of(&av, img, 1, 0), 3, 4);
	put(slot_of(&av, img, 1, 0), 4, 40);
	put(slot_of(&av, img, 0, 0), 0, DEVRT_SLOT_BUSY);
	put(slot_of(&av, img, 0, 0), 1, 1);
	CHECK(devrt_map_foreach(&av, img, collect, got) == 2 &&
	      got[0] == 2 && got[3] == 5 && got[4] == 30 && got[5] == 4 &&
	      got[6] == 40, "merge_avg_keys");
	put(img, 0, 3);
	put(img + av.shard_bytes, 0, 4);
	CHECK(devrt_map_drops(&av, img) == 7, "map_drops");
	free(img);
}

/*
 * A map kept per kernel (DEVRT_F_KERNEL): the agent fills each kernel's
 * slot ahead (state, key; live 0) and probes add to its value without
 * setting live.  Only kernels whose counts moved are entries.
 */
/* collect() for a map of one word: no second word to read */
static int collect1(const void *key, const uint64_t *val, void *arg)
{
	uint64_t *out = arg;
	uint64_t k = 0;

	memcpy(&k, key, 8);
	out[0]++;
	out[1 + 2 * (k & 3)] = val[0];
	return 0;
}

static uint64_t keys[4];
static int nkeys;

static int in_order(const void *key, const uint64_t *val, void *arg)
{
	if (nkeys < 4)
		memcpy(&keys[nkeys], key, 8);
	nkeys++;
	return 0;
}

static void test_host_kernel_map(void)
{
	struct devrt_map_desc pk = { .kind = DEVRT_K_COUNT,
				     .flags = DEVRT_F_KERNEL, .key_size = 8,
				     .nshards = 2, .capacity = 4 };
	uint64_t got[9] = { 0 };
	uint8_t *img;

	devrt_map_layout(&pk);
	img = calloc(1, devrt_map_bytes(&pk));
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < 2; i++) {
			put(slot_of(&pk, img, s, i), 0, DEVRT_SLOT_FULL | 9);
			put(slot_of(&pk, img, s, i), 2, (uint64_t)i + 1);
		}
	CHECK(devrt_map_foreach(&pk, img, collect1, got) == 0,
	      "kernel_map_filled_not_counted");
	put(slot_of(&pk, img, 0, 1), 3, 5);	/* key 2: 5 + 6 */
	put(slot_of(&pk, img, 1, 1), 3, 6);
	CHECK(devrt_map_foreach(&pk, img, collect1, got) == 1 &&
	      got[5] == 11, "kernel_map_counted");
	/* slot 2 holds key 2 again (one name in two modules): one entry;
	 * slot 3 key 0, counted in shard 1 only; keys come out sorted */
	for (int s = 0; s < 2; s++) {
		put(slot_of(&pk, img, s, 2), 0, DEVRT_SLOT_FULL | 9);
		put(slot_of(&pk, img, s, 2), 2, 2);
		put(slot_of(&pk, img, s, 2), 3, 3 + (uint64_t)s);
		put(slot_of(&pk, img, s, 3), 0, DEVRT_SLOT_FULL | 9);
		put(slot_of(&pk, img, s, 3), 2, 0);
	}
	put(slot_of(&pk, img, 1, 3), 3, 4);
	memset(got, 0, sizeof(got));
	memset(keys, 0xff, sizeof(keys));
	nkeys = 0;
	CHECK(devrt_map_foreach(&pk, img, collect1, got) == 2 && got[0] == 2 &&
	      got[5] == 18 && got[1] == 4, "kernel_map_same_key_folds");
	CHECK(devrt_map_foreach(&pk, img, in_order, NULL) == 2 &&
	      nkeys == 2 && keys[0] == 0 && keys[1] == 2,
	      "kernel_map_sorted_by_key");
	/* a snapshot's copy of the first slots only: the same entries */
	{
		struct devrt_map_desc u, whole = pk;
		uint8_t *front;

		devrt_map_used(&pk, 3, &u);
		front = calloc(1, devrt_map_bytes(&u));
		for (int s = 0; s < 2; s++)
			memcpy(front + s * u.shard_bytes,
			       img + s * pk.shard_bytes, u.shard_bytes);
		memset(got, 0, sizeof(got));
		CHECK(u.capacity == 3 && u.nshards == 2 &&
		      u.shard_bytes == DEVRT_LINE + 3 * pk.slot_bytes &&
		      devrt_map_foreach(&u, front, collect1, got) == 1 &&
		      got[5] == 18, "kernel_map_front_slots");
		devrt_map_used(&pk, 0, &u);
		CHECK(u.capacity == 1, "kernel_map_front_one_slot_at_least");
		devrt_map_used(&pk, 9, &u);
		CHECK(u.capacity == 4 && u.shard_bytes == pk.shard_bytes,
		      "kernel_map_front_all_slots_at_most");
		whole.flags = 0;
		devrt_map_used(&whole, 1, &u);
		CHECK(!memcmp(&u, &whole, sizeof(u)),
		      "keyed_map_copied_whole");
		free(front);
	}
	pk.flags = 0;	/* an ordinary keyed map needs the live word */
	memset(got, 0, sizeof(got));
	CHECK(devrt_map_foreach(&pk, img, collect1, got) == 0,
	      "keyed_map_needs_live");
	free(img);
}

struct recs {
	int n;
	uint32_t fmt[4], size[4];
	uint64_t first[4];
};

static void rec(uint32_t fmt, const void *args, uint32_t size, void *arg)
{
	struct recs *r = arg;

	if (r->n < 4) {
		r->fmt[r->n] = fmt;
		r->size[r->n] = size;
		memcpy(&r->first[r->n], args, 8);
	}
	r->n++;
}

/* Write a record as the device does (words wrap one at a time). */
static void ring_put(uint8_t *ring, uint32_t cap, uint64_t pos, uint32_t fmt,
		     const uint64_t *args, uint32_t size, bool commit)
{
	uint8_t *data = ring + DEVRT_LINE;
	uint64_t w = fmt | (uint64_t)size << 32, seq = pos ^ DEVRT_SEQ_KEY;

	memcpy(data + ((pos + 8) & (cap - 1)), &w, 8);
	for (uint32_t i = 0; i * 8 < size; i++)
		memcpy(data + ((pos + 16 + 8 * i) & (cap - 1)), &args[i], 8);
	if (commit)
		memcpy(data + (pos & (cap - 1)), &seq, 8);
}

static void test_host_ring(void)
{
	enum { CAP = 128 };
	uint8_t *ring = calloc(1, devrt_rings_bytes(1, CAP));
	uint64_t a[2] = { 0x1111, 0x2222 }, b[1] = { 0x3333 }, tail = 104;
	uint64_t head = 104 + 32 + 24 + 24;
	struct recs r = { 0 };

	/* three records from position 104: the first wraps, the third is
	 * reserved but not committed */
	ring_put(ring, CAP, 104, 7, a, 16, true);
	ring_put(ring, CAP, 136, 8, b, 5, true);
	ring_put(ring, CAP, 160, 9, b, 8, false);
	memcpy(ring, &head, 8);
	CHECK(devrt_ring_read(ring, CAP, &tail, rec, &r) == 2 && r.n == 2 &&
	      r.fmt[0] == 7 && r.size[0] == 16 && r.first[0] == 0x1111 &&
	      r.fmt[1] == 8 && r.size[1] == 5 && r.first[1] == 0x3333 &&
	      tail == 160, "ring_read_wrap_uncommitted");
	ring_put(ring, CAP, 160, 9, b, 8, true);
	CHECK(devrt_ring_read(ring, CAP, &tail, rec, &r) == 1 &&
	      r.fmt[2] == 9 && tail == head, "ring_read_commit_later");
	free(ring);
}

int main(void)
{
	struct pl_func f[LP_NPROGS] = { 0 };
	char cmd[64];

	lp_maps(maps);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_programs(f);
	test_shapes(f);
	test_exit_time(f);
	test_mem_mask();
	test_no_promote();
	test_defer();
	test_skip_one();
	test_loops(f);
	test_errors();
	test_call_text();
	test_assemble(f);
	test_promote_cost();
	test_budget();
	test_host_layout();
	test_host_merge();
	test_host_kernel_map();
	test_host_ring();
	for (int i = 0; i < LP_NPROGS; i++)
		pl_func_free(&f[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	UNIT_END();
}
