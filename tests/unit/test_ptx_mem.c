// SPDX-License-Identifier: MIT
/*
 * gpu:mem's part of the PTX reader and splicer (gpucode/ptx_mem.c):
 * instruction classification, address operand recovery, the sites of a
 * hand-written kernel (numbering, .loc lines, guards, what cannot be
 * recovered), the splice around them (class filters, constants, the
 * guard, -v notes, the site limit) and ptxas on the result for sm_75
 * (no redux.sync) and sm_90.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpucode/ptx.h"
#include "tests/unit/unit.h"

static void test_classify(void)
{
	static const struct {
		const char *op;
		int ret;
		unsigned cls;
		bool store;
		unsigned size;
	} t[] = {
		{ "ld.global.f32", 1, PTX_MEM_LOAD, false, 4 },
		{ "ld.global.nc.v4.f32", 1, PTX_MEM_LOAD, false, 16 },
		{ "ld.global.nc.L1::evict_last.u32", 1, PTX_MEM_LOAD, false, 4 },
		{ "ld.global.L2::128B.v2.u64", 1, PTX_MEM_LOAD, false, 16 },
		{ "ld.u8", 1, PTX_MEM_LOAD, false, 1 },
		{ "ld.volatile.global.s16", 1, PTX_MEM_LOAD, false, 2 },
		{ "ldu.global.f64", 1, PTX_MEM_LOAD, false, 8 },
		{ "st.global.v2.u64", 1, PTX_MEM_STORE, true, 16 },
		{ "st.b128", 1, PTX_MEM_STORE, true, 16 },
		{ "atom.global.add.f32", 1, PTX_MEM_STORE, true, 4 },
		{ "atom.global.cas.b64", 1, PTX_MEM_STORE, true, 8 },
		{ "atom.add.noftz.f16x2", 1, PTX_MEM_STORE, true, 4 },
		{ "red.global.add.u32", 1, PTX_MEM_STORE, true, 4 },
		{ "red.relaxed.gpu.global.add.u64", 1, PTX_MEM_STORE, true, 8 },
		{ "ld.shared.f32", 1, PTX_MEM_SHARED, false, 4 },
		{ "ld.shared.v4.u32", 1, PTX_MEM_SHARED, false, 16 },
		{ "st.shared::cta.b64", 1, PTX_MEM_SHARED, true, 8 },
		{ "atom.shared.add.u32", 1, PTX_MEM_SHARED, true, 4 },
		{ "ld.shared::cluster.u32", 0, 0, false, 0 },
		{ "ld.param.u64", 0, 0, false, 0 },
		{ "ld.param::entry.u64", 0, 0, false, 0 },
		{ "ld.local.u32", 0, 0, false, 0 },
		{ "st.local.u32", 0, 0, false, 0 },
		{ "ld.const.f32", 0, 0, false, 0 },
		{ "cp.async.ca.shared.global", 0, 0, false, 0 },
		{ "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", 0, 0, false, 0 },
		{ "st.async.shared::cluster.b32", 0, 0, false, 0 },
		{ "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 0, 0, false, 0 },
		{ "mov.u32", 0, 0, false, 0 },
		{ "lds", 0, 0, false, 0 },
	};
	char name[160];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		unsigned cls, size;
		bool store;
		int r = ptx_mem_classify(t[i].op, strlen(t[i].op), &cls, &store,
					 &size);

		snprintf(name, sizeof(name), "mem/classify %s", t[i].op);
		CHECK(r == t[i].ret && (!r || (cls == t[i].cls &&
		      store == t[i].store && size == t[i].size)), name);
	}
}

static void test_addr(void)
{
	static const struct {
		const char *text;
		int ret;
		const char *base;
		bool is_reg;
		long long off;
	} t[] = {
		{ "%rd4", 0, "%rd4", true, 0 },
		{ "%rd4+8", 0, "%rd4", true, 8 },
		{ "%rd4+-16", 0, "%rd4", true, -16 },
		{ " %r3 + 4 ", 0, "%r3", true, 4 },
		{ "%rd1-4", 0, "%rd1", true, -4 },
		{ "_ZZ6kernelE4tile", 0, "_ZZ6kernelE4tile", false, 0 },
		{ "smem+128", 0, "smem", false, 128 },
		{ "0x100", 0, "", false, 256 },
		{ "%rd1+%rd2", -EINVAL, NULL, false, 0 },
		{ "%rd1+", -EINVAL, NULL, false, 0 },
		{ "", -EINVAL, NULL, false, 0 },
		{ "%rd1 8", -EINVAL, NULL, false, 0 },
	};
	char name[96];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct ptx_mem_addr a;
		int r = ptx_mem_addr(t[i].text, strlen(t[i].text), &a);

		snprintf(name, sizeof(name), "mem/addr [%s]", t[i].text);
		CHECK(r == t[i].ret && (r || (!strcmp(a.base, t[i].base) &&
		      a.is_reg == t[i].is_reg && a.off == t[i].off)), name);
	}
}

static const char module[] =
	".version 8.0\n"
	".target %s\n"
	".address_size 64\n"
	".file 1 \"k.cu\"\n"
	".global .align 4 .u32 gcount;\n"
	"\n"
	".visible .entry k(\n"
	"\t.param .u64 k_param_0,\n"
	"\t.param .u32 k_param_1\n"
	")\n"
	"{\n"
	"\t.reg .pred %%p<3>;\n"
	"\t.reg .b32 %%r<9>;\n"
	"\t.reg .f32 %%f<4>;\n"
	"\t.reg .b64 %%rd<6>;\n"
	"\t// demoted variable\n"
	"\t.shared .align 4 .b8 tile[512];\n"
	"\t.loc 1 10 3\n"
	"\tld.param.u64 %%rd1, [k_param_0];\n"		/* insn 0 */
	"\tld.param.u32 %%r1, [k_param_1];\n"		/* 1 */
	"\tcvta.to.global.u64 %%rd2, %%rd1;\n"		/* 2 */
	"\tmov.u32 %%r2, %%tid.x;\n"			/* 3 */
	"\tmul.wide.u32 %%rd3, %%r2, 4;\n"		/* 4 */
	"\tadd.s64 %%rd4, %%rd2, %%rd3;\n"		/* 5 */
	"\t.loc 1 12 5\n"
	"\tld.global.nc.f32 %%f1, [%%rd4+4];\n"	/* 6: load, line 12 */
	"\tshl.b32 %%r3, %%r2, 2;\n"			/* 7 */
	"\tmov.u32 %%r4, tile;\n"			/* 8 */
	"\tadd.s32 %%r5, %%r4, %%r3;\n"			/* 9 */
	"\tst.shared.f32 [%%r5], %%f1;\n"		/* 10: shared */
	"\tbar.sync 0;\n"				/* 11 */
	"\tld.shared.v2.f32 {%%f2, %%f3}, [tile+8];\n"	/* 12: shared */
	"\tsetp.ge.u32 %%p1, %%r2, %%r1;\n"		/* 13 */
	"$L__BB0_2: @%%p1 bra $L__BB0_3;\n"		/* 14 */
	"\t.loc 1 15 7\n"
	"\tadd.f32 %%f2, %%f2, %%f3;\n"			/* 15 */
	"\t@!%%p1 st.global.f32 [%%rd4], %%f2;\n"	/* 16: store, guarded */
	"\tatom.global.add.u32 %%r6, [%%rd2+-8], 1;\n"	/* 17: store */
	"\tld.u32 %%r7, [gcount];\n"			/* 18: generic, a variable */
	"$L__BB0_3:\n"
	"\tld.local.u32 %%r8, [%%rd5];\n"		/* 19: not covered */
	"\t@%%p2 bra.uni $L__BB0_2;\n"		/* 20: a back edge */
	"\tret;\n"					/* 21 */
	"}\n";

struct notes {
	char text[2048];
	int n;
};

static void note(void *arg, const char *kernel, const char *msg)
{
	struct notes *n = arg;
	size_t len = strlen(n->text);

	snprintf(n->text + len, sizeof(n->text) - len, "%s: %s\n", kernel, msg);
	n->n++;
}

static struct ptx_module *parse(const char *target)
{
	char text[sizeof(module) + 32], err[256];
	struct ptx_module *m = NULL;

	snprintf(text, sizeof(text), module, target);
	if (ptx_parse(text, strlen(text), &m, err, sizeof(err)))
		printf("# %s\n", err);
	return m;
}

static void test_sites(void)
{
	struct ptx_module *m = parse("sm_90");
	struct ptx_mem_site *v = NULL;
	int n = 0;

	CHECK(m && ptx_mem_sites(m, ptx_find_entry(m, "k"), &v, &n) == 0 &&
	      n == 6, "mem/sites: six memory instructions");
	if (n != 6) {
		free(v);
		ptx_free(m);
		return;
	}
	CHECK(v[0].insn == 6 && v[0].line == 12 && v[0].cls == PTX_MEM_LOAD &&
	      v[0].size == 4 && v[0].global && !v[0].why &&
	      !strcmp(v[0].addr.base, "%rd4") && v[0].addr.bits == 64 &&
	      v[0].addr.off == 4, "mem/sites: ld.global.nc [%rd4+4]");
	CHECK(v[1].insn == 10 && v[1].cls == PTX_MEM_SHARED && v[1].store &&
	      v[1].addr.bits == 32 && !v[1].why,
	      "mem/sites: st.shared [%r5], a 32-bit register");
	CHECK(v[2].insn == 12 && v[2].cls == PTX_MEM_SHARED && v[2].size == 8 &&
	      !v[2].addr.is_reg && !strcmp(v[2].addr.base, "tile") &&
	      v[2].addr.off == 8 && !v[2].why,
	      "mem/sites: ld.shared.v2 [tile+8]");
	CHECK(v[3].insn == 16 && v[3].line == 15 && v[3].store &&
	      v[3].guard && v[3].guard_neg &&
	      !strncmp(m->text + v[3].guard, "%p1", v[3].guard_len),
	      "mem/sites: @!%p1 st.global, after a labelled bra");
	CHECK(v[4].insn == 17 && v[4].store && v[4].addr.off == -8,
	      "mem/sites: atom [%rd2+-8]");
	CHECK(v[5].insn == 18 && v[5].why && strstr(v[5].why, "generic"),
	      "mem/sites: a generic access to a variable is told, not guessed");
	free(v);
	ptx_free(m);
}

static const char *ptxas_bin(void)
{
	static const char *const c[] = { "/usr/local/cuda/bin/ptxas", NULL };
	const char *env = getenv("CUDA_HOME");
	static char buf[512];

	if (env) {
		snprintf(buf, sizeof(buf), "%s/bin/ptxas", env);
		if (!access(buf, X_OK))
			return buf;
	}
	for (int i = 0; c[i]; i++)
		if (!access(c[i], X_OK))
			return c[i];
	return NULL;
}

/* ptxas for ARCH on TEXT: its exit status (-1: could not run). */
static int assemble(const char *text, const char *arch)
{
	char path[] = "/tmp/gt-ptxmem-XXXXXX", cmd[1024];
	const char *bin = ptxas_bin();
	int fd = mkstemp(path), rc;
	FILE *f;

	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
		return -1;
	}
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s -arch=%s %s -o /dev/null", bin, arch, path);
	rc = system(cmd);
	unlink(path);
	return rc;
}

static int count_of(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

static void test_splice(const char *target)
{
	const struct ptx_mem_clause mem[] = {
		{ "{ .reg .b64 %gq_<6>;\n" "%gt_uniq_x: mov.u64 %gq_0, %gt_maddr;\n"
		  "mov.u64 %gq_1, %gt_msect; mov.u64 %gq_2, %gt_minsn;\n"
		  "mov.u64 %gq_3, %gt_mline; mov.u64 %gq_4, %gt_msize;\n"
		  "mov.u64 %gq_5, %gt_mstore; }\n",
		  PTX_MEM_LOAD | PTX_MEM_STORE },
		{ "{ .reg .b64 %gq_<2>;\n"
		  "mov.u64 %gq_0, %gt_mconf; mov.u64 %gq_1, %gt_maddr; }\n",
		  PTX_MEM_SHARED },
	};
	struct ptx_module *m = parse(target);
	struct notes notes = { { 0 }, 0 };
	struct ptx_splice_req req = {
		.mem = mem, .nmem = 2, .note = note, .note_arg = &notes,
		.min_major = 7, .min_minor = 4,
	};
	char err[256], name[96], *out = NULL;
	const char *p;
	int sites = 0;

	snprintf(name, sizeof(name), "mem/splice %s", target);
	CHECK(m && ptx_splice(m, &req, &out, err, sizeof(err)) == 1, name);
	if (!out) {
		ptx_free(m);
		return;
	}
	for (p = out; (p = strstr(p, "// gputrace mem: insn")); p++)
		sites++;
	snprintf(name, sizeof(name), "mem/splice %s: five sites", target);
	CHECK(sites == 5, name);
	snprintf(name, sizeof(name), "mem/splice %s: constants filled in", target);
	CHECK(strstr(out, "// gputrace mem: insn 6, line 12: ld.global.nc.f32") &&
	      strstr(out, "mov.u64 %gq_2, 6;") && strstr(out, "mov.u64 %gq_3, 12;") &&
	      strstr(out, "mov.u64 %gq_4, 4;") && strstr(out, "mov.u64 %gq_5, 1;") &&
	      !strstr(out, "%gt_minsn") && !strstr(out, "%gt_uniq"), name);
	snprintf(name, sizeof(name), "mem/splice %s: the guard skips the clause", target);
	CHECK(strstr(out, "@%p1 bra \t$__gt") != NULL, name);
	snprintf(name, sizeof(name), "mem/splice %s: the unrecoverable one told", target);
	CHECK(notes.n == 1 && strstr(notes.text, "k: 1 of 6 memory instructions") &&
	      strstr(notes.text, "insn 18") &&
	      !strstr(out, "insn 18,"), name);
	snprintf(name, sizeof(name), "mem/splice %s: sectors by shuffles, else match",
		 target);
	CHECK(strstr(out, "shfl.sync.up.b32") && strstr(out, "match.any.sync.b64"),
	      name);
	snprintf(name, sizeof(name), "mem/splice %s: conflicts at shared sites only",
		 target);
	CHECK(strstr(out, "%gt_mconf") && strstr(out, "match.any.sync.b32"), name);
	snprintf(name, sizeof(name), "mem/splice %s: lowest address %s", target,
		 strcmp(target, "sm_80") < 0 ? "by shuffles" : "by redux.sync");
	CHECK(strcmp(target, "sm_80") < 0 ?
	      strstr(out, "shfl.sync.idx.b32") && !strstr(out, "redux.sync") :
	      strstr(out, "redux.sync.min.u32") != NULL, name);
	/* the lanes run the clauses together: no wait at the end */
	snprintf(name, sizeof(name), "mem/splice %s: no site waits at its end",
		 target);
	CHECK(count_of(out, "bar.warp.sync") == 0, name);
	if (ptxas_bin()) {
		snprintf(name, sizeof(name), "mem/splice %s: ptxas", target);
		CHECK(assemble(out, target) == 0, name);
	} else {
		printf("SKIP mem/splice %s: ptxas: no CUDA toolkit\n", target);
	}
	free(out);
	ptx_free(m);
}

/* More memory instructions than the splice takes: told, the rest works. */
static void test_limit(void)
{
	const struct ptx_mem_clause mem[] = {
		{ "mov.u64 %gt_ma, %gt_msect;\n", PTX_MEM_LOAD },
	};
	struct notes notes = { { 0 }, 0 };
	struct ptx_splice_req req = {
		.mem = mem, .nmem = 1, .note = note, .note_arg = &notes,
		.entry = "mov.u64 %gt_ctx, %gt_ctx;\n",
	};
	size_t cap = 64 * (PTX_MEM_MAX_SITES + 8) + 512, len;
	char *text = malloc(cap), err[256], *out = NULL;
	struct ptx_module *m = NULL;

	if (!text)
		return;
	len = snprintf(text, cap, ".version 8.0\n.target sm_90\n"
		       ".address_size 64\n.visible .entry big(.param .u64 a)\n{\n"
		       "\t.reg .b64 %%rd<2>;\n\t.reg .b32 %%r<2>;\n"
		       "\tld.param.u64 %%rd1, [a];\n");
	for (int i = 0; i <= PTX_MEM_MAX_SITES; i++)
		len += snprintf(text + len, cap - len,
				"\tld.global.u32 %%r1, [%%rd1+%d];\n", 4 * i);
	snprintf(text + len, cap - len, "\tret;\n}\n");
	CHECK(!ptx_parse(text, strlen(text), &m, err, sizeof(err)) &&
	      ptx_splice(m, &req, &out, err, sizeof(err)) == 1 && out &&
	      !strstr(out, "gputrace mem:") && strstr(out, "gputrace probe: entry") &&
	      notes.n == 1 && strstr(notes.text, "more than gpu:mem's"),
	      "mem/limit: too many memory instructions told, entry kept");
	free(out);
	ptx_free(m);
	free(text);
}

/* Mutated modules that still parse: the site scan and splice never crash. */
static void test_fuzz(void)
{
	const struct ptx_mem_clause mem[] = {
		{ "mov.u64 %gt_ma, %gt_msect;\nmov.u64 %gt_ma, %gt_maddr;\n",
		  PTX_MEM_LOAD | PTX_MEM_STORE },
		{ "mov.u64 %gt_ma, %gt_mconf;\n", PTX_MEM_SHARED },
	};
	static const char junk[] = "[]{};:@!%+-.,x0 \n/*";
	char base[sizeof(module) + 32], text[sizeof(module) + 32], err[256];
	struct ptx_splice_req req = { .mem = mem, .nmem = 2 };
	uint32_t r = 7;
	int parsed = 0, spliced = 0;

	snprintf(base, sizeof(base), module, "sm_90");
	for (int i = 0; i < 3000; i++) {
		size_t len = strlen(base);
		struct ptx_module *m = NULL;
		char *out = NULL;

		memcpy(text, base, len + 1);
		for (int k = 0; k < 1 + i % 4; k++) {
			r = r * 1103515245 + 12345;
			size_t at = (r >> 8) % len;

			r = r * 1103515245 + 12345;
			text[at] = junk[(r >> 8) % (sizeof(junk) - 1)];
		}
		if (i % 7 == 0)
			text[(r >> 4) % len] = 0;
		if (ptx_parse(text, strlen(text), &m, err, sizeof(err)))
			continue;
		parsed++;
		spliced += ptx_splice(m, &req, &out, err, sizeof(err)) >= 0;
		free(out);
		ptx_free(m);
	}
	printf("# mem fuzz: %d of 3000 mutated modules parsed, %d spliced\n",
	       parsed, spliced);
	CHECK(parsed > 0, "mem/fuzz: mutated modules, no crash");
}

/* A module for a GPU before sm_70 keeps its kernel, without sites. */
static void test_old_target(void)
{
	const struct ptx_mem_clause mem[] = {
		{ "mov.u64 %gt_ma, %gt_msect;\n", PTX_MEM_LOAD },
	};
	struct ptx_module *m = parse("sm_61");
	struct notes notes = { { 0 }, 0 };
	struct ptx_splice_req req = {
		.mem = mem, .nmem = 1, .note = note, .note_arg = &notes,
	};
	char err[256], *out = NULL;

	CHECK(m && ptx_splice(m, &req, &out, err, sizeof(err)) == 1 && out &&
	      !strstr(out, "gputrace mem:") && notes.n == 1 &&
	      strstr(notes.text, "sm_61"), "mem/sm_61: told, left out");
	free(out);
	ptx_free(m);
}

int main(void)
{
	test_classify();
	test_addr();
	test_sites();
	test_splice("sm_75");
	test_splice("sm_90");
	test_limit();
	test_fuzz();
	test_old_target();
	UNIT_END();
}
