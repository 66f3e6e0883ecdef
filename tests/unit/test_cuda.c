// SPDX-License-Identifier: MIT
/*
 * The cuda: provider's parts that need no target: GLOB bits, the driver
 * lookup through LD_LIBRARY_PATH, the entry point names against the
 * toolkit's driver stub, and the hidden programs against the kernel's
 * verifier (as root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "gpucode/agent_proto.h"
#include "gpucode/kname.h"
#include "lang/ast.h"
#include "probes/cuda_priv.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "unit.h"

static void test_globs(void)
{
	struct cuda_shared sh = { 0 };

	sh.globs[0] = "gt::vadd*";
	sh.globs[1] = "_Z4vadd*";
	sh.globs[2] = "vadd";
	sh.globs[3] = "*";
	sh.nglobs = 4;
	CHECK(cuda_glob_bits(&sh, "_ZN2gt4vaddIiEEvPKT_S3_PS1_i",
			     "gt::vadd<int>") == (1 | 8), "glob/demangled base");
	CHECK(cuda_glob_bits(&sh, "_Z4vaddPfS_S_i", "vadd") == (2 | 4 | 8),
	      "glob/mangled and base");
	CHECK(cuda_glob_bits(&sh, "reduce_sum", NULL) == 8, "glob/C name");
	sh.nglobs = 3;
	CHECK(cuda_glob_bits(&sh, "reduce_sum", NULL) == 0, "glob/no match");
}

static void test_driver_lookup(void)
{
	char dir[] = "/tmp/test_cuda.XXXXXX", lib[128], got[4096], err[256];
	const char *old = getenv("LD_LIBRARY_PATH");
	char *save = old ? strdup(old) : NULL;
	FILE *f;

	if (!mkdtemp(dir)) {
		CHECK(0, "driver/mkdtemp");
		free(save);
		return;
	}
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
	f = fopen(lib, "w");
	if (f)
		fclose(f);
	setenv("LD_LIBRARY_PATH", dir, 1);
	provider_target_cmd = NULL;
	CHECK(cuda_find_driver(0, got, sizeof(got), err, sizeof(err)) == 0 &&
	      !strcmp(got, lib), "driver/LD_LIBRARY_PATH");
	/* a pid that is not held: not mapped, so its environment counts,
	 * which is ours here */
	CHECK(cuda_find_driver(getpid(), got, sizeof(got), err,
			       sizeof(err)) == 0, "driver/our own pid as a held -c child");
	CHECK(cuda_pid_is_held(getpid()), "driver/our exe is ours");
	unlink(lib);
	rmdir(dir);
	if (save)
		setenv("LD_LIBRARY_PATH", save, 1);
	else
		unsetenv("LD_LIBRARY_PATH");
	free(save);
}

/* Every entry point name is one the driver exports (the stub has all). */
static void test_names(void)
{
	const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
	const struct syms *s;
	char err[256];
	int missing = 0;

	if (access(stub, R_OK) || syms_load(stub, &s, err, sizeof(err))) {
		printf("SKIP entry points: no CUDA toolkit stub at %s\n", stub);
		return;
	}
	for (size_t i = 0; i < cuda_nentries; i++) {
		bool amb;

		if (cuda_entries[i].lay == CL_COMPLETE)
			continue;	/* in the agent, not the driver */
		if (!syms_lookup(s, cuda_entries[i].func, &amb)) {
			printf("FAIL entry points: %s not in the stub\n",
			       cuda_entries[i].func);
			missing++;
		}
	}
	CHECK(missing == 0, "entry points/all in the driver stub");
	syms_cache_drop();
}

/* Load hidden program WHAT with real maps: the kernel's verifier judges. */
static int load_hidden(enum cuda_hidden what, int *fds)
{
	struct cuda_shared sh = { .names_map = 0, .match_map = 1,
				  .pend_map = 2, .calls_map = 3,
				  .knames_map = 4, .scratch_map = 5 };
	char log[65536];
	struct bpf_insn *insns;
	size_t n;
	int fd;

	if (cuda_prog_build(what, &sh, &insns, &n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (insns[i].code == (BPF_LD | BPF_DW | BPF_IMM) &&
		    insns[i].src_reg == BPF_PSEUDO_MAP_FD)
			insns[i].imm = fds[insns[i].imm];
	LIBBPF_OPTS(bpf_prog_load_opts, o, .log_buf = log,
		    .log_size = sizeof(log), .log_level = 1);
	LIBBPF_OPTS(bpf_prog_load_opts, quiet);
	log[0] = 0;
	/* like the loader: a log only on failure (the name hash's loop
	 * logs more than LOG holds) */
	fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "cuda_test", "GPL", insns, n,
			   &quiet);
	if (fd < 0) {
		int e = errno;

		bpf_prog_load(BPF_PROG_TYPE_KPROBE, "cuda_test", "GPL", insns,
			      n, &o);
		printf("verifier log (%s):\n%s\n", strerror(e), log);
		errno = e;
	}
	free(insns);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static void test_programs(void)
{
	static const struct { enum cuda_hidden what; const char *name; } p[] = {
		{ CH_NAME_ENTRY, "progs/name entry" },
		{ CH_KERNEL_ENTRY, "progs/kernel entry" },
		{ CH_NAME_RET, "progs/name return" },
		{ CH_SAVE_ARG1, "progs/save size" },
		{ CH_SAVE_PITCH, "progs/save pitch" },
		{ CH_SAVE_TIME, "progs/save time" },
	};
	int fds[6];

	if (geteuid()) {
		printf("SKIP progs: needs root\n");
		return;
	}
	fds[0] = bpf_map_create(BPF_MAP_TYPE_HASH, "n", 8, CUDA_NAMES_VALUE,
				16, NULL);
	fds[1] = bpf_map_create(BPF_MAP_TYPE_HASH, "m", 8, 8, 16, NULL);
	fds[2] = bpf_map_create(BPF_MAP_TYPE_HASH, "p", 8, 24, 16, NULL);
	fds[3] = bpf_map_create(BPF_MAP_TYPE_HASH, "c", 8, CUDA_CALLS_VALUE,
				16, NULL);
	fds[4] = bpf_map_create(BPF_MAP_TYPE_HASH, "k", 8, KNAME_MAX, 16, NULL);
	fds[5] = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "s", 4, KNAME_MAX,
				1, NULL);
	if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0 || fds[3] < 0 ||
	    fds[4] < 0 || fds[5] < 0) {
		printf("SKIP progs: cannot create maps: %s\n", strerror(errno));
	} else {
		for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
			CHECK(load_hidden(p[i].what, fds) == 0, p[i].name);
	}
	for (int i = 0; i < 6; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * The agent's entry points (gpucode/agent_hentry.h) are the provider's,
 * each under its event, and every entry point of launch, malloc, free,
 * memcpy, sync and graph is one of them (docs/hostpath.md: all run in
 * the agent).
 */
static void test_hentries(void)
{
#define HE_(name, sym, kind) { sym, #kind },
	static const struct { const char *sym, *kind; } he[] = {
		AGENT_HENTRIES(HE_)
	};
#undef HE_
	size_t n = sizeof(he) / sizeof(he[0]), agent = 0;
	bool ok = n == AGENT_HE_END_;

	for (size_t i = 0; i < n; i++) {
		bool found = false;

		for (size_t k = 0; k < cuda_nentries && !found; k++)
			found = !strcmp(cuda_entries[k].func, he[i].sym) &&
				!strcasecmp(cuda_entries[k].event, he[i].kind);
		if (!found) {
			printf("  %s (%s) is no cuda: entry point\n", he[i].sym,
			       he[i].kind);
			ok = false;
		}
	}
	for (size_t k = 0; k < cuda_nentries; k++) {
		const char *ev = cuda_entries[k].event;

		agent += !strcmp(ev, "launch") || !strcmp(ev, "malloc") ||
			 !strcmp(ev, "free") || !strcmp(ev, "memcpy") ||
			 !strcmp(ev, "sync") || !strcmp(ev, "graph");
	}
	CHECK(ok && agent == n, "hentries/the provider's entry points");
}

int main(void)
{
	test_globs();
	test_hentries();
	test_driver_lookup();
	test_names();
	test_programs();
	ast_free_all();
	UNIT_END();
}
