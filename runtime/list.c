// SPDX-License-Identifier: MIT
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/elf_syms.h"
#include "gpucode/fatbin.h"
#include "probes/cuda_priv.h"
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
	"gpu:kernel:GLOB:entry", "gpu:kernel:GLOB:exit",
	"gpu:warp:GLOB:entry", "gpu:warp:GLOB:exit",
};

static void collect(const char *path, void *arg)
{
	char err[256];

	/* no fatbin: host code only */
	fatbin_elf_foreach(path, fatbin_kernels_collect, arg, err, sizeof(err));
}

/* One probe line, when PATTERN (NULL: any) matches it. */
static void kernel_line(const char *kind, const char *name,
			const struct fatbin_kernel *f, const char *pattern,
			FILE *out)
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
}

/*
 * The gpu: probes of a target's kernels (PID's mapped files, or the
 * program CMD and the libraries it needs), each kernel by its demangled
 * name without parameters, once.
 */
static void list_kernels(int pid, const char *cmd, const char *pattern,
			 FILE *out)
{
	static const char *const kinds[] = { "kernel", "warp" };
	struct fatbin_kernels k = { 0 };

	cuda_target_files(pid, cmd, collect, &k);
	for (int t = 0; t < 2; t++)
		for (size_t i = 0; i < k.n; i++) {
			char *dm = syms_demangle(k.v[i].name, true);

			kernel_line(kinds[t], dm ? dm : k.v[i].name, &k.v[i],
				    pattern, out);
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

int list_probes(const char *pattern, int pid, const char *cmd, bool verbose,
		FILE *out)
{
	int ret;

	/* -p PID with no pattern, '*' or '*:*': the process's own probes
	 * only, no generic forms (bpftrace 0.17); its gpu: kernels too */
	if (pid && (!pattern || !strcmp(pattern, "*") || !strcmp(pattern, "*:*"))) {
		if (syms_list_text("uprobe:*", pid, NULL, verbose, out) < 0)
			return 1;
		list_kernels(pid, NULL, NULL, out);
		return 0;
	}
	ret = pattern ? list_kernel_probes(pattern, pid, out) : -1;
	if (ret >= 0)
		return ret;
	if (pattern && uprobe_pattern(pattern)) {
		char path[4096], err[256];

		if (syms_list_text(pattern, pid, cmd, verbose, out) < 0)
			return 1;
		/* a bare binary's path: its kernels too */
		if (!strchr(pattern, ':') &&
		    !syms_resolve(pattern, pid, path, sizeof(path), err, sizeof(err)))
			list_kernels(0, path, NULL, out);
		return 0;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		/* a target lists its kernels instead of the generic forms */
		if ((pid || cmd) && !strncmp(fixed[i], "gpu:", 4))
			continue;
		if (!pattern || !fnmatch(pattern, fixed[i], 0))
			fprintf(out, "%s\n", fixed[i]);
	}
	if (pid || cmd)
		list_kernels(pid, cmd, pattern, out);
	return 0;
}
