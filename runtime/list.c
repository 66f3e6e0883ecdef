// SPDX-License-Identifier: MIT
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/elf_syms.h"
#include "gpucode/fatbin.h"
#include "runtime/list.h"

static const char *const fixed[] = {
	"BEGIN", "END",
	"interval:s:N", "interval:ms:N", "interval:us:N", "interval:hz:N",
	"uprobe:BIN:FUNC", "uprobe:BIN:FUNC+OFF", "uretprobe:BIN:FUNC",
	"cuda:launch", "cuda:launch:GLOB", "cuda:malloc", "cuda:free",
	"cuda:memcpy", "cuda:sync", "cuda:graph",
	"gpu:kernel:GLOB:entry", "gpu:kernel:GLOB:exit",
	"gpu:warp:GLOB:entry", "gpu:warp:GLOB:exit",
};

/* The GPU kernels of PATH's fatbins, marked instrumentable or not. */
static void list_kernels(const char *path, const char *glob, FILE *out)
{
	struct fatbin_kernels k = { 0 };
	char err[256], a[32];

	if (fatbin_elf_kernels(path, &k, err, sizeof(err)) < 0)
		return;		/* no fatbin: a host-only binary */
	for (size_t i = 0; i < k.n; i++) {
		const struct fatbin_kernel *f = &k.v[i];
		char *dm = syms_demangle(f->name, true);
		const char *name = dm ? dm : f->name;

		if (glob && fnmatch(glob, name, 0) && fnmatch(glob, f->name, 0)) {
			free(dm);
			continue;
		}
		fprintf(out, "gpu:kernel:%s", name);
		if (f->nptx) {
			fputs(" (ptx:", out);
			for (int j = 0; j < f->nptx; j++)
				fprintf(out, " %s", fatbin_arch_str(f->ptx[j], true, a, sizeof(a)));
		}
		if (f->nsass) {
			fputs(f->nptx ? "; sass:" : " (sass only:", out);
			for (int j = 0; j < f->nsass; j++)
				fprintf(out, " %s", fatbin_arch_str(f->sass[j], false, a, sizeof(a)));
		}
		fputs(f->nptx ? ")\n" : "; cannot be instrumented: no PTX)\n", out);
		free(dm);
	}
	fatbin_kernels_free(&k);
}

int list_probes(const char *pattern, int pid, FILE *out)
{
	char exe[64];

	if (pid && !pattern) {
		snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
		pattern = exe;
	}
	if (pattern && (strchr(pattern, '/') || !strncmp(pattern, "uprobe:", 7) ||
			!strncmp(pattern, "uretprobe:", 10))) {
		char path[4096], err[256];
		const char *bin = pattern, *glob = NULL;
		char *tmp = NULL;

		if (!strncmp(pattern, "uprobe:", 7) || !strncmp(pattern, "uretprobe:", 10)) {
			tmp = strdup(strchr(pattern, ':') + 1);
			char *c = tmp ? strchr(tmp, ':') : NULL;

			if (c) {
				*c = 0;
				glob = c + 1;
			}
			bin = tmp;
		}
		if (syms_list_text(pattern, pid, out) < 0) {
			free(tmp);
			return 1;
		}
		if (bin && !syms_resolve(bin, pid, path, sizeof(path), err, sizeof(err)))
			list_kernels(path, glob, out);
		free(tmp);
		return 0;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!pattern || !fnmatch(pattern, fixed[i], 0))
			fprintf(out, "%s\n", fixed[i]);
	return 0;
}
