// SPDX-License-Identifier: MIT
/*
 * PTX reader and splicer.  Hand-written modules check the reader's view
 * and the splice's shape; tests/cuda/k_*.cu, compiled with nvcc -ptx,
 * are spliced with probes that use every placeholder and must still pass
 * ptxas; mutated and truncated modules must give errors, never crashes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpucode/ptx.h"
#include "tests/unit/unit.h"

/* ---------------------------------------------------------- probes -- */

static const char decls_text[] =
	"// gputrace test runtime\n"
	".global .align 8 .u64 __gt_probe_total;\n"
	"\n"
	".func (.param .b64 __gt_r) __gt_probe_mix(\n"
	"\t.param .b64 __gt_a\n"
	")\n"
	"{\n"
	"\t.reg .b64 %m<3>;\n"
	"\tld.param.b64 %m0, [__gt_a];\n"
	"\tmul.lo.u64 %m1, %m0, 0x9E3779B97F4A7C15;\n"
	"\tatom.global.add.u64 %m2, [__gt_probe_total], 1;\n"
	"\tadd.u64 %m1, %m1, %m2;\n"
	"\tst.param.b64 [__gt_r], %m1;\n"
	"\tret;\n"
	"}\n";

/* per thread: count, hash the arguments, loop on a local label, call */
static const char entry_text[] =
	"\t.reg .b64 %x<4>;\n"
	"\t.reg .b32 %xi;\n"
	"\t.reg .pred %xp;\n"
	"\tcvta.to.global.u64 %x0, %gt_ctx;\n"
	"\tatom.global.add.u64 %x1, [%x0], 1;\n"
	"\tadd.u64 %x2, %gt_arg0, %gt_arg1;\n"
	"\txor.b64 %x2, %x2, %gt_arg2;\n"
	"\tadd.u64 %x2, %x2, %gt_arg3;\n"
	"\txor.b64 %x2, %x2, %gt_arg4;\n"
	"\tadd.u64 %x2, %x2, %gt_arg5;\n"
	"\txor.b64 %x2, %x2, %gt_arg6;\n"
	"\tadd.u64 %x2, %x2, %gt_arg7;\n"
	"\txor.b64 %x2, %x2, %gt_arg8;\n"
	"\tadd.u64 %x2, %x2, %gt_arg9;\n"
	"\txor.b64 %x2, %x2, %gt_arg10;\n"
	"\tadd.u64 %x2, %x2, %gt_arg13;\n"
	"\txor.b64 %x2, %x2, %gt_t0;\n"
	"\tmov.u32 %xi, 0;\n"
	"%gt_uniq_loop:\n"
	"\tadd.u32 %xi, %xi, 1;\n"
	"\tsetp.lt.u32 %xp, %xi, 3;\n"
	"\t@%xp bra.uni %gt_uniq_loop;\n"
	"\tst.global.u64 [%x0+8], %x2;\n"
	"\t{\n"
	"\t.param .b64 pa;\n"
	"\t.param .b64 pr;\n"
	"\tst.param.b64 [pa], %x2;\n"
	"\tcall.uni (pr), __gt_probe_mix, (pa);\n"
	"\tld.param.b64 %x3, [pr];\n"
	"\t}\n"
	"\tred.global.add.u64 [%x0+16], %x3;\n";

/* per thread: time since entry */
static const char exit_text[] =
	"\t.reg .b64 %y<4>;\n"
	"\tcvta.to.global.u64 %y0, %gt_ctx;\n"
	"\tmov.u64 %y1, %globaltimer;\n"
	"\tsub.u64 %y2, %y1, %gt_t0;\n"
	"\tatom.global.add.u64 %y3, [%y0+24], %y2;\n"
	"\tst.global.u64 [%y0+32], %gt_arg0;\n";

/* per warp: the lowest active lane adds the warp's lane count */
static const char warp_text[] =
	"\t.reg .b32 %w<5>;\n"
	"\t.reg .b64 %wd<2>;\n"
	"\t.reg .pred %wp;\n"
	"\tactivemask.b32 %w0;\n"
	"\tbrev.b32 %w1, %w0;\n"
	"\tbfind.shiftamt.u32 %w2, %w1;\n"
	"\tmov.u32 %w3, %laneid;\n"
	"\tsetp.ne.u32 %wp, %w3, %w2;\n"
	"\t@%wp bra %gt_uniq_done;\n"
	"\tpopc.b32 %w4, %w0;\n"
	"\tcvt.u64.u32 %wd0, %w4;\n"
	"\tcvta.to.global.u64 %wd1, %gt_ctx;\n"
	"\tred.global.add.u64 [%wd1+40], %wd0;\n"
	"%gt_uniq_done:\n";

/* ------------------------------------------------- hand-written PTX -- */

static const char hand[] =
	"//\n// hand-written\n//\n"
	".version 6.4\n"
	".target sm_75\n"
	".address_size 64\n"
	"\n"
	"/* a comment with .entry fake( { */\n"
	".extern .func (.param .b32 func_retval0) vprintf\n"
	"(\n\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n"
	");\n"
	".global .align 4 .b8 tab[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
	".const .align 1 .b8 msg[4] = {104, 105, 10, 0};\n"
	"\n"
	"\t// .globl\tfirst\n"
	".visible .entry first(\n"
	"\t.param .u64 .ptr .global .align 8 first_param_0,\n"
	"\t.param .s16 first_param_1,\n"
	"\t.param .f32 first_param_2,\n"
	"\t.param .align 4 .b8 first_param_3[12],\n"
	"\t.param .align 8 .b8 first_param_4[16]\n"
	")\n"
	".maxntid 128, 1, 1\n"
	".minnctapersm 2\n"
	"{\n"
	"\t.reg .pred \t%p<3>;\n"
	"\t.reg .b32 \t%r<4>;\n"
	"\t.reg .b64 \t%rd<3>;\n"
	"\t.shared .align 4 .b8 buf[64];\n"
	"\n"
	"$L__top:\n"
	"\tld.param.u64 \t%rd1, [first_param_0];\n"
	"\tld.global.nc.L1::evict_last.u32 \t%r2, [%rd1];\n"
	"\tmov.u32 \t%r1, %tid.x; // ret; in a comment\n"
	"\tsetp.eq.s32 \t%p1, %r1, 0;\n"
	"\t@%p1 ret;\n"
	"\tsetp.eq.s32 \t%p2, %r1, 1;\n"
	"\t@!%p2 bra \t$L__next;\n"
	"\t{\n"
	"\t.reg .pred q;\n"
	"\tsetp.gt.u32 q, %r1, 7;\n"
	"\t@!q exit;\n"
	"\t}\n"
	"$L__next:\n"
	"\tst.global.u32 \t[%rd1], %r1;\n"
	"\tret;\n"
	"}\n"
	"\n"
	".entry second()\n"
	"{\n"
	"\tret.uni;\n"
	"}\n"
	"\n"
	".visible .entry third(\n"
	"\t.param .u32 third_param_0\n"
	")\n"
	"{\n"
	"\t.reg .b32 \t%r<2>;\n"
	"\tld.param.u32 \t%r1, [third_param_0];\n"
	"\tadd.u32 \t%r1, %r1, 1;\n"
	"}\n"
	".visible .entry launcher()\n"
	"{\n"
	"\t.reg .b64 \t%rd<2>;\n"
	"\tmov.u64 \t%rd1, second;\n"
	"\tret;\n"
	"}\n";

static bool contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The text of F (the whole item) from module M. */
static char *item_text(const struct ptx_module *m, const struct ptx_func *f)
{
	return strndup(m->text + f->start, f->end - f->start);
}

static void test_read(void)
{
	struct ptx_module *m;
	char err[256];
	int rc = ptx_parse(hand, strlen(hand), &m, err, sizeof(err));

	CHECK(rc == 0, "read/parses");
	if (rc) {
		printf("# %s\n", err);
		return;
	}
	CHECK(m->ver_major == 6 && m->ver_minor == 4, "read/version");
	CHECK_STR(m->target, "sm_75", "read/target");
	CHECK(m->nfuncs == 5, "read/function count");
	CHECK(!m->funcs[0].is_entry && !m->funcs[0].is_def &&
	      !strcmp(m->funcs[0].name, "vprintf"), "read/extern func");
	CHECK(!strncmp(m->text + m->decls_at, ".extern .func", 13),
	      "read/decls go before the first function");

	const struct ptx_func *f = ptx_find_entry(m, "first");

	CHECK(f && f->nparams == 5, "read/first params");
	if (!f || f->nparams != 5)
		goto out;
	CHECK_STR(f->params[0].name, "first_param_0", "read/param name");
	CHECK(f->params[0].is_ptr && f->params[0].size == 8 &&
	      f->params[0].align == 8 && f->params[0].kind == PTX_P_UNSIGNED,
	      "read/ptr param");
	CHECK(f->params[1].kind == PTX_P_SIGNED && f->params[1].size == 2,
	      "read/s16 param");
	CHECK(f->params[2].kind == PTX_P_FLOAT && f->params[2].size == 4,
	      "read/f32 param");
	CHECK(f->params[3].kind == PTX_P_AGGREGATE && f->params[3].size == 12 &&
	      f->params[3].align == 4, "read/aggregate param");
	CHECK(!strncmp(m->text + f->entry_at, "$L__top:", 8),
	      "read/entry point after the declarations");
	CHECK(m->text[f->body_open] == '{' && m->text[f->body_close] == '}',
	      "read/body braces");
	CHECK(f->nsites == 3, "read/three exit sites");
	if (f->nsites == 3) {
		CHECK(f->sites[0].guard && !f->sites[0].guard_neg &&
		      !strncmp(m->text + f->sites[0].guard, "%p1", 3) &&
		      !strncmp(m->text + f->sites[0].stmt, "@%p1 ret;",
			       f->sites[0].end - f->sites[0].stmt),
		      "read/guarded ret");
		CHECK(f->sites[1].kind == PTX_SITE_EXIT &&
		      f->sites[1].guard_neg, "read/negated guarded exit");
		CHECK(f->sites[2].kind == PTX_SITE_RET && !f->sites[2].guard,
		      "read/plain ret");
	}
	f = ptx_find_entry(m, "second");
	CHECK(f && f->nparams == 0 && f->lparen && f->nsites == 1 &&
	      f->sites[0].kind == PTX_SITE_RET, "read/ret.uni, no params");
	CHECK(f && f->referenced, "read/entry named elsewhere is referenced");
	f = ptx_find_entry(m, "third");
	CHECK(f && f->nsites == 1 && f->sites[0].kind == PTX_SITE_FALLOFF,
	      "read/falling off the end is an exit");
	CHECK(f && !f->referenced, "read/unreferenced entry");
	CHECK(f && f->t0_at > f->entry_at && m->text[f->t0_at] == '}',
	      "read/straight-line start runs to the end");
	f = ptx_find_entry(m, "first");
	CHECK(f && f->t0_at == f->entry_at, "read/label ends the start");
	f = ptx_find_entry(m, "first");
	CHECK(f && ptx_ctx_offset(f) == 48, "read/context parameter offset");
	f = ptx_find_entry(m, "second");
	CHECK(f && ptx_ctx_offset(f) == 0, "read/context offset, no params");
	ptx_free(m);
	{
		/* as found in a fatbin: NUL-terminated and padded */
		size_t n = strlen(hand);
		char *padded = calloc(1, n + 8);

		memcpy(padded, hand, n);
		rc = ptx_parse(padded, n + 8, &m, err, sizeof(err));
		CHECK(rc == 0 && m->len == n, "read/stops at a NUL");
		free(padded);
		if (rc)
			return;
	}
out:
	ptx_free(m);
}

static int match_first(const char *name, void *arg)
{
	++*(int *)arg;
	return !strcmp(name, "first") || !strcmp(name, "third");
}

/* %gt_launch, %gt_launch_ns, %gt_kernel: words 1-3 of the parameter */
static void test_splice_launch_words(void)
{
	struct ptx_module *m;
	char err[256], *out = NULL;
	const char *names[] = { "first", NULL };
	struct ptx_splice_req req = {
		.names = names,
		.entry = "\t.reg .b64 %w;\n\tadd.u64 %w, %gt_launch, %gt_launch_ns;\n"
			 "\tadd.u64 %w, %w, %gt_kernel;\n"
			 "\tadd.u64 %w, %w, %gt_w19;\n",
	};

	if (ptx_parse(hand, strlen(hand), &m, err, sizeof(err)))
		return;
	CHECK(ptx_splice(m, &req, &out, err, sizeof(err)) == 1,
	      "splice/launch words: one kernel");
	CHECK(out && contains(out, "ld.param.u64 \t%gt_launch, [__gt_ctx+8];") &&
	      contains(out, "ld.param.u64 \t%gt_launch_ns, [__gt_ctx+16];") &&
	      contains(out, "ld.param.u64 \t%gt_kernel, [__gt_ctx+24];") &&
	      contains(out, "ld.param.u64 \t%gt_w19, [__gt_ctx+152];") &&
	      !contains(out, "%gt_w4"),
	      "splice/launch words loaded from the parameter");
	CHECK(out && ptx_ctx_offset(ptx_find_entry(m, "first")) % 8 == 0,
	      "splice/launch parameter 8-aligned");
	free(out);
	out = NULL;
	req.entry = "\tmov.u64 %x, %gt_w20;\n";
	CHECK(ptx_splice(m, &req, &out, err, sizeof(err)) < 0 &&
	      contains(err, "%gt_w20"), "splice/word past the parameter");
	free(out);
	ptx_free(m);
}

/*
 * A late read of module M (placeholder NAME; READ is its text in the
 * spliced kernel, COUNTED a string it holds once): with only an exit
 * text using it, once, after the kernel's straight-line start and
 * before its first branch; with an entry text using it too, once, at
 * the entry before that text and the kernel's first statement.
 */
static void check_late_read(struct ptx_module *m, const char *name,
			    const char *use_exit, const char *use_entry,
			    const char *read, const char *counted)
{
	const char *names[] = { "k", NULL };
	struct ptx_splice_req req = { .names = names, .exit = use_exit };
	char err[256], what[96], *out = NULL;
	const char *at, *br;

	snprintf(what, sizeof(what), "%s/splices", name);
	CHECK(ptx_splice(m, &req, &out, err, sizeof(err)) == 1, what);
	at = out ? strstr(out, read) : NULL;
	br = out ? strstr(out, "@%p1 bra $L_end;") : NULL;
	snprintf(what, sizeof(what), "%s/read once, before the first branch",
		 name);
	CHECK(at && br && at < br && strstr(out, "setp.ge.u32 %p1") < at &&
	      count_of(out, counted) == 1, what);
	free(out);
	out = NULL;
	req.entry = use_entry;
	snprintf(what, sizeof(what), "%s/entry", name);
	CHECK(ptx_splice(m, &req, &out, err, sizeof(err)) == 1, what);
	at = out ? strstr(out, read) : NULL;
	snprintf(what, sizeof(what),
		 "%s/at the entry when the entry text uses it", name);
	/* before USE_ENTRY's second line, the use */
	CHECK(at && at < strstr(out, strchr(use_entry + 1, '\t') + 1) &&
	      at < strstr(out, "ld.param.u32 %r1") &&
	      count_of(out, counted) == 1, what);
	free(out);
}

/* %gt_t0lo and %gt_shard are read after the kernel's straight-line start. */
static void test_splice_late_reads(void)
{
	static const char k[] =
		".version 7.4\n.target sm_75\n.address_size 64\n"
		".visible .entry k(.param .u32 n)\n{\n"
		"\t.reg .pred %p<2>;\n\t.reg .b32 %r<3>;\n"
		"\tld.param.u32 %r1, [n];\n"
		"\tmov.u32 %r2, %tid.x;\n"
		"\tsetp.ge.u32 %p1, %r2, %r1;\n"
		"\t@%p1 bra $L_end;\n"
		"\tadd.u32 %r2, %r2, 1;\n"
		"$L_end:\n\tret;\n}\n";
	const char *names[] = { "k", NULL };
	struct ptx_splice_req req = {
		.names = names,
		.exit = "\t.reg .b64 %x;\n\tmov.u64 %x, %gt_shard;\n",
	};
	struct ptx_module *m;
	char err[256], *out = NULL;

	if (ptx_parse(k, strlen(k), &m, err, sizeof(err)))
		return;
	check_late_read(m, "t0lo", "\t.reg .b32 %x;\n\tmov.u32 %x, %gt_t0lo;\n",
			"\t.reg .b32 %y;\n\tmov.u32 %y, %gt_t0lo;\n",
			"mov.u32 \t%gt_t0lo, %globaltimer_lo;", "%globaltimer_lo");
	check_late_read(m, "shard", req.exit,
			"\t.reg .b64 %y;\n\tmov.u64 %y, %gt_shard;\n",
			"cvt.u64.u32 \t%gt_shard, %gt_s0;", "%tid.y");
	/* the shard's register is declared at kernel scope */
	CHECK(ptx_splice(m, &req, &out, err, sizeof(err)) == 1 &&
	      contains(out, "\t.reg .b64 \t%gt_shard;\n") &&
	      contains(out, "mov.u32 \t%gt_s1, %tid.y;"),
	      "shard/declared and computed");
	free(out);
	ptx_free(m);
}

/* Deferred update registers are declared once, at kernel scope. */
static void test_splice_deferred(void)
{
	const char *names[] = { "third", NULL };
	struct ptx_splice_req req = {
		.names = names,
		.entry = "\tmov.pred %gt_d3_0p, 0;\n\tmov.b64 %gt_d3_0a, 8;\n"
			 "\tmov.b64 %gt_d3_0v, 1;\n\tmov.pred %gt_d3_0p, 1;\n",
		.exit = "\t@%gt_d3_0p red.global.add.u64 [%gt_d3_0a], %gt_d3_0v;\n",
	};
	struct ptx_module *m;
	char err[256], *out = NULL;

	if (ptx_parse(hand, strlen(hand), &m, err, sizeof(err)))
		return;
	CHECK(ptx_splice(m, &req, &out, err, sizeof(err)) == 1 &&
	      count_of(out, ".reg .pred \t%gt_d3_0p;") == 1 &&
	      count_of(out, ".reg .b64 \t%gt_d3_0a;") == 1 &&
	      count_of(out, ".reg .b64 \t%gt_d3_0v;") == 1,
	      "splice/deferred registers declared once");
	free(out);
	ptx_free(m);
}

/* Only the decls functions the probe texts reach, whole names only. */
static void test_prune(void)
{
	static const char decls[] =
		"// runtime\n"
		".func __gt_a(.param .u64 x)\n{\n\tcall __gt_b, (x);\n\tret;\n}\n"
		"\t// .globl\t__gt_c\n"
		"\t// .globl\t__gt_b\n"
		".func __gt_b(.param .u64 y)\n{\n\tret;\n}\n"
		".func __gt_a0()\n{\n\tld.global.nc.L1::evict_last.u32 %r1, [%rd1];\n\tret;\n}\n"
		".func __gt_c()\n{\n\tcall __gt_a0, ();\n\tret;\n}\n";
	const char *roots[] = { "\tcall __gt_a, (%gt_ctx);\n", NULL };
	char err[256], *out = NULL;

	CHECK(ptx_prune_decls(decls, roots, 2, &out, err, sizeof(err)) == 0 &&
	      contains(out, ".func __gt_a(") && contains(out, ".func __gt_b(") &&
	      !contains(out, ".func __gt_a0") && !contains(out, ".func __gt_c"),
	      "prune/what the roots call, transitively");
	CHECK(out && strstr(out, "__gt_a(") < strstr(out, "__gt_b("),
	      "prune/order kept");
	free(out);
	roots[0] = "\tmov.u32 %x, 1;\n";
	CHECK(ptx_prune_decls(decls, roots, 2, &out, err, sizeof(err)) == 0 &&
	      out && !out[0], "prune/nothing called, nothing kept");
	free(out);
	roots[1] = "call __gt_c, ();";
	CHECK(ptx_prune_decls(decls, roots, 2, &out, err, sizeof(err)) == 0 &&
	      contains(out, ".func __gt_c(") && contains(out, ".func __gt_a0(") &&
	      !contains(out, ".func __gt_a("), "prune/second root");
	free(out);
	CHECK(ptx_prune_decls(".func f(\n", roots, 2, &out, err,
			      sizeof(err)) == -EINVAL && !out,
	      "prune/bad decls");
	/* results are remembered by content: asked again, the same; other
	 * roots (a NULL one against "") or decls, their own */
	roots[0] = "\tcall __gt_a, (%gt_ctx);\n";
	roots[1] = NULL;
	for (int i = 0; i < 3; i++) {
		CHECK(ptx_prune_decls(decls, roots, 2, &out, err,
				      sizeof(err)) == 0 &&
		      contains(out, ".func __gt_b(") &&
		      !contains(out, ".func __gt_c"), "prune/asked again");
		free(out);
	}
	roots[1] = "";
	CHECK(ptx_prune_decls(decls, roots, 2, &out, err, sizeof(err)) == 0 &&
	      contains(out, ".func __gt_b("), "prune/empty root");
	free(out);
	roots[0] = "\tcall __gt_c, ();\n";
	CHECK(ptx_prune_decls(decls, roots, 2, &out, err, sizeof(err)) == 0 &&
	      contains(out, ".func __gt_c(") && !contains(out, ".func __gt_b("),
	      "prune/new roots, new result");
	free(out);
	CHECK(ptx_prune_decls(decls + 11, roots, 2, &out, err,
			      sizeof(err)) == 0 && contains(out, ".func __gt_c("),
	      "prune/new decls, new result");
	free(out);
	CHECK(ptx_prune_decls(".func f(\n", roots, 2, &out, err,
			      sizeof(err)) == -EINVAL && !out,
	      "prune/bad decls again");
}

static void test_splice_shape(void)
{
	struct ptx_module *m, *o = NULL;
	char err[256], *out = NULL, *out2 = NULL;
	int calls = 0, rc;
	struct ptx_splice_req req = {
		.match = match_first, .match_arg = &calls,
		.decls = decls_text, .entry = entry_text, .exit = exit_text,
		.min_major = 7, .min_minor = 0,
	};

	if (ptx_parse(hand, strlen(hand), &m, err, sizeof(err)))
		return;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == 2, "splice/two kernels instrumented");
	CHECK(calls == 4, "splice/match called once per entry");
	if (rc < 0) {
		printf("# %s\n", err);
		goto out;
	}
	CHECK(contains(out, ".version 7.0\n"), "splice/version raised");
	CHECK(count_of(out, PTX_CTX_DECL) == 2,
	      "splice/context parameter added");
	CHECK(contains(out, "first_param_4[16],\n\t" PTX_CTX_DECL "\n)"),
	      "splice/context parameter is last");
	CHECK(contains(out, "ld.param.s16 \t%gt_arg1, [first_param_1];"),
	      "splice/s16 argument sign-extended");
	CHECK(contains(out, "ld.param.u64 \t%gt_arg4, [first_param_4];"),
	      "splice/aligned aggregate loaded whole");
	CHECK(contains(out, "ld.param.u32 \t%gt_piece, [first_param_3+4];"),
	      "splice/aggregate assembled from pieces");
	CHECK(contains(out, "mov.u64 \t%gt_arg13, 0;"),
	      "splice/missing argument is zero");
	CHECK(contains(out, "mov.u64 \t%gt_t0, %globaltimer;"),
	      "splice/t0 read when used");
	CHECK(!contains(out, "%gt_uniq"), "splice/uniq replaced");
	CHECK(contains(out, "@!%p1 bra \t$__gt"), "splice/guarded ret inverted");
	CHECK(contains(out, "@%p2 bra \t$__gt") == false &&
	      contains(out, "@q bra \t$__gt"), "splice/negated guard");
	CHECK(contains(out, "\t.reg .b64 \t%gt_arg1;\n\t.reg .b64 \t%gt_arg2;"),
	      "splice/argument registers declared");
	/* decls sit before the first function, after the header */
	CHECK(strstr(out, "__gt_probe_mix(") < strstr(out, ".extern .func") &&
	      strstr(out, ".address_size 64") < strstr(out, "__gt_probe_total"),
	      "splice/decls placement");
	/* the entry code follows the declarations and precedes $L__top */
	CHECK(strstr(out, ".shared .align 4 .b8 buf[64];") <
	      strstr(out, "ld.param.u64 \t%gt_ctx, [__gt_ctx];") &&
	      strstr(out, "ld.param.u64 \t%gt_ctx, [__gt_ctx];") <
	      strstr(out, "$L__top:"), "splice/entry placement");
	if (!ptx_parse(out, strlen(out), &o, err, sizeof(err))) {
		const struct ptx_func *a = ptx_find_entry(m, "second");
		const struct ptx_func *b = ptx_find_entry(o, "second");
		char *ta = a ? item_text(m, a) : NULL;
		char *tb = b ? item_text(o, b) : NULL;

		CHECK(ta && tb && !strcmp(ta, tb), "splice/untouched kernel "
		      "byte-identical");
		b = ptx_find_entry(o, "first");
		CHECK(b && b->nparams == 6 && b->nsites == 3,
		      "splice/output parses with the same sites");
		free(ta);
		free(tb);
		/* splicing twice is refused */
		rc = ptx_splice(o, &req, &out2, err, sizeof(err));
		CHECK(rc == -EEXIST && out2 == NULL && err[0],
		      "splice/already instrumented");
	} else {
		CHECK(0, "splice/output parses");
		printf("# %s\n", err);
	}
out:
	free(out);
	free(out2);
	ptx_free(o);
	ptx_free(m);
}

/*
 * Comments in a parameter list (issue 31): a "//" after the last
 * parameter swallowed the added context parameter, which ptxas rejected.
 */
static void test_splice_param_comments(void)
{
	static const char text[] =
		".version 7.0\n.target sm_75\n.address_size 64\n\n"
		".visible .entry first(\n"
		"\t.param .u64 first_param_0, /* in */\n"
		"\t/* between */ .param .u32 first_param_1 // last\n"
		")\n{\n\tret;\n}\n"
		".visible .entry third(.param .u32 third_param_0/*x*/)\n"
		"{\n\tret;\n}\n";
	struct ptx_module *m, *o = NULL;
	char err[256], *out = NULL;
	int calls = 0, rc;
	struct ptx_splice_req req = {
		.match = match_first, .match_arg = &calls,
		.exit = exit_text, .min_major = 7, .min_minor = 0,
	};

	if (ptx_parse(text, strlen(text), &m, err, sizeof(err))) {
		CHECK(0, "splice/comments: input parses");
		printf("# %s\n", err);
		return;
	}
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == 2, "splice/comments: both kernels instrumented");
	CHECK(out && contains(out, "first_param_1,\n\t" PTX_CTX_DECL " // last"),
	      "splice/comments: context parameter before a // comment");
	CHECK(out && contains(out, "third_param_0,\n\t" PTX_CTX_DECL "/*x*/"),
	      "splice/comments: context parameter before a /* */ comment");
	if (out && !ptx_parse(out, strlen(out), &o, err, sizeof(err))) {
		const struct ptx_func *f = ptx_find_entry(o, "first");
		const struct ptx_func *t = ptx_find_entry(o, "third");

		CHECK(f && f->nparams == 3 && t && t->nparams == 2,
		      "splice/comments: the context parameter is declared");
	} else {
		CHECK(0, "splice/comments: output parses");
	}
	free(out);
	ptx_free(o);
	ptx_free(m);
}

/* the agent's "reads argN as 0" check (issue 31) */
static void test_highest_arg(void)
{
	CHECK(ptx_highest_arg(NULL) == -1 && ptx_highest_arg("mov.u64 %r1, 0;") == -1,
	      "highest_arg/none");
	CHECK(ptx_highest_arg("add.u64 %x, %gt_arg1, %gt_arg12;\n"
			      "mov.u64 %y, %gt_arg7;") == 12,
	      "highest_arg/highest of several");
	CHECK(ptx_highest_arg("mov.u64 %y, %gt_arg3x; %gt_argv; %gt_arg2") == 2,
	      "highest_arg/whole names only");
}

static void test_splice_options(void)
{
	static const char *const names[] = { "third", NULL };
	struct ptx_module *m;
	char err[256], *out = NULL;
	struct ptx_splice_req req = { .names = names, .exit = "\tnop;\n" };
	int rc;

	if (ptx_parse(hand, strlen(hand), &m, err, sizeof(err)))
		return;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == 1 && contains(out, ".version 6.4"),
	      "options/names list, version kept");
	CHECK(!contains(out, "%gt_t0"), "options/no t0 unless used");
	/* the exit text goes before the closing brace of third */
	CHECK(contains(out, "add.u32 \t%r1, %r1, 1;\n\t{\n\tnop;\n\t}\n}"),
	      "options/fall-off exit");
	free(out);
	out = NULL;

	req.flags = PTX_SPLICE_ONLY_MATCHED | PTX_SPLICE_T0;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == 1 && !contains(out, ".entry first") &&
	      contains(out, ".entry second") && !contains(out, "launcher") &&
	      contains(out, ".entry third") && contains(out, "vprintf"),
	      "options/only matched (and referenced) kernels");
	CHECK(contains(out, "mov.u64 \t%gt_t0, %globaltimer;"),
	      "options/t0 on request");
	free(out);
	out = NULL;

	req.flags = PTX_SPLICE_STRICT_ARGS;
	req.entry = "\tmov.u64 %gt_arg1, %gt_arg1;\n";
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == -EINVAL && !out && contains(err, "%gt_arg1"),
	      "options/strict arguments");
	req.entry = "\tadd.u64 %gt_arg5000, 1;\n";
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == -EINVAL && !out, "options/argument index bound");
	req.entry = NULL;
	req.flags = 0;
	req.names = NULL;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == 4, "options/every kernel by default");
	free(out);
	ptx_free(m);
}

/* A register cap the JIT honours even with launch bounds: .maxnreg. */
static void test_splice_maxnreg(void)
{
	static const char *const names[] = { "first", "third", NULL };
	static const char capped[] =
		".version 7.0\n.target sm_80\n.address_size 64\n"
		".visible .entry k()\n.maxnreg 24\n{\n\tret;\n}\n";
	struct ptx_module *m;
	char err[256], *out = NULL;
	struct ptx_splice_req req = { .names = names, .exit = "\tnop;\n",
				      .maxnreg = 40 };
	int rc;

	if (ptx_parse(hand, strlen(hand), &m, err, sizeof(err)))
		return;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == 2 && contains(out, ".minnctapersm 2\n.maxnreg 40\n{"),
	      "maxnreg/after the launch bounds");
	CHECK(contains(out, "third_param_0\n)\n.maxnreg 40\n{") ||
	      contains(out, ".maxnreg 40\n{\n\t.reg .b32 \t%r<2>;"),
	      "maxnreg/a kernel without directives");
	CHECK(count_of(out, ".maxnreg") == 2, "maxnreg/matched kernels only");
	free(out);
	out = NULL;
	req.maxnreg = 0;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == 2 && !contains(out, ".maxnreg"), "maxnreg/none unless asked");
	free(out);
	out = NULL;
	ptx_free(m);

	if (ptx_parse(capped, strlen(capped), &m, err, sizeof(err)))
		return;
	req.names = NULL;
	req.maxnreg = 40;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	CHECK(rc == 1 && count_of(out, ".maxnreg") == 1 &&
	      contains(out, ".maxnreg 24"), "maxnreg/the kernel's own kept");
	free(out);
	ptx_free(m);
}

static void test_errors(void)
{
	static const struct { const char *name, *text, *want; } cases[] = {
		{ "no version", ".target sm_75\n", "no .version" },
		{ "bad version", ".version 7\n", "bad .version" },
		{ "open comment", ".version 7.0\n/* x", "unterminated" },
		{ "open string", ".version 7.0\n.pragma \"x;\n", "unterminated" },
		{ "no name", ".version 7.0\n.entry (", "function name" },
		{ "open body", ".version 7.0\n.entry k() { ret;", "end of text" },
		{ "extra brace", ".version 7.0\n.entry k() { ret; } }",
		  "unexpected '}'" },
		{ "bad param", ".version 7.0\n.entry k(.param x, ) {}",
		  "without a type" },
		{ "param array", ".version 7.0\n.entry k(.param .b8 [4]) {}",
		  "array bound" },
		{ "guard", ".version 7.0\n.entry k() { @ ; }", "guard" },
		{ "brackets", ".version 7.0\n.entry k() { ld.u32 %r1, [x); }",
		  "unexpected ')'" },
	};
	char err[256], name[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ptx_module *m = (void *)1;
		int rc = ptx_parse(cases[i].text, strlen(cases[i].text), &m,
				   err, sizeof(err));

		snprintf(name, sizeof(name), "errors/%s", cases[i].name);
		CHECK(rc == -EINVAL && !m && contains(err, cases[i].want) &&
		      contains(err, "ptx line "), name);
		if (!contains(err, cases[i].want))
			printf("# %s\n", err);
	}
}

/* ------------------------------------------------------------ fuzz -- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* Parse (and splice) TEXT; false if the contract was broken. */
static bool fuzz_one(const char *text, size_t len, bool must_fail)
{
	struct ptx_splice_req req = {
		.decls = decls_text, .entry = entry_text, .exit = warp_text,
		.min_major = 7,
	};
	struct ptx_module *m;
	char err[256], *out;
	int rc = ptx_parse(text, len, &m, err, sizeof(err));

	if (rc)
		return rc == -EINVAL && err[0] && !m;
	if (must_fail) {
		ptx_free(m);
		return false;
	}
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	ptx_free(m);
	if (rc < 0)
		return err[0] && !out;
	free(out);
	return out != NULL;
}

static int fuzz(const char *tag, const char *text, size_t len, int n)
{
	static const char junk[] = "{}()[];:@!%.$\"/*\n ,+-0";
	struct ptx_module *m;
	char err[256], *buf = malloc(len + 64);
	int bad = 0, runs = 0;

	if (!buf || ptx_parse(text, len, &m, err, sizeof(err))) {
		free(buf);
		return -1;
	}
	/* truncated inside a body: an error, always */
	for (int i = 0; i < n / 4; i++, runs++) {
		const struct ptx_func *f = &m->funcs[rnd(m->nfuncs)];
		size_t cut;

		if (!f->is_def)
			continue;
		cut = f->body_open + 1 + rnd(f->body_close - f->body_open);
		bad += !fuzz_one(text, cut, true);
	}
	for (int i = 0; i < n - n / 4; i++, runs++) {
		size_t l = len;

		memcpy(buf, text, len);
		for (int k = 1 + rnd(4); k-- && l > 1;) {
			size_t at = rnd(l);

			switch (rnd(4)) {
			case 0:		/* overwrite */
				buf[at] = junk[rnd(sizeof(junk) - 1)];
				break;
			case 1:		/* delete a run */
				{
					size_t d = 1 + rnd(l - at < 40 ?
							   l - at : 40);

					memmove(buf + at, buf + at + d,
						l - at - d);
					l -= d;
				}
				break;
			case 2:		/* insert */
				if (l < len + 60) {
					memmove(buf + at + 1, buf + at,
						l - at);
					buf[at] = junk[rnd(sizeof(junk) - 1)];
					l++;
				}
				break;
			default:	/* truncate anywhere */
				l = at;
				break;
			}
		}
		bad += !fuzz_one(buf, l, false);
	}
	printf("# fuzz %s: %d runs, %d contract violations\n", tag, runs, bad);
	ptx_free(m);
	free(buf);
	return bad;
}

/* ------------------------------------------------------- with nvcc -- */

static char tmpdir[64];

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (p = malloc(n + 1))) {
		if (fread(p, 1, n, f) != (size_t)n) {
			free(p);
			p = NULL;
		} else {
			p[n] = 0;
			*len = n;
		}
	}
	fclose(f);
	return p;
}

static bool spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(text, f) >= 0;

	if (f)
		ok &= fclose(f) == 0;
	return ok;
}

/* Run CMD; its output (stdout and stderr) in *OUT.  The exit status. */
static int run(const char *cmd, char **out)
{
	char *full, buf[4096];
	size_t len = 0, n;
	FILE *p;
	int st;

	*out = NULL;
	if (asprintf(&full, "%s 2>&1", cmd) < 0)
		return -1;
	p = popen(full, "r");
	free(full);
	if (!p)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0) {
		char *q = realloc(*out, len + n + 1);

		if (!q)
			break;
		*out = q;
		memcpy(q + len, buf, n);
		len += n;
		q[len] = 0;
	}
	st = pclose(p);
	if (!*out)
		*out = strdup("");
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Registers ptxas -v reports for kernel NAME, or -1. */
static int regs_of(const char *log, const char *name)
{
	char key[600];
	const char *p;

	snprintf(key, sizeof(key), "entry function '%s'", name);
	if (!log || !(p = strstr(log, key)) || !(p = strstr(p, "Used ")))
		return -1;
	return atoi(p + 5);
}

/* ptxas -v -arch=ARCH on TEXT: 0 and the log, or the exit status. */
static int ptxas(const char *ptxas_bin, const char *text, const char *arch,
		 const char *tag, char **log)
{
	char path[192], cmd[512];

	snprintf(path, sizeof(path), "%s/%s.ptx", tmpdir, tag);
	if (!spit(path, text))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s -v -arch=%s %s -o %s/%s.cubin",
		 ptxas_bin, arch, path, tmpdir, tag);
	return run(cmd, log);
}

static int count_calls(const char *name, void *arg)
{
	const char *first = arg;

	return !strcmp(name, first);
}

static void check_kernel_file(const char *cu, const char *nvcc,
			      const char *ptxas_bin, char **keep)
{
	char base[64], name[160], path[160], cmd[1024], err[256];
	char *src, *text = NULL, *log = NULL, *out = NULL, *olog[2] = { 0 };
	char *slog[2] = { 0 }, archopt[64] = "-arch=sm_80";
	const char *arches[2];
	struct ptx_module *m = NULL, *o = NULL;
	size_t len;
	int rc, narch = 0;
	const char *b = strrchr(cu, '/') ? strrchr(cu, '/') + 1 : cu;

	snprintf(base, sizeof(base), "%.*s", (int)(strcspn(b, ".")), b);
	/* "// nvcc: -arch=sm_XX" on the first line picks the target */
	if ((src = slurp(cu, &len))) {
		sscanf(src, "// nvcc: %63s", archopt);
		free(src);
	}
	snprintf(path, sizeof(path), "%s/%s.ptx", tmpdir, base);
	snprintf(cmd, sizeof(cmd), "%s -ptx %s %s -o %s", nvcc, archopt, cu,
		 path);
	snprintf(name, sizeof(name), "nvcc/%s/compiles", base);
	rc = run(cmd, &log);
	CHECK(rc == 0, name);
	if (rc) {
		printf("# %s\n", log);
		goto out;
	}
	text = slurp(path, &len);
	snprintf(name, sizeof(name), "nvcc/%s/parses", base);
	rc = text ? ptx_parse(text, len, &m, err, sizeof(err)) : -EIO;
	CHECK(rc == 0 && m->nfuncs > 0, name);
	if (rc) {
		printf("# %s\n", err);
		goto out;
	}

	/* every kernel: thread probes; ptxas for the target and sm_90 */
	struct ptx_splice_req req = {
		.decls = decls_text, .entry = entry_text, .exit = exit_text,
		.min_major = 7, .min_minor = 0,
	};
	int nent = 0;

	for (int i = 0; i < m->nfuncs; i++)
		nent += m->funcs[i].is_entry && m->funcs[i].is_def;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	snprintf(name, sizeof(name), "nvcc/%s/splice all", base);
	CHECK(rc == nent && nent > 0, name);
	if (rc < 0) {
		printf("# %s\n", err);
		goto out;
	}
	arches[narch++] = m->target;
	/* arch-specific targets (sm_90a) cannot be assembled for others */
	if (strcmp(m->target, "sm_90") &&
	    m->target[strlen(m->target) - 1] != 'a')
		arches[narch++] = "sm_90";
	for (int a = 0; a < narch; a++) {
		char tag[96];

		snprintf(tag, sizeof(tag), "%s-orig-%s", base, arches[a]);
		rc = ptxas(ptxas_bin, text, arches[a], tag, &olog[a]);
		snprintf(tag, sizeof(tag), "%s-probe-%s", base, arches[a]);
		rc = rc ? rc : ptxas(ptxas_bin, out, arches[a], tag, &slog[a]);
		snprintf(name, sizeof(name), "nvcc/%s/ptxas %s", base,
			 arches[a]);
		CHECK(rc == 0, name);
		if (rc)
			printf("# %s\n", slog[a] ? slog[a] : olog[a]);
	}
	for (int i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i];

		if (!f->is_entry || !f->is_def)
			continue;
		printf("# regs %-10s %-48.48s", base, f->name);
		for (int a = 0; a < narch; a++)
			printf(" %s: %d -> %d", arches[a],
			       regs_of(olog[a], f->name),
			       regs_of(slog[a], f->name));
		printf("\n");
	}
	free(out);
	out = NULL;

	/* the first kernel only, warp probes: the others stay as they were */
	const char *first = NULL;

	for (int i = 0; i < m->nfuncs && !first; i++)
		if (m->funcs[i].is_entry && m->funcs[i].is_def)
			first = m->funcs[i].name;
	req = (struct ptx_splice_req){
		.match = count_calls, .match_arg = (void *)first,
		.entry = warp_text, .exit = warp_text, .min_major = 7,
	};
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	snprintf(name, sizeof(name), "nvcc/%s/splice one (warp)", base);
	CHECK(rc == 1, name);
	if (rc < 0)
		goto out;
	rc = ptx_parse(out, strlen(out), &o, err, sizeof(err));
	bool same = rc == 0 && o->nfuncs == m->nfuncs &&
		    !strncmp(out, text, m->decls_at);

	for (int i = 0; same && i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i], *g = &o->funcs[i];

		if (f->is_entry && !strcmp(f->name, first))
			continue;
		same = f->end - f->start == g->end - g->start &&
		       !memcmp(text + f->start, out + g->start,
			       f->end - f->start);
	}
	snprintf(name, sizeof(name), "nvcc/%s/others byte-identical", base);
	CHECK(same, name);
	free(slog[0]);
	slog[0] = NULL;
	rc = ptxas(ptxas_bin, out, m->target, base, &slog[0]);
	snprintf(name, sizeof(name), "nvcc/%s/ptxas warp %s", base, m->target);
	CHECK(rc == 0, name);
	if (rc)
		printf("# %s\n", slog[0]);
	free(out);
	out = NULL;

	/* only the first kernel in the module */
	req.flags = PTX_SPLICE_ONLY_MATCHED;
	rc = ptx_splice(m, &req, &out, err, sizeof(err));
	free(slog[1]);
	slog[1] = NULL;
	if (rc == 1)
		rc = ptxas(ptxas_bin, out, m->target, base, &slog[1]);
	else
		rc = -1;
	snprintf(name, sizeof(name), "nvcc/%s/only matched assembles", base);
	CHECK(rc == 0 && regs_of(slog[1], first) > 0, name);
	*keep = text;
	text = NULL;
out:
	free(log);
	free(text);
	free(out);
	for (int a = 0; a < 2; a++) {
		free(olog[a]);
		free(slog[a]);
	}
	ptx_free(m);
	ptx_free(o);
}

static const char *find_tool(const char *tool, char *buf, size_t n)
{
	const char *env = getenv("CUDA_HOME");
	char *out = NULL;

	snprintf(buf, n, "%s/bin/%s", env ? env : "/usr/local/cuda", tool);
	if (access(buf, X_OK) == 0)
		return buf;
	snprintf(buf, n, "command -v %s", tool);
	if (run(buf, &out) == 0 && out[0]) {
		out[strcspn(out, "\n")] = 0;
		snprintf(buf, n, "%s", out);
		free(out);
		return buf;
	}
	free(out);
	return NULL;
}

static void test_nvcc(void)
{
	char nvcc_buf[512], ptxas_buf[512], *cmd = NULL, *out = NULL;
	const char *nvcc = find_tool("nvcc", nvcc_buf, sizeof(nvcc_buf));
	const char *ptxas_bin = find_tool("ptxas", ptxas_buf,
					  sizeof(ptxas_buf));
	const char *dirs[] = { "tests/cuda", "../cuda", "../../tests/cuda" };
	glob_t g = { 0 };
	int bad = 0, nfuzz = 0;

	for (size_t i = 0; i < 3 && !g.gl_pathc; i++) {
		char pat[64];

		globfree(&g);
		snprintf(pat, sizeof(pat), "%s/k_*.cu", dirs[i]);
		glob(pat, 0, NULL, &g);
	}
	if (!nvcc || !ptxas_bin || !g.gl_pathc) {
		printf("SKIP nvcc: %s\n", !g.gl_pathc ? "no tests/cuda/k_*.cu" :
		       "no nvcc/ptxas (CUDA_HOME)");
		bad += fuzz("hand", hand, strlen(hand), 3000);
		CHECK(bad == 0, "fuzz/errors, never crashes");
		globfree(&g);
		return;
	}
	strcpy(tmpdir, "/tmp/gt-ptx.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		CHECK(0, "nvcc/temporary directory");
		globfree(&g);
		return;
	}
	printf("# %zu kernel files, %s\n", g.gl_pathc, nvcc);
	bad += fuzz("hand", hand, strlen(hand), 1000);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char *text = NULL;

		check_kernel_file(g.gl_pathv[i], nvcc, ptxas_bin, &text);
		if (text) {
			bad += fuzz(g.gl_pathv[i], text, strlen(text), 300);
			nfuzz += 300;
		}
		free(text);
	}
	CHECK(bad == 0 && nfuzz >= 3000, "fuzz/errors, never crashes");
	globfree(&g);
	if (asprintf(&cmd, "rm -rf '%s'", tmpdir) > 0)
		run(cmd, &out);
	free(cmd);
	free(out);
}

int main(void)
{
	test_read();
	test_splice_shape();
	test_splice_param_comments();
	test_highest_arg();
	test_splice_launch_words();
	test_splice_late_reads();
	test_splice_deferred();
	test_prune();
	test_splice_options();
	test_splice_maxnreg();
	test_errors();
	test_nvcc();
	UNIT_END();
}
