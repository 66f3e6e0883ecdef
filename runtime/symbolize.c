// SPDX-License-Identifier: MIT
/*
 * Symbolization.  User addresses: the mapping of /proc/PID/maps holding
 * the address gives the file and the file offset (addr - start + pgoff);
 * the symbol whose [offset, offset + size) holds it names it (bcc's rule:
 * a symbol without a size never matches).  Maps are read when a pid is
 * first met and again when an address falls outside them (a library
 * loaded since); a process gone before its first look-up leaves its
 * addresses as numbers, as in bpftrace.  Kernel addresses: the last
 * text symbol of /proc/kallsyms at or below the address.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/elf_syms.h"
#include "runtime/symbolize.h"

/* the symbols of one ELF file, by file offset */
struct sym_file {
	char *path;
	struct syms syms;
	const struct syms_func **by_off;
	size_t n;
	struct sym_file *next;
};

struct sym_map {
	uint64_t start, end, pgoff;
	char *path;		/* as the maps show it (perf's module) */
	struct sym_file *file;	/* NULL until needed */
};

struct sym_proc {
	int pid;
	struct sym_map *maps;
	size_t n;
	struct sym_proc *next;
};

struct ksym {
	uint64_t addr;
	char *name;
};

static struct sym_file *files;
static struct sym_proc *procs;
static struct ksym *ksyms;
static size_t nksyms;
static bool ksyms_read;

static void *xalloc(void *p)
{
	if (!p) {
		fputs("gputrace: out of memory\n", stderr);
		abort();
	}
	return p;
}

static int cmp_off(const void *a, const void *b)
{
	const struct syms_func *x = *(const struct syms_func **)a;
	const struct syms_func *y = *(const struct syms_func **)b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	/* at one address: the larger, then the name, so output is stable */
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

static struct sym_file *file_get(const char *path)
{
	struct sym_file *f;
	char err[256];

	for (f = files; f; f = f->next)
		if (!strcmp(f->path, path))
			return f;
	f = xalloc(calloc(1, sizeof(*f)));
	f->path = xalloc(strdup(path));
	/* unreadable: an empty table, so it is not tried again */
	if (!syms_read(path, SYMS_DEBUG, &f->syms, err, sizeof(err))) {
		f->by_off = xalloc(calloc(f->syms.n + 1, sizeof(*f->by_off)));
		for (size_t i = 0; i < f->syms.n; i++)
			if (f->syms.funcs[i].size)
				f->by_off[f->n++] = &f->syms.funcs[i];
		qsort(f->by_off, f->n, sizeof(*f->by_off), cmp_off);
	}
	f->next = files;
	files = f;
	return f;
}

/* The symbol holding file offset OFF, looking back past nested ones. */
static const struct syms_func *file_find(const struct sym_file *f, uint64_t off)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (f->by_off[mid]->offset <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: the first symbol after OFF */
	for (size_t i = lo, steps = 0; i > 0 && steps < 64; i--, steps++) {
		const struct syms_func *s = f->by_off[i - 1];

		if (off < s->offset + s->size)
			return s;
	}
	return NULL;
}

static void proc_free_maps(struct sym_proc *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->maps[i].path);
	free(p->maps);
	p->maps = NULL;
	p->n = 0;
}

/* (Re)read /proc/PID/maps: file-backed mappings only.  0 or -errno. */
static int proc_read_maps(struct sym_proc *p)
{
	char path[64], line[PATH_MAX + 128];
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	proc_free_maps(p);
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, pgoff;
		char *file = strchr(line, '/');
		struct sym_map *m;

		if (!file || sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64,
				    &start, &end, &pgoff) != 3)
			continue;
		file[strcspn(file, "\n")] = 0;
		if (p->n == cap) {
			cap = cap ? cap * 2 : 32;
			p->maps = xalloc(realloc(p->maps, cap * sizeof(*m)));
		}
		m = &p->maps[p->n++];
		m->start = start;
		m->end = end;
		m->pgoff = pgoff;
		m->file = NULL;
		m->path = xalloc(strdup(file));
	}
	fclose(f);
	return 0;
}

/* An address as C++ streams print a pointer: 0x1f, but 0 for null. */
static const char *hex(uint64_t addr)
{
	static char buf[24];

	snprintf(buf, sizeof(buf), addr ? "0x%" PRIx64 : "0", addr);
	return buf;
}

static struct sym_proc *proc_get(int pid)
{
	struct sym_proc *p;

	for (p = procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	p = xalloc(calloc(1, sizeof(*p)));
	p->pid = pid;
	proc_read_maps(p);	/* gone: no maps, numbers only */
	p->next = procs;
	procs = p;
	return p;
}

static struct sym_map *proc_find(struct sym_proc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->n; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return &p->maps[i];
	return NULL;
}

static struct sym_file *map_file(int pid, struct sym_map *m)
{
	char alt[PATH_MAX + 32];

	if (m->file)
		return m->file;
	/* the target may live in another mount namespace */
	if (access(m->path, R_OK)) {
		snprintf(alt, sizeof(alt), "/proc/%d/root%s", pid, m->path);
		m->file = file_get(alt);
	} else {
		m->file = file_get(m->path);
	}
	return m->file;
}

char *symbolize_user(int pid, uint64_t addr, bool offset, bool module)
{
	struct sym_proc *p = proc_get(pid);
	struct sym_map *m = proc_find(p, addr);
	const struct syms_func *f = NULL;
	char *out = NULL;
	uint64_t off = 0;

	/* outside every mapping: maybe a library loaded since */
	if (!m && p->n && !proc_read_maps(p))
		m = proc_find(p, addr);
	if (m) {
		off = addr - m->start + m->pgoff;
		f = file_find(map_file(pid, m), off);
	}
	if (f) {
		char o[24] = "";

		if (offset)
			snprintf(o, sizeof(o), "+%" PRIu64, off - f->offset);
		if (module && asprintf(&out, "%s%s (%s)", syms_display(f), o,
				       m->path) < 0)
			out = NULL;
		if (!module && asprintf(&out, "%s%s", syms_display(f), o) < 0)
			out = NULL;
	} else if (asprintf(&out, "%s%s", hex(addr),
			    module ? " ([unknown])" : "") < 0) {
		out = NULL;
	}
	return xalloc(out);
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Text symbols of /proc/kallsyms (bcc leaves out b, d and r ones). */
static void ksyms_load(void)
{
	char line[512], name[256], type;
	size_t cap = 0;
	uint64_t addr;
	FILE *f = fopen("/proc/kallsyms", "re");

	ksyms_read = true;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 ||
		    !addr || strchr("bBdDrR", type))
			continue;
		if (nksyms == cap) {
			cap = cap ? cap * 2 : 65536;
			ksyms = xalloc(realloc(ksyms, cap * sizeof(*ksyms)));
		}
		ksyms[nksyms].addr = addr;
		ksyms[nksyms++].name = xalloc(strdup(name));
	}
	fclose(f);
	/* kallsyms is mostly sorted already */
	for (size_t i = 1; i < nksyms; i++)
		if (ksyms[i].addr < ksyms[i - 1].addr) {
			qsort(ksyms, nksyms, sizeof(*ksyms), cmp_ksym);
			break;
		}
}

char *symbolize_kernel(uint64_t addr, bool offset)
{
	size_t lo = 0, hi;
	char *out = NULL;

	if (!ksyms_read)
		ksyms_load();
	hi = nksyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0) {
		out = strdup(hex(addr));
	} else if (offset) {
		if (asprintf(&out, "%s+%" PRIu64, ksyms[lo - 1].name,
			     addr - ksyms[lo - 1].addr) < 0)
			out = NULL;
	} else {
		out = strdup(ksyms[lo - 1].name);
	}
	return xalloc(out);
}

void symbolize_reset(void)
{
	while (files) {
		struct sym_file *f = files;

		files = f->next;
		syms_free(&f->syms);
		free(f->by_off);
		free(f->path);
		free(f);
	}
	while (procs) {
		struct sym_proc *p = procs;

		procs = p->next;
		proc_free_maps(p);
		free(p);
	}
	for (size_t i = 0; i < nksyms; i++)
		free(ksyms[i].name);
	free(ksyms);
	ksyms = NULL;
	nksyms = 0;
	ksyms_read = false;
}
