// SPDX-License-Identifier: MIT
/*
 * A small C declaration reader: fields of integer types (C names, the
 * stdint and kernel ones), pointers, arrays and structs defined earlier.
 * `char x[N]` is a string, as in bpftrace.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cstruct.h"

struct rd {
	const char *s, *p;
	struct loc loc;		/* of the definition's first character */
	char tok[64];
	const char *tok_at;
};

static void rd_error(struct rd *r, const char *at, const char *msg)
{
	struct loc l = r->loc;

	for (const char *q = r->s; q < at; q++) {
		if (*q == '\n') {
			l.line++;
			l.col = 1;
		} else {
			l.col++;
		}
	}
	diag_error(l, "%s", msg);
}

/* The next token into r->tok: a word, a number or one punctuation mark. */
static void next(struct rd *r)
{
	for (;;) {
		while (isspace((unsigned char)*r->p))
			r->p++;
		if (r->p[0] == '/' && r->p[1] == '/') {
			while (*r->p && *r->p != '\n')
				r->p++;
		} else if (r->p[0] == '/' && r->p[1] == '*') {
			const char *e = strstr(r->p + 2, "*/");

			r->p = e ? e + 2 : r->p + strlen(r->p);
		} else {
			break;
		}
	}
	r->tok_at = r->p;
	size_t n = 0;

	if (isalnum((unsigned char)*r->p) || *r->p == '_') {
		while ((isalnum((unsigned char)r->p[n]) || r->p[n] == '_') &&
		       n < sizeof(r->tok) - 1)
			n++;
	} else if (*r->p) {
		n = 1;
	}
	memcpy(r->tok, r->p, n);
	r->tok[n] = 0;
	r->p += n;
}

static bool is(struct rd *r, const char *t)
{
	return !strcmp(r->tok, t);
}

struct type *cstruct_find(struct type *list, const char *name)
{
	for (; list; list = list->next)
		if (!strcmp(list->name, name))
			return list;
	return NULL;
}

static const struct {
	const char *name;
	int bytes;
	bool sgn;
} ctypes[] = {
	{ "int8_t", 1, true }, { "uint8_t", 1, false }, { "int16_t", 2, true },
	{ "uint16_t", 2, false }, { "int32_t", 4, true }, { "uint32_t", 4, false },
	{ "int64_t", 8, true }, { "uint64_t", 8, false },
	{ "s8", 1, true }, { "u8", 1, false }, { "s16", 2, true },
	{ "u16", 2, false }, { "s32", 4, true }, { "u32", 4, false },
	{ "s64", 8, true }, { "u64", 8, false },
	{ "__s8", 1, true }, { "__u8", 1, false }, { "__s16", 2, true },
	{ "__u16", 2, false }, { "__s32", 4, true }, { "__u32", 4, false },
	{ "__s64", 8, true }, { "__u64", 8, false },
	{ "bool", 1, false }, { "_Bool", 1, false }, { "size_t", 8, false },
	{ "ssize_t", 8, true }, { "pid_t", 4, true }, { "uid_t", 4, false },
};

/*
 * The base type of a declaration: C keywords in any order, a typedef
 * name of the table above, struct NAME, or void.  NULL after an error.
 */
static struct type *base_type(struct rd *r, struct type *list, bool *is_void)
{
	int nlong = 0, nshort = 0, nchar = 0, nint = 0, nuns = 0, nsig = 0;
	const char *start = r->tok_at;

	*is_void = false;
	if (is(r, "const") || is(r, "volatile"))
		next(r);
	if (is(r, "struct")) {
		char name[80];
		struct type *t;

		next(r);
		snprintf(name, sizeof(name), "struct %s", r->tok);
		t = cstruct_find(list, name);
		next(r);
		if (!t && is(r, "*")) {
			/* a pointer to a struct not defined: reading through
			 * it is refused where it happens */
			t = ast_alloc(sizeof(*t));
			t->kind = T_STRUCT;
			t->name = ast_strndup(name, strlen(name));
			return t;
		}
		if (!t) {
			rd_error(r, start, "unknown struct in a field: define it before use");
			return NULL;
		}
		return t;
	}
	if (is(r, "void")) {
		next(r);
		*is_void = true;
		return type_intn(1, false);
	}
	for (size_t i = 0; i < sizeof(ctypes) / sizeof(ctypes[0]); i++)
		if (is(r, ctypes[i].name)) {
			next(r);
			return type_intn(ctypes[i].bytes, ctypes[i].sgn);
		}
	for (;; next(r)) {
		if (is(r, "long"))
			nlong++;
		else if (is(r, "short"))
			nshort++;
		else if (is(r, "char"))
			nchar++;
		else if (is(r, "int"))
			nint++;
		else if (is(r, "unsigned"))
			nuns++;
		else if (is(r, "signed"))
			nsig++;
		else if (!is(r, "const") && !is(r, "volatile"))
			break;
	}
	if (nlong + nshort + nchar + nint + nuns + nsig == 0 ||
	    nlong > 2 || nshort > 1 || nchar > 1 || nint > 1 ||
	    nuns + nsig > 1 || (nchar && (nlong || nshort || nint)) ||
	    (nshort && nlong)) {
		rd_error(r, start, "unknown type in a struct definition");
		return NULL;
	}
	return type_intn(nchar ? 1 : nshort ? 2 : nlong ? 8 : 4, !nuns);
}

static int align_of(const struct type *t)
{
	if (t->kind == T_STRUCT)
		return t->align;
	if (t->kind == T_ARRAY || (t->kind == T_STR && t->elem))
		return align_of(t->elem);
	return t->bytes;
}

/* One declarator after the base type: '*'s, a name, '[N]'s. */
static int field(struct rd *r, struct type *base, bool is_void,
		 struct field *f)
{
	struct type *t = base;
	int dims[4], ndims = 0;

	while (is(r, "*")) {
		t = type_ptr(t);
		is_void = false;
		next(r);
	}
	if (!isalpha((unsigned char)r->tok[0]) && r->tok[0] != '_') {
		rd_error(r, r->tok_at, "expected a field name");
		return -EINVAL;
	}
	if (is_void || (t->kind == T_STRUCT && !t->fields)) {
		rd_error(r, r->tok_at, "a field cannot be void or of an undefined struct");
		return -EINVAL;
	}
	f->name = ast_strndup(r->tok, strlen(r->tok));
	next(r);
	while (is(r, "[")) {
		char *end;
		long n;

		next(r);
		n = strtol(r->tok, &end, 0);
		if (*end || n <= 0 || n > 4096 || ndims == 4) {
			rd_error(r, r->tok_at, "array size must be a number from 1 to 4096");
			return -EINVAL;
		}
		dims[ndims++] = (int)n;
		next(r);
		if (!is(r, "]")) {
			rd_error(r, r->tok_at, "expected ']'");
			return -EINVAL;
		}
		next(r);
	}
	for (int i = ndims - 1; i >= 0; i--) {
		if (i == ndims - 1 && t->kind == T_INT && t->bytes == 1 &&
		    t->is_signed) {
			/* char x[N]: a string of N bytes */
			struct type *s = type_string();

			s->bytes = dims[i];
			s->elem = t;
			t = s;
			continue;
		}
		t = type_array(t, dims[i]);
	}
	f->type = t;
	return 0;
}

int cstruct_define(const struct cdef *d, struct type **list)
{
	struct rd r = { .s = d->text, .p = d->text, .loc = d->loc };
	struct type *st = ast_alloc(sizeof(*st));
	struct field fs[128];
	int nf = 0, off = 0, align = 1;
	char name[80];

	next(&r);	/* struct */
	next(&r);
	snprintf(name, sizeof(name), "struct %s", r.tok);
	if (cstruct_find(*list, name)) {
		rd_error(&r, r.tok_at, "struct defined twice");
		return -EINVAL;
	}
	next(&r);	/* { */
	/* listed first: a field may point to the struct itself */
	st->kind = T_STRUCT;
	st->name = ast_strndup(name, strlen(name));
	st->size = 8;
	st->next = *list;
	*list = st;
	for (next(&r); !is(&r, "}");) {
		bool is_void;
		struct type *base = base_type(&r, *list, &is_void);

		if (!base)
			return -EINVAL;
		for (;;) {
			if (nf == 128) {
				rd_error(&r, r.tok_at, "too many fields (at most 128)");
				return -EINVAL;
			}
			if (field(&r, base, is_void, &fs[nf]))
				return -EINVAL;
			for (int i = 0; i < nf; i++)
				if (!strcmp(fs[i].name, fs[nf].name)) {
					rd_error(&r, r.tok_at, "field defined twice");
					return -EINVAL;
				}
			int a = align_of(fs[nf].type);

			off = (off + a - 1) / a * a;
			fs[nf].offset = off;
			off += fs[nf].type->bytes;
			if (a > align)
				align = a;
			nf++;
			if (!is(&r, ","))
				break;
			next(&r);
		}
		if (!is(&r, ";")) {
			rd_error(&r, r.tok_at, "expected ';' after a field");
			return -EINVAL;
		}
		next(&r);
	}
	st->fields = ast_alloc((nf ? nf : 1) * sizeof(*fs));
	memcpy(st->fields, fs, nf * sizeof(*fs));
	st->nfields = nf;
	st->align = align;
	st->bytes = (off + align - 1) / align * align;
	return 0;
}
