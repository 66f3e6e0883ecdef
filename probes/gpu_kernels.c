// SPDX-License-Identifier: MIT
/*
 * -c's kernels for compile-time checks of gpu: probes: a GLOB that
 * matches none, a kernel with SASS only, an argN past a kernel's
 * parameters.  The agent checks again at run time, on what is loaded.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/fatbin.h"
#include "gpucode/ptx.h"
#include "probes/cuda_priv.h"
#include "probes/elf_syms.h"
#include "probes/gpu_kernels.h"

static struct gpu_kernel *ks;
static int nks, capks;
static char *loaded_for;

static struct gpu_kernel *find(const char *name)
{
	for (int i = 0; i < nks; i++)
		if (!strcmp(ks[i].name, name))
			return &ks[i];
	return NULL;
}

static struct gpu_kernel *add(const char *name)
{
	struct gpu_kernel *k = find(name), *v;

	if (k)
		return k;
	if (nks == capks) {
		v = realloc(ks, (capks = capks * 2 + 16) * sizeof(*v));
		if (!v)
			return NULL;
		ks = v;
	}
	k = &ks[nks];
	memset(k, 0, sizeof(*k));
	k->name = strdup(name);
	k->base = syms_demangle(name, true);
	if (!k->name) {
		free(k->base);
		return NULL;
	}
	k->nparams = -1;
	nks++;
	return k;
}

/* "    arg0: .u64 (8 bytes)" lines, as the probe reads argN */
static char *param_lines(const struct ptx_func *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	for (int i = 0; i < f->nparams; i++) {
		const struct ptx_param *q = &f->params[i];

		fprintf(m, "    arg%d: %s", i, q->type);
		if (q->kind == PTX_P_AGGREGATE)
			fprintf(m, "[%u] (%u bytes, by value)", q->elem ? q->size / q->elem : 0,
				q->size);
		else if (q->is_ptr)
			fputs(" (pointer)", m);
		fputc('\n', m);
	}
	fclose(m);
	return buf;
}

/* PTX entries: their parameter counts (the largest where two differ) */
static int from_ptx(const struct fatbin_entry *e, void *arg)
{
	struct ptx_module *m;
	char err[128];
	size_t len = e->size;

	if (!e->is_ptx)
		return 0;
	while (len && e->data[len - 1] == 0)
		len--;
	if (ptx_parse((const char *)e->data, len, &m, err, sizeof(err)))
		return 0;
	for (int i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i];
		struct gpu_kernel *k;

		if (!f->is_entry || !f->is_def || !(k = add(f->name)))
			continue;
		if (f->nparams > k->nparams) {
			k->nparams = f->nparams;
			free(k->params);
			k->params = param_lines(f);
		}
	}
	ptx_free(m);
	return 0;
}

/* SASS entries, only for a dry run: whose kernels have no PTX at all */
static void sass_only(const char *path)
{
	struct fatbin_kernels t = { 0 };
	char err[256];

	fatbin_elf_foreach_kind(path, FATBIN_KIND_ELF, fatbin_kernels_collect,
				&t, err, sizeof(err));
	for (size_t i = 0; i < t.n; i++) {
		struct gpu_kernel *k;
		size_t o = 0;

		if (find(t.v[i].name) || !(k = add(t.v[i].name)))
			continue;
		for (int a = 0; a < t.v[i].nsass && o + 12 < sizeof(k->sass); a++) {
			char buf[32];

			o += snprintf(k->sass + o, sizeof(k->sass) - o, "%s%s",
				      a ? ", " : "",
				      fatbin_arch_str(t.v[i].sass[a], false,
						      buf, sizeof(buf)));
		}
	}
	fatbin_kernels_free(&t);
}

/* PTX entries only, unless WITH_SASS: a program's cubins (gigabytes in
 * a large library) are not decompressed to check a probe's arguments */
static void from_file(const char *path, void *arg)
{
	char err[256];

	fatbin_elf_foreach_kind(path, FATBIN_KIND_PTX, from_ptx, NULL, err,
				sizeof(err));
	if (*(bool *)arg)
		sass_only(path);
}

static void free_all(void)
{
	for (int i = 0; i < nks; i++) {
		free(ks[i].name);
		free(ks[i].base);
		free(ks[i].params);
	}
	free(ks);
	ks = NULL;
	nks = capks = 0;
	free(loaded_for);
	loaded_for = NULL;
}

const struct gpu_kernel *gpu_kernels_of(const char *cmd, bool sass, int *n)
{
	static bool registered, had_sass;

	*n = 0;
	if (!cmd)
		return NULL;
	if (!loaded_for || strcmp(loaded_for, cmd) || (sass && !had_sass)) {
		if (!registered)
			atexit(free_all);
		registered = true;
		free_all();
		loaded_for = strdup(cmd);
		had_sass = sass;
		cuda_target_files(0, cmd, from_file, &sass);
	}
	*n = nks;
	return ks;
}

bool gpu_kernel_match(const char *glob, const struct gpu_kernel *k)
{
	return !fnmatch(glob, k->name, 0) ||
	       (k->base && !fnmatch(glob, k->base, 0));
}

int gpu_glob_check(const char *glob, const char **why)
{
	for (const char *p = glob; *p; p++) {
		if (*p == '\\') {
			if (!p[1]) {
				*why = "a '\\' ends it";
				return p - glob;
			}
			p++;
		} else if (*p == '[') {
			const char *q = p + 1;

			if (*q == '!' || *q == '^')
				q++;
			if (*q == ']')
				q++;
			while (*q && *q != ']')
				q++;
			if (!*q) {
				*why = "'[' without ']'";
				return p - glob;
			}
			p = q;
		}
	}
	return -1;
}
