// SPDX-License-Identifier: MIT
/*
 * probes/elf_syms.c and probes/uprobe.c: symbol tables (addresses and
 * file offsets checked against this process's own mappings, nm and
 * objdump), demangling and matching, library resolution, probe parsing,
 * wildcard expansion, listing, and (as root) attaching a counting
 * program to a function of this test, scoped to our pid.
 *
 * The test programs of tests/progs are looked up next to this binary
 * (BUILD/tests/test_syms -> BUILD/progs), else in build/progs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <asm/ptrace.h>
#include <libgen.h>
#include <sys/stat.h>

#include <bpf/bpf.h>

#include "compiler/emit.h"
#include "lang/ast.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "tests/unit/unit.h"

/* Functions of our own to look up and probe. */
/* O0 in every build: parse/offset-hex probes +0x4, which must be inside
 * it and on an instruction boundary (push %rbp; mov %rsp,%rbp; ...) */
__attribute__((noinline, optimize("O0"))) int gt_syms_probe_me(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* A C++-mangled name without a C++ compiler: gtdemo::scale(int). */
__attribute__((noinline)) int gt_scale(int x) __asm__("_ZN6gtdemo5scaleEi");
int gt_scale(int x)
{
	__asm__ volatile("" ::: "memory");
	return 3 * x;
}

static char self[PATH_MAX], progs[PATH_MAX];

/* Where the runtime address ADDR of our executable lies in the file. */
static long self_file_offset(uintptr_t addr)
{
	unsigned long start, end, pgoff;
	char line[PATH_MAX + 128], file[PATH_MAX];
	long ret = -1;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		file[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &start, &end,
			   &pgoff, file) < 3 || strcmp(file, self))
			continue;
		if (addr >= start && addr < end)
			ret = (long)(addr - start + pgoff);
	}
	fclose(f);
	return ret;
}

/* First number printed by shell command CMD, or -1. */
static long long run_num(const char *cmd, int base)
{
	char buf[256];
	long long v = -1;
	FILE *f = popen(cmd, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, base);
	while (fgets(buf, sizeof(buf), f))
		;
	pclose(f);
	return v;
}

static void test_self(void)
{
	const struct syms *s;
	const struct syms_func *f, *g, *h;
	char err[512] = "";
	bool amb;

	CHECK(syms_load(self, &s, err, sizeof(err)) == 0, "self/load");
	if (!s)
		return;
	f = syms_lookup(s, "gt_syms_probe_me", &amb);
	CHECK(f != NULL && !amb, "self/lookup");
	if (!f)
		return;
	CHECK(f->size > 0, "self/size");
	CHECK(f->offset == (uint64_t)self_file_offset((uintptr_t)gt_syms_probe_me),
	      "self/offset-matches-mapping");
	CHECK(f->demangled == NULL && !strcmp(syms_display(f), "gt_syms_probe_me"),
	      "self/c-name-not-demangled");

	f = syms_lookup(s, "_ZN6gtdemo5scaleEi", &amb);
	g = syms_lookup(s, "gtdemo::scale(int)", &amb);
	h = syms_lookup(s, "gtdemo::scale", &amb);
	CHECK(f && f == g && f == h, "self/lookup-mangled-demangled-base");
	if (f) {
		CHECK_STR(f->demangled, "gtdemo::scale(int)", "self/demangled");
		CHECK_STR(f->base, "gtdemo::scale", "self/base");
		CHECK(f->offset == (uint64_t)self_file_offset((uintptr_t)gt_scale),
		      "self/cxx-offset");
		CHECK(syms_match(f, "gtdemo::*") && syms_match(f, "_ZN6gtdemo*") &&
		      syms_match(f, "*::scale") && !syms_match(f, "gtdemo::x*"),
		      "self/match");
	}
	CHECK(syms_lookup(s, "gt_no_such_function", &amb) == NULL && !amb,
	      "self/lookup-missing");
	/* the cache hands back the same table */
	{
		const struct syms *s2;

		CHECK(syms_load(self, &s2, err, sizeof(err)) == 0 && s2 == s,
		      "self/cache");
	}
}

static void test_target(void)
{
	const struct syms *s;
	const struct syms_func *f;
	char bin[PATH_MAX + 32], cmd[PATH_MAX * 2], err[512] = "";
	long long addr, foff;
	bool amb;

	snprintf(bin, sizeof(bin), "%s/uprobe_target", progs);
	if (access(bin, R_OK)) {
		printf("SKIP target: no %s (make)\n", bin);
		return;
	}
	CHECK(syms_load(bin, &s, err, sizeof(err)) == 0, "target/load");
	f = syms_lookup(s, "add10", &amb);
	CHECK(f != NULL, "target/add10");
	if (!f)
		return;
	snprintf(cmd, sizeof(cmd),
		 "nm '%s' | awk '$3 == \"add10\" { print $1 }'", bin);
	addr = run_num(cmd, 16);
	CHECK(addr > 0 && (uint64_t)addr == f->addr, "target/addr-vs-nm");
	snprintf(cmd, sizeof(cmd),
		 "objdump -dF --disassemble=add10 '%s' | sed -n 's/.*<add10> (File Offset: \\(0x[0-9a-f]*\\)).*/\\1/p'",
		 bin);
	foff = run_num(cmd, 16);
	CHECK(foff > 0 && (uint64_t)foff == f->offset, "target/offset-vs-objdump");
}

static void test_lib(void)
{
	const struct syms *s;
	const struct syms_func *f;
	char lib[PATH_MAX + 32], err[512] = "";
	bool amb;
	size_t i, n = 0;

	snprintf(lib, sizeof(lib), "%s/libgtdemo.so", progs);
	if (access(lib, R_OK)) {
		printf("SKIP lib: no %s (make)\n", lib);
		return;
	}
	CHECK(syms_load(lib, &s, err, sizeof(err)) == 0, "lib/load");
	f = syms_lookup(s, "gtdemo::twice", &amb);
	CHECK(f == NULL && amb, "lib/overload-ambiguous");
	f = syms_lookup(s, "gtdemo::twice(double)", &amb);
	CHECK(f && !strcmp(f->name, "_ZN6gtdemo5twiceEd"), "lib/overload-full-name");
	f = syms_lookup(s, "gtdemo::scale<int>", &amb);
	CHECK(f && !strcmp(f->demangled, "int gtdemo::scale<int>(int)"),
	      "lib/template-base-name");
	f = syms_lookup(s, "gtdemo::Counter::bump", &amb);
	CHECK(f && !strcmp(f->name, "_ZN6gtdemo7Counter4bumpEi"), "lib/method");
	for (i = 0; i < s->n; i++)
		n += syms_match(&s->funcs[i], "gtdemo::*");
	CHECK(n == 4, "lib/wildcard-count");
}

static void test_libs(void)
{
	char a[PATH_MAX], b[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX], err[512];

	CHECK(syms_find_lib("libc", 0, a, sizeof(a)) == 0 &&
	      strstr(a, "/libc.so.6") && !access(a, R_OK), "libs/ldcache-libc");
	CHECK(syms_find_lib("libc.so.6", 0, b, sizeof(b)) == 0 && !strcmp(a, b),
	      "libs/ldcache-full-name");
	CHECK(syms_find_lib("libc", getpid(), b, sizeof(b)) == 0 &&
	      realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb),
	      "libs/maps-libc");
	CHECK(syms_find_lib("libgt_no_such_lib", 0, b, sizeof(b)) == -ENOENT,
	      "libs/missing");
	/* "libc" must not pick libcrypt or libcap */
	CHECK(syms_find_lib("libc", 0, b, sizeof(b)) == 0 &&
	      !strstr(b, "libcrypt") && !strstr(b, "libcap"), "libs/prefix");
	err[0] = 0;
	CHECK(syms_resolve("libgt_no_such_lib", 0, b, sizeof(b), err,
			   sizeof(err)) == -ENOENT &&
	      !strcmp(err, "cannot find library 'libgt_no_such_lib'"),
	      "libs/resolve-error");
	CHECK(syms_resolve("sh", 0, b, sizeof(b), err, sizeof(err)) == 0 &&
	      b[0] == '/' && !access(b, X_OK), "libs/resolve-path-search");
}

/* A probe as sema makes it: TEXT split at ':' (at most 4 parts). */
static struct probe *mk(const struct provider *prov, const char *text,
			int pid, char *buf, size_t len)
{
	static struct probe p;
	char *s;

	memset(&p, 0, sizeof(p));
	p.prov = prov;
	p.name = (char *)text;
	p.target_pid = pid;
	p.prog_fd = -1;
	snprintf(buf, len, "%s", text);
	s = strchr(buf, ':');
	*s++ = 0;
	while (s && p.nargs < 4) {
		char *next = p.nargs < 3 ? strchr(s, ':') : NULL;

		if (next)
			*next++ = 0;
		p.args[p.nargs++] = s;
		s = next;
	}
	return &p;
}

static void test_parse(void)
{
	char text[PATH_MAX + 64], buf[PATH_MAX + 64], err[512];
	const struct syms *s;
	const struct syms_func *f;
	struct builtin_src src;
	struct probe *p;
	bool amb;
	int arg;

	syms_load(self, &s, err, sizeof(err));
	f = syms_lookup(s, "gt_syms_probe_me", &amb);
	if (!f)
		return;
	snprintf(text, sizeof(text), "uprobe:%s:gt_syms_probe_me+0x4", self);
	p = mk(&provider_uprobe, text, 0, buf, sizeof(buf));
	CHECK(provider_uprobe.parse(p, err, sizeof(err), &arg) == 0 &&
	      p->offset == f->offset + 4 && !strcmp(p->func, "gt_syms_probe_me") &&
	      !strcmp(p->path, self) && !p->retprobe, "parse/offset-hex");

	snprintf(text, sizeof(text), "uprobe:%s:gtdemo::scale", self);
	p = mk(&provider_uprobe, text, 0, buf, sizeof(buf));
	CHECK(provider_uprobe.parse(p, err, sizeof(err), &arg) == 0 &&
	      !strcmp(p->func, "gtdemo::scale(int)"), "parse/cxx-colons");

	snprintf(text, sizeof(text), "uretprobe:%s:gt_syms_probe_me+4", self);
	p = mk(&provider_uretprobe, text, 0, buf, sizeof(buf));
	CHECK(provider_uretprobe.parse(p, err, sizeof(err), &arg) == -EINVAL &&
	      arg == 1 && !strcmp(err, "uretprobe cannot take an offset"),
	      "parse/uretprobe-offset");

	snprintf(text, sizeof(text), "uprobe:%s:gt_nope", self);
	p = mk(&provider_uprobe, text, 0, buf, sizeof(buf));
	CHECK(provider_uprobe.parse(p, err, sizeof(err), &arg) == -EINVAL &&
	      arg == 1 && strstr(err, "no function 'gt_nope' in /"),
	      "parse/no-function");

	snprintf(text, sizeof(text), "uprobe:%s:gt_syms_probe_me+100000", self);
	p = mk(&provider_uprobe, text, 0, buf, sizeof(buf));
	CHECK(provider_uprobe.parse(p, err, sizeof(err), &arg) == -EINVAL &&
	      arg == 1 && strstr(err, "outside"), "parse/offset-outside");

	p = mk(&provider_uprobe, "uprobe:libgt_nope:f", 0, buf, sizeof(buf));
	CHECK(provider_uprobe.parse(p, err, sizeof(err), &arg) == -EINVAL &&
	      arg == 0 && !strcmp(err, "cannot find library 'libgt_nope'"),
	      "parse/no-library");

	p = mk(&provider_uprobe, "uprobe:libc", 0, buf, sizeof(buf));
	CHECK(provider_uprobe.parse(p, err, sizeof(err), &arg) == -EINVAL &&
	      arg == -1, "parse/too-few-args");

	/* -p: the library the target has mapped */
	p = mk(&provider_uretprobe, "uretprobe:libc:malloc", getpid(), buf,
	       sizeof(buf));
	CHECK(provider_uretprobe.parse(p, err, sizeof(err), &arg) == 0 &&
	      strstr(p->path, "libc.so.6") && p->retprobe &&
	      !strcmp(p->func, "malloc"), "parse/libc-with-pid");

	/* builtins */
	p = mk(&provider_uprobe, "uprobe:/x:f", 0, buf, sizeof(buf));
	p->func = "f";
	CHECK(provider_uprobe.has_builtin(p, "arg9") &&
	      provider_uprobe.has_builtin(p, "func") &&
	      provider_uprobe.has_builtin(p, "pid") &&
	      !provider_uprobe.has_builtin(p, "retval") &&
	      !provider_uprobe.has_builtin(p, "arg10"), "builtins/uprobe");
	CHECK(provider_uprobe.builtin_src(p, "arg0", &src) == 0 &&
	      src.kind == BSRC_CTX_U64 &&
	      src.off == offsetof(struct pt_regs, rdi), "builtins/arg0-rdi");
	CHECK(provider_uprobe.builtin_src(p, "arg5", &src) == 0 &&
	      src.kind == BSRC_CTX_U64 &&
	      src.off == offsetof(struct pt_regs, r9), "builtins/arg5-r9");
	CHECK(provider_uprobe.builtin_src(p, "arg6", &src) == 0 &&
	      src.kind == BSRC_USTACK_U64 && src.off == 8 &&
	      src.sp_off == offsetof(struct pt_regs, rsp), "builtins/arg6-stack");
	CHECK(provider_uprobe.builtin_src(p, "arg9", &src) == 0 &&
	      src.off == 32, "builtins/arg9-stack");
	CHECK(provider_uprobe.builtin_src(p, "func", &src) == 0 &&
	      src.kind == BSRC_STR && !strcmp(src.str, "f"), "builtins/func");
	CHECK(provider_uprobe.builtin_src(p, "pid", &src) == -ENOENT,
	      "builtins/pid-is-codegen's");
	p->prov = &provider_uretprobe;
	CHECK(provider_uretprobe.has_builtin(p, "retval") &&
	      !provider_uretprobe.has_builtin(p, "arg0") &&
	      provider_uretprobe.builtin_src(p, "retval", &src) == 0 &&
	      src.off == offsetof(struct pt_regs, rax), "builtins/retval-rax");
}

static void test_expand_list(void)
{
	char text[PATH_MAX + 64], buf[PATH_MAX + 64], err[512], want[2 * PATH_MAX + 128];
	char bin[PATH_MAX + 32], *mem = NULL, **names = NULL;
	size_t memlen = 0;
	struct probe *p;
	FILE *f;
	int n, i;

	snprintf(bin, sizeof(bin), "%s/uprobe_target", progs);
	if (access(bin, R_OK)) {
		printf("SKIP expand: no %s (make)\n", bin);
		return;
	}
	snprintf(text, sizeof(text), "uprobe:%s:func_?", bin);
	p = mk(&provider_uprobe, text, 0, buf, sizeof(buf));
	n = provider_uprobe.expand(p, &names, err, sizeof(err));
	CHECK(n == 3, "expand/count");
	snprintf(want, sizeof(want), "uprobe:%s:func_b", bin);
	CHECK(n == 3 && !strcmp(names[1], want), "expand/text");
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);

	snprintf(text, sizeof(text), "uprobe:%s:gt_nothing_*", bin);
	p = mk(&provider_uprobe, text, 0, buf, sizeof(buf));
	n = provider_uprobe.expand(p, &names, err, sizeof(err));
	CHECK(n == 0, "expand/none");
	free(names);

	snprintf(text, sizeof(text), "uprobe:%s:func_*+4", bin);
	p = mk(&provider_uprobe, text, 0, buf, sizeof(buf));
	names = NULL;
	CHECK(provider_uprobe.expand(p, &names, err, sizeof(err)) == -EINVAL &&
	      !names, "expand/offset-refused");

	f = open_memstream(&mem, &memlen);
	snprintf(text, sizeof(text), "uretprobe:%s/libgtdemo.so:gtdemo::twice*",
		 progs);
	n = syms_list_text(text, 0, NULL, false, f);
	fclose(f);
	snprintf(want, sizeof(want),
		 "uretprobe:%s/libgtdemo.so:gtdemo::twice(double)\n"
		 "uretprobe:%s/libgtdemo.so:gtdemo::twice(int)\n", progs, progs);
	CHECK(n == 2 && mem && !strcmp(mem, want), "list/sorted-demangled");
	free(mem);

	mem = NULL;
	f = open_memstream(&mem, &memlen);
	n = syms_list_text(bin, 0, NULL, false, f);
	fclose(f);
	snprintf(want, sizeof(want), "uprobe:%s:add10\n", bin);
	CHECK(n > 5 && mem && strstr(mem, want), "list/bare-path");
	free(mem);
}

/* as root: count calls of gt_syms_probe_me through a pid-scoped uprobe */
static void test_attach(const struct provider *prov, const char *what)
{
	char text[PATH_MAX + 64], buf[PATH_MAX + 64], err[512] = "", name[64];
	uint64_t count = 0;
	uint32_t key = 0;
	int map, prog, arg, i, ret;
	struct probe *p;
	volatile unsigned char *entry = (volatile unsigned char *)gt_syms_probe_me;

	snprintf(name, sizeof(name), "attach/%s", what);
	if (geteuid() || access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		printf("SKIP %s: needs root and the uprobe PMU\n", name);
		return;
	}
	map = bpf_map_create(BPF_MAP_TYPE_ARRAY, "gt_test", 4, 8, 1, NULL);
	{
		struct bpf_insn insns[] = {
			I_ST(BPF_W, BPF_REG_10, -4, 0),
			I_LD64_LO(BPF_REG_1, BPF_PSEUDO_MAP_FD, map),
			I_LD64_HI(0),
			I_MOV64_REG(BPF_REG_2, BPF_REG_10),
			I_ALU64_IMM(BPF_ADD, BPF_REG_2, -4),
			I_CALL(BPF_FUNC_map_lookup_elem),
			I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 2),
			I_MOV64_IMM(BPF_REG_1, 1),
			I_RAW(BPF_STX | BPF_DW | BPF_ATOMIC, BPF_REG_0, BPF_REG_1, 0, BPF_ADD),
			I_MOV64_IMM(BPF_REG_0, 0),
			I_EXIT(),
		};
		prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "gt_test", "GPL", insns,
				     sizeof(insns) / sizeof(insns[0]), NULL);
	}
	snprintf(name, sizeof(name), "attach/%s-load", what);
	CHECK(map >= 0 && prog >= 0, name);
	if (map < 0 || prog < 0)
		goto out;
	snprintf(text, sizeof(text), "%s:%s:gt_syms_probe_me", prov->name, self);
	p = mk(prov, text, getpid(), buf, sizeof(buf));
	ret = prov->parse(p, err, sizeof(err), &arg);
	if (!ret)
		ret = prov->attach(p, prog, err, sizeof(err));
	if (ret)
		printf("# %s\n", err);
	snprintf(name, sizeof(name), "attach/%s", what);
	CHECK(ret == 0 && p->nfds == 2, name);
	/* the kernel's breakpoint is in our memory now */
	snprintf(name, sizeof(name), "attach/%s-int3", what);
	CHECK(*entry == 0xcc, name);
	for (i = 0; i < 5; i++)
		gt_syms_probe_me(i);
	bpf_map_lookup_elem(map, &key, &count);
	snprintf(name, sizeof(name), "attach/%s-count", what);
	CHECK(count == 5, name);
	prov->detach(p);
	prov->detach(p);
	snprintf(name, sizeof(name), "attach/%s-detached", what);
	CHECK(*entry != 0xcc && p->nfds == 0, name);
out:
	if (prog >= 0)
		close(prog);
	if (map >= 0)
		close(map);
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char tmp[PATH_MAX];

	if (n <= 0)
		return 1;
	self[n] = 0;
	/* BUILD/tests/test_syms -> BUILD/progs */
	snprintf(tmp, sizeof(tmp), "%s", self);
	snprintf(progs, sizeof(progs), "%s/progs", dirname(dirname(tmp)));
	if (access(progs, R_OK) && realpath("build/progs", tmp))
		snprintf(progs, sizeof(progs), "%s", tmp);

	test_self();
	test_target();
	test_lib();
	test_libs();
	test_parse();
	test_expand_list();
	test_attach(&provider_uprobe, "uprobe");
	test_attach(&provider_uretprobe, "uretprobe");
	syms_cache_drop();
	ast_free_all();
	UNIT_END();
}
