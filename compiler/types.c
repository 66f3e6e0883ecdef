// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "compiler/types.h"

static struct type *mk(enum type_kind kind, int size)
{
	struct type *t = ast_alloc(sizeof(*t));

	t->kind = kind;
	t->size = size;
	t->bytes = size;
	return t;
}

struct type *type_void(void)
{
	return mk(T_VOID, 0);
}

struct type *type_int(bool is_signed)
{
	struct type *t = mk(T_INT, 8);

	t->is_signed = is_signed;
	return t;
}

struct type *type_intn(int bytes, bool is_signed)
{
	struct type *t = type_int(is_signed);

	t->bytes = bytes;
	return t;
}

struct type *type_named_int(const char *name)
{
	bool sgn = name[0] != 'u';
	const char *p = sgn ? name : name + 1;
	int bits;

	if (strncmp(p, "int", 3))
		return NULL;
	bits = atoi(p + 3);
	if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
		return NULL;
	return type_intn(bits / 8, sgn);
}

struct type *type_ptr(struct type *elem)
{
	struct type *t = mk(T_PTR, 8);

	t->elem = elem;
	return t;
}

struct type *type_array(struct type *elem, int count)
{
	struct type *t = mk(T_ARRAY, 8);

	t->elem = elem;
	t->count = count;
	t->bytes = elem->bytes * count;
	return t;
}

struct type *type_buf(void)
{
	return mk(T_BUF, 8 + GT_BUFLEN);
}

struct type *type_time(void)
{
	return mk(T_TIME, 16);
}

struct type *type_user(void)
{
	return mk(T_USER, 8);
}

struct type *type_probe(void)
{
	return mk(T_PROBE, 8);
}

bool type_is_num(const struct type *t)
{
	return t && (t->kind == T_INT || t->kind == T_PTR);
}

struct type *type_string(void)
{
	return mk(T_STR, GT_STRLEN);
}

struct type *type_symbol(void)
{
	struct type *t = mk(T_STR, GT_STRLEN);

	t->symbol = true;
	return t;
}

struct type *type_symbol_base(void)
{
	struct type *t = type_symbol();

	t->base = true;
	return t;
}

struct type *type_tuple(struct type **elems, int n)
{
	struct type *t = mk(T_TUPLE, 0);

	t->nelems = n;
	t->elems = ast_alloc(n * sizeof(*elems));
	t->offsets = ast_alloc(n * sizeof(int));
	for (int i = 0; i < n; i++) {
		t->elems[i] = elems[i];
		t->offsets[i] = t->size;
		t->size += (elems[i]->size + 7) & ~7;
	}
	return t;
}

struct type *type_agg(enum agg_kind agg, bool is_signed)
{
	struct type *t = mk(T_AGG, 8);

	t->agg = agg;
	t->is_signed = is_signed;
	return t;
}

struct type *type_stack(bool user, bool perf, int limit)
{
	struct type *t = mk(T_STACK, 8);

	t->user = user;
	t->perf = perf;
	t->limit = limit;
	return t;
}

/* an errno, kept as the number and shown as strerror's text, as ksym
 * keeps an address */
struct type *type_errno(void)
{
	struct type *t = mk(T_SYM, 8);

	t->errstr = true;
	return t;
}

/* usym keeps the pid beside the address: symbols are per process */
struct type *type_sym(bool user)
{
	struct type *t = mk(T_SYM, user ? 16 : 8);

	t->user = user;
	return t;
}

bool type_same(const struct type *a, const struct type *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case T_TUPLE:
		if (a->nelems != b->nelems)
			return false;
		for (int i = 0; i < a->nelems; i++)
			if (!type_same(a->elems[i], b->elems[i]))
				return false;
		return true;
	case T_PTR:
	case T_ARRAY:
		return a->count == b->count && type_same(a->elem, b->elem);
	case T_STRUCT:
		return a == b;
	case T_AGG:
		return a->agg == b->agg;
	case T_STACK:
		/* ids of another limit live in another stack map */
		return a->user == b->user && a->perf == b->perf &&
		       a->limit == b->limit;
	case T_SYM:
		return a->user == b->user && a->errstr == b->errstr;
	case T_STR:
		/* kname(kernel) and kernel key a map differently */
		return a->base == b->base;
	default:
		return true;
	}
}

const char *agg_name(enum agg_kind agg)
{
	static const char *const n[] = {
		"count", "sum", "min", "max", "avg", "stats", "hist", "lhist",
		"smload",
	};

	return n[agg];
}

static void fmt_type(char *buf, size_t len, const struct type *t)
{
	size_t used;

	switch (t->kind) {
	case T_VOID:
		snprintf(buf, len, "none");
		return;
	case T_INT:
		snprintf(buf, len, "%sint%d", t->is_signed ? "" : "u", t->bytes * 8);
		return;
	case T_PTR:
		fmt_type(buf, len, t->elem);
		used = strlen(buf);
		snprintf(buf + used, len - used, " *");
		return;
	case T_ARRAY:
		fmt_type(buf, len, t->elem);
		used = strlen(buf);
		snprintf(buf + used, len - used, "[%d]", t->count);
		return;
	case T_STRUCT:
		snprintf(buf, len, "%s", t->name);
		return;
	case T_BUF:
		snprintf(buf, len, "buffer");
		return;
	case T_TIME:
		snprintf(buf, len, "timestamp");
		return;
	case T_USER:
		snprintf(buf, len, "username");
		return;
	case T_PROBE:
		snprintf(buf, len, "probe");
		return;
	case T_STR:
		snprintf(buf, len, "string");
		return;
	case T_AGG:
		snprintf(buf, len, "%s", agg_name(t->agg));
		return;
	case T_STACK: {
		const char *n = t->user ? "ustack" : "kstack";

		if (t->perf && t->limit != GT_STACK_LIMIT)
			snprintf(buf, len, "%s(perf, %d)", n, t->limit);
		else if (t->perf)
			snprintf(buf, len, "%s(perf)", n);
		else if (t->limit != GT_STACK_LIMIT)
			snprintf(buf, len, "%s(%d)", n, t->limit);
		else
			snprintf(buf, len, "%s", n);
		return;
	}
	case T_SYM:
		snprintf(buf, len, "%s", t->errstr ? "strerror" :
			 t->user ? "usym" : "ksym");
		return;
	case T_TUPLE:
		snprintf(buf, len, "(");
		for (int i = 0; i < t->nelems; i++) {
			used = strlen(buf);
			if (i)
				snprintf(buf + used, len - used, ", ");
			used = strlen(buf);
			fmt_type(buf + used, len - used, t->elems[i]);
		}
		used = strlen(buf);
		snprintf(buf + used, len - used, ")");
		return;
	}
}

const char *type_str(const struct type *t)
{
	static char bufs[4][256];
	static int next;
	char *b = bufs[next++ & 3];

	fmt_type(b, sizeof(bufs[0]), t);
	return b;
}
