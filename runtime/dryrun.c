// SPDX-License-Identifier: MIT
/*
 * --dry-run -d ptx with a binary: the agent's splice, done on the
 * binary's fatbins instead of inside the process, so that what the GPU
 * would run can be read (and assembled with ptxas) on a machine without
 * one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "gpucode/fatbin.h"
#include "gpucode/ptx.h"
#include "gpucode/devrt.h"
#include "runtime/dryrun.h"

bool dryrun_match(const char *glob, const char *name)
{
	char *base;
	bool ok;

	if (!fnmatch(glob, name, 0))
		return true;
	base = syms_demangle(name, true);
	ok = base && !fnmatch(glob, base, 0);
	free(base);
	return ok;
}

/*
 * The user's clauses first: each probe's PTX function and the text the
 * splicer pastes into the kernel; then the device runtime they call
 * (thousands of lines) with ALL only, else one line saying so.
 */
static void print_probes(const struct device_set *ds, bool all, FILE *out)
{
	size_t lines = 0;

	for (int i = 0; i < ds->n; i++)
		fprintf(out, "// gputrace probe %d: %s\n%s"
			"// gputrace: %s calls: %s", ds->v[i].func.index,
			ds->v[i].probe->name,
			ds->v[i].func.text ? ds->v[i].func.text : "",
			ds->v[i].probe->name,
			ds->v[i].call ? ds->v[i].call : "\n");
	if (all) {
		fprintf(out, "// gputrace device runtime\n%s", devrt_ptx);
		return;
	}
	for (const char *p = devrt_ptx; (p = strchr(p, '\n')); p++)
		lines++;
	fprintf(out, "// gputrace: device runtime (%zu lines) left out; -d ptx-all shows it\n",
		lines);
}

/* Kernels of one module that the same probes match. */
struct group {
	char *sig;		/* "0,2," : the probes' indices */
	const char **names;	/* NULL-terminated */
	int n;
};

static char *signature(const struct device_set *ds, const char *name)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	for (int i = 0; i < ds->n; i++)
		if (dryrun_match(ds->v[i].probe->func, name))
			fprintf(f, "%d,", i);
	if (fclose(f))
		return NULL;
	return s;
}

/* Group the defined kernels of M by the probes that match them. */
static int group_kernels(const struct device_set *ds,
			 const struct ptx_module *m, struct group **out,
			 int *nout)
{
	struct group *g = calloc(m->nfuncs + 1, sizeof(*g));
	int ng = 0;

	if (!g)
		return -ENOMEM;
	for (int i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i];
		char *sig;
		int k;

		if (!f->is_entry || !f->is_def)
			continue;
		sig = signature(ds, f->name);
		if (!sig)
			goto nomem;
		if (!*sig) {
			free(sig);
			continue;
		}
		for (k = 0; k < ng && strcmp(g[k].sig, sig); k++)
			;
		if (k == ng) {
			g[ng].sig = sig;
			g[ng].names = calloc(m->nfuncs + 1, sizeof(char *));
			ng++;
			if (!g[k].names)
				goto nomem;
		} else {
			free(sig);
		}
		g[k].names[g[k].n++] = f->name;
	}
	*out = g;
	*nout = ng;
	return 0;
nomem:
	for (int k = 0; k < ng; k++) {
		free(g[k].sig);
		free(g[k].names);
	}
	free(g);
	return -ENOMEM;
}

/* The calls of the probes in SIG that fire at entry (or at exit). */
static char *calls(const struct device_set *ds, const char *sig, bool exit,
		   bool *any)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	*any = false;
	for (const char *p = sig; *p;) {
		char *end;
		long i = strtol(p, &end, 10);

		p = end + 1;
		/* an entry probe's deferred updates are applied at exits */
		if (exit && !ds->v[i].probe->retprobe && ds->v[i].func.flush) {
			fputs(ds->v[i].func.flush, f);
			*any = true;
		}
		if (ds->v[i].probe->retprobe != exit || ds->v[i].probe->mem)
			continue;
		fputs(ds->v[i].call ? ds->v[i].call : "", f);
		*any = true;
	}
	if (fclose(f))
		return NULL;
	return s;
}

/* The gpu:mem clauses among SIG (malloc'd, *N of them). */
static struct ptx_mem_clause *mem_clauses(const struct device_set *ds,
					  const char *sig, int *n)
{
	struct ptx_mem_clause *v = calloc(ds->n + 1, sizeof(*v));

	*n = 0;
	for (const char *p = sig; v && *p;) {
		char *end;
		long i = strtol(p, &end, 10);

		p = end + 1;
		if (!ds->v[i].probe->mem)
			continue;
		v[*n].text = ds->v[i].call ? ds->v[i].call : "";
		v[*n].classes = ds->v[i].probe->mem;
		++*n;
	}
	return v;
}

/* -d ptx: what the agent would tell -v of a kernel's memory instructions */
static void mem_note(void *arg, const char *kernel, const char *msg)
{
	fprintf(arg, "// gputrace: %s: %s\n", kernel, msg);
}

static void splice_group(const struct device_set *ds,
			 const struct ptx_module *m, const struct group *g,
			 const char *what, FILE *out)
{
	bool has_entry, has_exit;
	char *entry = calls(ds, g->sig, false, &has_entry);
	char *exit = calls(ds, g->sig, true, &has_exit);
	char err[256], *text = NULL, *notes = NULL;
	size_t nlen = 0;
	FILE *nf = open_memstream(&notes, &nlen);
	int nmem = 0;
	struct ptx_mem_clause *mem = mem_clauses(ds, g->sig, &nmem);
	struct ptx_splice_req req = {
		.names = g->names,
		.decls = ds->decls,
		.entry = has_entry ? entry : NULL,
		.exit = has_exit ? exit : NULL,
		/* probes name their times; the module as the agent JITs it */
		.flags = PTX_SPLICE_ONLY_MATCHED | PTX_SPLICE_PRUNE,
		.min_major = PL_PTX_MIN_MAJOR,
		.min_minor = PL_PTX_MIN_MINOR,
		.mem = mem,
		.nmem = nmem,
		.note = nf ? mem_note : NULL,
		.note_arg = nf,
	};
	int r = entry && exit && mem ?
		ptx_splice(m, &req, &text, err, sizeof(err)) : -ENOMEM;

	if (nf && !fclose(nf) && notes)
		fputs(notes, out);
	free(notes);
	free(mem);
	if (r < 0) {
		fprintf(stderr, "gputrace: %s: %s: cannot splice: %s\n", what,
			g->names[0], r == -ENOMEM ? "out of memory" : err);
	} else {
		const char *v = text;

		/* from the .version line: nvcc's header comments are noise */
		while (v && strncmp(v, ".version", 8)) {
			v = strchr(v, '\n');
			v = v ? v + 1 : NULL;
		}
		fprintf(out, "// gputrace: %s: kernels", what);
		for (int i = 0; i < g->n; i++)
			fprintf(out, " %s", g->names[i]);
		fprintf(out, "\n%s", v ? v : text);
		if (text[0] && text[strlen(text) - 1] != '\n')
			fputc('\n', out);
	}
	free(text);
	free(entry);
	free(exit);
}

static void splice_image(const struct device_set *ds, const char *binary,
			 const struct fatbin_ptx *p, int idx, FILE *out)
{
	struct ptx_module *m = NULL;
	struct group *g = NULL;
	char err[256], arch[32], what[PATH_MAX + 96];
	int ng = 0;

	snprintf(what, sizeof(what), "%s: PTX image %d (%s, PTX %u.%u%s)",
		 binary, idx, fatbin_arch_str(p->arch, true, arch, sizeof(arch)),
		 p->major, p->minor,
		 p->from_cubin ? ", a cubin's .nv_debug_ptx_txt" : "");
	if (ptx_parse(p->text, p->len, &m, err, sizeof(err))) {
		fprintf(stderr, "gputrace: %s: %s\n", what, err);
		return;
	}
	if (group_kernels(ds, m, &g, &ng)) {
		fprintf(stderr, "gputrace: %s: out of memory\n", what);
		ng = 0;
	}
	for (int k = 0; k < ng; k++) {
		splice_group(ds, m, &g[k], what, out);
		free(g[k].sig);
		free(g[k].names);
	}
	free(g);
	ptx_free(m);
}

/* "no kernel of BIN matches GLOB, GLOB2" */
static void no_match(const struct device_set *ds, const char *binary)
{
	fprintf(stderr, "gputrace: no kernel of %s matches ", binary);
	for (int i = 0; i < ds->n; i++) {
		bool dup = false;

		for (int j = 0; j < i; j++)
			dup |= !strcmp(ds->v[j].probe->func, ds->v[i].probe->func);
		if (!dup)
			fprintf(stderr, "%s%s", i ? ", " : "", ds->v[i].probe->func);
	}
	fputc('\n', stderr);
}

static int any_probe_matches(const char *name, void *arg)
{
	const struct device_set *ds = arg;

	for (int j = 0; j < ds->n; j++)
		if (dryrun_match(ds->v[j].probe->func, name))
			return 1;
	return 0;
}

/*
 * The PTX images that hold a matched kernel, each with its number among
 * the binary's PTX images: the others are neither kept nor spliced.  A
 * cubin's .nv_debug_ptx_txt is kept only for a matched kernel that no
 * PTX entry of the binary holds (nvcc -lineinfo with code=[sm,compute]
 * gives both, the agent uses the PTX entry): the second walk.
 */
struct keep {
	const struct device_set *ds;
	struct fatbin_ptx_list pl;
	int *idx;
	int seen;
	bool cubins;		/* this walk: the cubins' PTX only */
	char **have;		/* matched kernels the PTX entries hold */
	size_t nhave;
};

/* Matched NAME held by a kept PTX entry (first walk: noted). */
static int note_have(const char *name, void *arg)
{
	struct keep *k = arg;
	char **v;

	if (!any_probe_matches(name, (void *)k->ds))
		return 0;
	v = realloc(k->have, (k->nhave + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	k->have = v;
	if (!(v[k->nhave] = strdup(name)))
		return -ENOMEM;
	k->nhave++;
	return 0;
}

/* A matched NAME that no PTX entry holds: 1. */
static int not_had(const char *name, void *arg)
{
	struct keep *k = arg;

	if (!any_probe_matches(name, (void *)k->ds))
		return 0;
	for (size_t i = 0; i < k->nhave; i++)
		if (!strcmp(k->have[i], name))
			return 0;
	return 1;
}

static int keep_matched(const struct fatbin_entry *e, void *arg)
{
	struct keep *k = arg;
	int *v, r;

	k->seen++;
	if (e->from_cubin != k->cubins)
		return 0;
	if (k->cubins)
		r = fatbin_ptx_kernels((const char *)e->data, e->size, not_had,
				       k);
	else
		r = fatbin_ptx_kernels((const char *)e->data, e->size,
				       any_probe_matches, (void *)k->ds);
	if (r != 1)
		return 0;
	if (!k->cubins && (r = fatbin_ptx_kernels((const char *)e->data,
						   e->size, note_have, k)) < 0)
		return r;
	v = realloc(k->idx, (k->pl.n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	k->idx = v;
	v[k->pl.n] = k->seen - 1;
	return fatbin_ptx_collect(e, &k->pl);
}

int dryrun_ptx(const struct device_set *ds, const char *binary, bool all,
	       FILE *out)
{
	struct fatbin_kernels ks;
	struct keep kp = { .ds = ds };
	char err[256];
	int matched = 0, r;

	if (!binary) {
		print_probes(ds, all, out);
		return 0;
	}
	if (!ds->n)
		return 0;
	r = fatbin_elf_kernels(binary, &ks, err, sizeof(err));
	if (r) {
		fprintf(stderr, "gputrace: %s: %s\n", binary, err);
		return r < 0 ? r : -EINVAL;
	}
	for (size_t i = 0; i < ks.n; i++) {
		const struct fatbin_kernel *k = &ks.v[i];
		bool hit = false;

		for (int j = 0; j < ds->n && !hit; j++)
			hit = dryrun_match(ds->v[j].probe->func, k->name);
		if (!hit)
			continue;
		matched++;
		if (k->nptx)
			continue;
		fprintf(out, "// gputrace: %s: no usable PTX (SASS only:", k->name);
		for (int a = 0; a < k->nsass; a++) {
			char buf[32];

			fprintf(out, "%s %s", a ? "," : "",
				fatbin_arch_str(k->sass[a], false, buf, sizeof(buf)));
		}
		fputs(")\n", out);
	}
	fatbin_kernels_free(&ks);
	if (!matched) {
		no_match(ds, binary);
		return -ENOENT;
	}
	print_probes(ds, all, out);
	r = fatbin_elf_foreach_kind(binary, FATBIN_KIND_PTX | FATBIN_CUBIN_PTX,
				    keep_matched, &kp, err, sizeof(err));
	if (r >= 0) {
		kp.seen = 0;
		kp.cubins = true;
		r = fatbin_elf_foreach_kind(binary,
					    FATBIN_KIND_PTX | FATBIN_CUBIN_PTX,
					    keep_matched, &kp, err, sizeof(err));
	}
	if (r < 0)
		fprintf(stderr, "gputrace: %s: %s\n", binary, err);
	for (size_t i = 0; r >= 0 && i < kp.pl.n; i++)
		splice_image(ds, binary, &kp.pl.v[i], kp.idx[i], out);
	fatbin_ptx_list_free(&kp.pl);
	free(kp.idx);
	for (size_t i = 0; i < kp.nhave; i++)
		free(kp.have[i]);
	free(kp.have);
	return r < 0 ? r : 0;
}
