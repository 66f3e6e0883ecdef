// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/elf_syms.h"
#include "gpucode/cubin_scan.h"
#include "gpucode/fatbin.h"
#include "probes/cuda_priv.h"
#include "probes/gpu_kernels.h"
#include "probes/provider.h"
#include "runtime/list.h"

static const char *const fixed[] = {
	"BEGIN", "END",
	"interval:s:N", "interval:ms:N", "interval:us:N", "interval:hz:N",
	"uprobe:BIN:FUNC", "uprobe:BIN:FUNC+OFF", "uretprobe:BIN:FUNC",
	"usdt:BIN:PROVIDER:NAME", "usdt:BIN:NAME",
	"kprobe:FUNC", "kprobe:FUNC+OFF", "kretprobe:FUNC",
	"tracepoint:CATEGORY:NAME", "rawtracepoint:NAME",
	"profile:hz:N", "profile:s:N", "profile:ms:N", "profile:us:N",
	"software:EVENT:N", "hardware:EVENT:N",
	"cuda:launch", "cuda:launch:GLOB", "cuda:malloc", "cuda:free",
	"cuda:memcpy", "cuda:sync", "cuda:graph", "cuda:complete",
	"cuda:complete:GLOB",
	"gpu:sample", "gpu:sample:GLOB", "gpu:sample:GLOB:PERIOD",
	"gpu:kernel:GLOB:entry", "gpu:kernel:GLOB:exit",
	"gpu:warp:GLOB:entry", "gpu:warp:GLOB:exit",
	"gpu:mem:GLOB", "gpu:mem:GLOB:load", "gpu:mem:GLOB:store",
	"gpu:mem:GLOB:shared",
};

static void collect(const char *path, void *arg)
{
	char err[256];

	/* no fatbin: host code only; a cubin's PTX: .nv_debug_ptx_txt */
	fatbin_elf_foreach_kind(path, FATBIN_CUBIN_PTX, fatbin_kernels_collect,
				arg, err, sizeof(err));
}

/* A cubin found in the target's memory (Triton's): its kernels too */
static void collect_mem(uint8_t *copy, size_t len, void *arg)
{
	char err[256];

	fatbin_elf_foreach_mem_kind(copy, len, FATBIN_CUBIN_PTX,
				    fatbin_kernels_collect, arg, err,
				    sizeof(err));
	free(copy);
}

/* -lv: the builtins of each probe form (probes/cuda.c, probes/gpu.c;
 * tests/accept/list_builtins.sh compiles each one) */
static const struct {
	const char *form, *names;
} form_builtins[] = {
	{ "cuda:launch", "kernel gridDim.x gridDim.y gridDim.z blockDim.x blockDim.y blockDim.z shmem stream" },
	{ "cuda:malloc", "size retval" },
	{ "cuda:free", "arg0" },
	{ "cuda:memcpy", "size kind" },
	{ "cuda:sync", "duration retval" },
	{ "cuda:graph", "stream" },
	{ "cuda:complete", "kernel duration queued stream gridDim.x gridDim.y gridDim.z blockDim.x blockDim.y blockDim.z gpu" },
	{ "gpu:sample", "kernel pc stall samples gpu" },
	{ "gpu:", "kernel launch launch_ns gtime clock gpu smid nsmid warpid laneid blockIdx.x blockIdx.y blockIdx.z threadIdx.x threadIdx.y threadIdx.z blockDim.x blockDim.y blockDim.z gridDim.x gridDim.y gridDim.z pid probe argN" },
};

/* Under LINE (a probe form or a gpu: probe): its builtins, one a line
 * (argN left out when the kernel's own arguments follow). */
static void form_lines(const char *line, bool args_known, FILE *out)
{
	for (size_t i = 0; i < sizeof(form_builtins) / sizeof(form_builtins[0]); i++) {
		const char *f = form_builtins[i].form, *w;
		size_t n = strlen(f);

		if (strncmp(line, f, n) || (line[n] && line[n] != ':' && f[n - 1] != ':'))
			continue;
		for (w = form_builtins[i].names; *w;) {
			size_t k = strcspn(w, " ");

			if (!args_known || strncmp(w, "argN", k))
				fprintf(out, "    %.*s\n", (int)k, w);
			w += k + (w[k] == ' ');
		}
		if (!strncmp(line, "gpu:warp:", 9))
			fputs("    lanes\n", out);
		if (!strncmp(line, "gpu:mem", 7))
			fputs("    lanes\n    addr\n    size\n    store\n"
			      "    sectors\n    insn\n    line\n", out);
		if (!strncmp(line, "gpu:mem", 7) && strstr(line, ":shared"))
			fputs("    conflicts\n", out);
		if (!strncmp(line, "gpu:", 4) && strstr(line, ":exit"))
			fputs("    duration\n", out);
		return;
	}
}

/* One probe line, when PATTERN (NULL: any) matches it. */
static void kernel_line(const char *kind, const char *name,
			const struct fatbin_kernel *f, const char *pattern,
			const char *params, bool verbose, FILE *out)
{
	char line[8192], a[32];

	snprintf(line, sizeof(line), "gpu:%s:%s", kind, name);
	if (pattern && fnmatch(pattern, line, 0))
		return;
	fputs(line, out);
	if (!f->nptx && f->nsass) {
		/* nothing to splice into: device probes skip it */
		fputs(" (SASS only:", out);
		for (int j = 0; j < f->nsass; j++)
			fprintf(out, " %s",
				fatbin_arch_str(f->sass[j], false, a, sizeof(a)));
		fputc(')', out);
	}
	fputc('\n', out);
	if (verbose) {
		form_lines(line, params, out);
		if (params)
			fputs(params, out);
	}
}

/* -lv: kernel NAME's parameters from the PTX of CMD's fatbins */
static const char *params_of(const char *cmd, const char *name)
{
	const struct gpu_kernel *k;
	int n;

	k = gpu_kernels_of(cmd, false, &n);
	for (int i = 0; i < n; i++)
		if (!strcmp(k[i].name, name))
			return k[i].params;
	return NULL;
}

/*
 * The gpu: probes of a target's kernels (PID's mapped files, or the
 * program CMD and the libraries it needs), each kernel by its demangled
 * name without parameters, once.
 */
static void list_kernels(int pid, const char *cmd, const char *pattern,
			 bool verbose, FILE *out)
{
	static const char *const kinds[] = { "kernel", "warp", "mem" };
	struct fatbin_kernels k = { 0 };

	cuda_target_files(pid, cmd, collect, &k);
	if (pid) {
		/* and the modules it loaded from memory (Triton's cubins,
		 * which carry their PTX): docs/attach.md */
		struct cubin_scan sc = { .pid = pid, .ptx_only = true };
		int e = cubin_scan(&sc, collect_mem, &k);

		if (e < 0 && verbose)
			fprintf(stderr, "gputrace: cannot read the mappings of "
				"process %d: %s\n", pid, strerror(-e));
		else if (e >= 0 && sc.cut)
			fprintf(stderr, "gputrace: the first %llu GiB of the "
				"process's anonymous memory searched for "
				"cubins, not the rest\n", (unsigned long long)
				(CUBIN_SCAN_BUDGET >> 30));
	}
	for (int t = 0; t < 3; t++)
		for (size_t i = 0; i < k.n; i++) {
			char *dm = syms_demangle(k.v[i].name, true);

			kernel_line(kinds[t], dm ? dm : k.v[i].name, &k.v[i],
				    pattern, verbose && !pid ?
				    params_of(cmd, k.v[i].name) : NULL, verbose,
				    out);
			free(dm);
		}
	fatbin_kernels_free(&k);
}

/*
 * Does PATTERN list uprobe functions: "uprobe:..."/"uretprobe:..." (or
 * "u:"/"ur:"), a bare path, or a TYPE glob over a path or library
 * ("*:./prog:*")?
 */
static bool uprobe_pattern(const char *pattern)
{
	const char *c = strchr(pattern, ':'), *w = strpbrk(pattern, "*?[");

	if (!strncmp(pattern, "uprobe:", 7) || !strncmp(pattern, "uretprobe:", 10) ||
	    !strncmp(pattern, "u:", 2) || !strncmp(pattern, "ur:", 3))
		return true;
	if (!c)
		return strchr(pattern, '/');
	return w && w < c &&
	       (strchr(c, '/') || !strncmp(c + 1, "lib", 3));
}

/*
 * CMD's program (its first word) exists and is an ELF file: the gpu:
 * listing of a missing one printed nothing, rc 0.  The words are those
 * of the uprobe listing; 0 or 1 (error shown).
 */
static int check_target(const char *cmd)
{
	char word[4096], path[4096], err[256];
	unsigned char magic[4];
	size_t n = strcspn(cmd, " \t");
	FILE *f;

	snprintf(word, sizeof(word), "%.*s", (int)n, cmd);
	if (syms_resolve(word, 0, path, sizeof(path), err, sizeof(err))) {
		fprintf(stderr, "gputrace: %s\n", err);
		return 1;
	}
	if (!(f = fopen(path, "re"))) {
		fprintf(stderr, "gputrace: %s: %s\n", path, strerror(errno));
		return 1;
	}
	n = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	if (n != sizeof(magic) || memcmp(magic, "\177ELF", 4)) {
		fprintf(stderr, "gputrace: %s is not an ELF file\n", path);
		return 1;
	}
	return 0;
}

/* A pattern naming no provider ('*open*', or none at all) lists the
 * probes of every provider that it matches, as bpftrace's -l does. */
static bool any_provider(const char *pattern)
{
	char name[32];
	size_t n;

	if (!pattern)
		return true;
	n = strcspn(pattern, ":");
	if (!pattern[n])
		return !strchr(pattern, '/');
	if (n >= sizeof(name))
		return true;
	memcpy(name, pattern, n);
	name[n] = 0;
	return !provider_find(name) && strcmp(name, "BEGIN") &&
	       strcmp(name, "END") && !strpbrk(pattern + n, "/");
}

int list_probes(const char *pattern, int pid, const char *cmd, bool verbose,
		FILE *out)
{
	int ret;

	if (cmd && !pid && check_target(cmd))
		return 1;
	/* -p PID with no pattern, '*' or '*:*': the process's own probes
	 * only, no generic forms (bpftrace 0.17); its gpu: kernels too */
	if (pid && (!pattern || !strcmp(pattern, "*") || !strcmp(pattern, "*:*"))) {
		if (syms_list_text("uprobe:*", pid, NULL, verbose, out) < 0)
			return 1;
		list_kernels(pid, NULL, NULL, verbose, out);
		return 0;
	}
	ret = pattern ? list_kernel_probes(pattern, pid, verbose, out) : -1;
	if (ret >= 0)
		return ret;
	if (pattern && uprobe_pattern(pattern)) {
		char path[4096], err[256];

		if (syms_list_text(pattern, pid, cmd, verbose, out) < 0)
			return 1;
		/* a bare binary's path: its kernels too */
		if (!strchr(pattern, ':') &&
		    !syms_resolve(pattern, pid, path, sizeof(path), err, sizeof(err)))
			list_kernels(0, path, NULL, verbose, out);
		return 0;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		/* a target lists its kernels instead of the generic forms;
		 * gpu:sample's when the pattern asks for them, not kernels */
		if ((pid || cmd) && !strncmp(fixed[i], "gpu:", 4) &&
		    (!gpu_sample_probe(fixed[i]) || !pattern ||
		     !fnmatch(pattern, "gpu:kernel:x", 0)))
			continue;
		if (!pattern || !fnmatch(pattern, fixed[i], 0)) {
			fprintf(out, "%s\n", fixed[i]);
			if (verbose)
				form_lines(fixed[i], false, out);
		}
	}
	/* a target without a pattern: its probes only, as bpftrace 0.17 */
	if (any_provider(pattern) && (pattern || !(pid || cmd)))
		list_kernel_all(pattern, verbose, out);
	if (pid || cmd)
		list_kernels(pid, cmd, pattern, verbose, out);
	return 0;
}
