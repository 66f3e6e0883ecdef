// SPDX-License-Identifier: MIT
/*
 * -lv: function arguments from DWARF through libdw.  Each defined
 * subprogram of every CU is indexed by its name (C++: its mangled
 * linkage name), the first one seen winning, with its formal parameters written as
 * bpftrace 0.17 writes them: base types and typedefs by name, "struct
 * X" (or "struct <anonymous>"), pointers as "T*" ("void*" without a
 * type), const as "const T" or, on a pointer, "T* const"; any other
 * type (arrays, function pointers, volatile) is "<unknown type>".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "probes/elf_syms.h"
#include "probes/syms_dwarf.h"

struct fn_args {
	char *name;
	char *args;		/* "\n    int a\n    char* b", or "" */
	size_t seq;		/* order seen: the first of a name wins */
};

struct syms_dwarf {
	struct fn_args *v;
	size_t n, cap;
};

/* Append the name of type DIE to F (an open_memstream). */
static void type_name(Dwarf_Die *die, FILE *f)
{
	Dwarf_Attribute a;
	Dwarf_Die inner;
	const char *n = dwarf_diename(die);
	bool has = dwarf_attr_integrate(die, DW_AT_type, &a) &&
		   dwarf_formref_die(&a, &inner);

	switch (dwarf_tag(die)) {
	case DW_TAG_base_type:
	case DW_TAG_typedef:
		fputs(n ? n : "<unknown type>", f);
		return;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type:
		fprintf(f, "%s %s", dwarf_tag(die) == DW_TAG_structure_type ? "struct" :
			dwarf_tag(die) == DW_TAG_union_type ? "union" : "enum",
			n ? n : "<anonymous>");
		return;
	case DW_TAG_pointer_type:
		if (!has) {
			fputs("void*", f);
			return;
		}
		type_name(&inner, f);
		fputc('*', f);
		return;
	case DW_TAG_const_type:
		if (!has) {
			fputs("const <unknown type>", f);
		} else if (dwarf_tag(&inner) == DW_TAG_pointer_type) {
			type_name(&inner, f);
			fputs(" const", f);
		} else {
			fputs("const ", f);
			type_name(&inner, f);
		}
		return;
	default:
		fputs("<unknown type>", f);
	}
}

/* "\n    TYPE NAME" for each formal parameter of FN (malloc'd). */
static char *params(Dwarf_Die *fn)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	Dwarf_Die c;

	if (!f)
		return NULL;
	if (dwarf_child(fn, &c) == 0) {
		do {
			Dwarf_Attribute a;
			Dwarf_Die t;
			const char *n;

			if (dwarf_tag(&c) != DW_TAG_formal_parameter)
				continue;
			fputs("\n    ", f);
			if (dwarf_attr_integrate(&c, DW_AT_type, &a) &&
			    dwarf_formref_die(&a, &t))
				type_name(&t, f);
			else
				fputs("<unknown type>", f);
			/* bpftrace 0.17 aborts on an unnamed parameter */
			n = dwarf_diename(&c);
			if (n)
				fprintf(f, " %s", n);
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	if (fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

static int add_name(struct syms_dwarf *d, const char *name, Dwarf_Die *fn)
{
	if (d->n == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 256;
		struct fn_args *nv = realloc(d->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		d->v = nv;
		d->cap = ncap;
	}
	d->v[d->n].name = strdup(name);
	d->v[d->n].args = params(fn);
	d->v[d->n].seq = d->n;
	if (!d->v[d->n].name || !d->v[d->n].args) {
		free(d->v[d->n].name);
		free(d->v[d->n].args);
		return -ENOMEM;
	}
	d->n++;
	return 0;
}

/*
 * A C function by its DW_AT_name, as bpftrace looks it up (glibc's
 * linkage names are internal aliases: __GI__IO_adjust_column), a C++
 * one by its mangled linkage name, which is the symbol's.
 */
static int add_fn(Dwarf_Die *fn, void *arg)
{
	Dwarf_Attribute a;
	const char *name = dwarf_diename(fn), *link;

	if (dwarf_hasattr(fn, DW_AT_declaration))
		return DWARF_CB_OK;
	link = dwarf_formstring(dwarf_attr_integrate(fn, DW_AT_linkage_name, &a));
	if (link && !strncmp(link, "_Z", 2))
		name = link;
	if (name && add_name(arg, name, fn))
		return DWARF_CB_ABORT;
	return DWARF_CB_OK;
}

/* By name, then in the order seen, so the first of a name leads. */
static int cmp_fn(const void *a, const void *b)
{
	const struct fn_args *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->seq < y->seq ? -1 : x->seq > y->seq);
}

static int index_dwarf(Dwarf *dw, struct syms_dwarf *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    dwarf_getfuncs(&cu, add_fn, d, 0) > 0)
			return -ENOMEM;
		off = next;
	}
	if (d->n)
		qsort(d->v, d->n, sizeof(*d->v), cmp_fn);
	return 0;
}

/* PATH's DWARF, else its debug file's: an open fd and Dwarf. */
static Dwarf *open_dwarf(const char *path, int *fdp)
{
	char dbg[PATH_MAX];
	Dwarf *dw;
	Elf *e;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*fdp = -1;
	if (fd < 0)
		return NULL;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (dw) {
		*fdp = fd;
		return dw;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && !syms_debug_file(e, path, dbg, sizeof(dbg))) {
		elf_end(e);
		close(fd);
		fd = open(dbg, O_RDONLY | O_CLOEXEC);
		dw = fd < 0 ? NULL : dwarf_begin(fd, DWARF_C_READ);
		if (dw) {
			*fdp = fd;
			return dw;
		}
	} else {
		elf_end(e);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

int syms_dwarf_open(const char *path, struct syms_dwarf **out)
{
	struct syms_dwarf *d;
	Dwarf *dw;
	int fd, ret;

	*out = NULL;
	dw = open_dwarf(path, &fd);
	if (!dw)
		return -ENOENT;
	d = calloc(1, sizeof(*d));
	ret = d ? index_dwarf(dw, d) : -ENOMEM;
	dwarf_end(dw);
	close(fd);
	if (ret) {
		syms_dwarf_close(d);
		return ret;
	}
	*out = d;
	return 0;
}

static int cmp_key(const void *k, const void *e)
{
	return strcmp(k, ((const struct fn_args *)e)->name);
}

const char *syms_dwarf_args(const struct syms_dwarf *d, const char *name)
{
	const struct fn_args *f;

	if (!d || !d->n)
		return NULL;
	f = bsearch(name, d->v, d->n, sizeof(*d->v), cmp_key);
	/* bsearch may land on any of several: step back to the first */
	while (f && f > d->v && !strcmp(f[-1].name, name))
		f--;
	return f ? f->args : NULL;
}

void syms_dwarf_close(struct syms_dwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].name);
		free(d->v[i].args);
	}
	free(d->v);
	free(d);
}
