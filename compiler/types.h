/* SPDX-License-Identifier: MIT */
/* Value types of the language and their memory layout. */
#ifndef GT_TYPES_H
#define GT_TYPES_H

#include <stdbool.h>

#define GT_STRLEN 64	/* bpftrace's default string size */

enum type_kind {
	T_VOID,
	T_INT,
	T_STR,
	T_TUPLE,
	T_AGG,		/* the value of a map that holds an aggregation */
};

enum agg_kind {
	AGG_COUNT, AGG_SUM, AGG_MIN, AGG_MAX, AGG_AVG, AGG_STATS,
	AGG_HIST, AGG_LHIST, AGG_SMLOAD,
};

struct type {
	enum type_kind kind;
	bool is_signed;		/* T_INT; T_AGG: of the aggregated values */
	bool symbol;		/* T_STR: a mangled name, shown demangled */
	enum agg_kind agg;	/* T_AGG */
	int nelems;		/* T_TUPLE */
	struct type **elems;
	int *offsets;		/* byte offset of each element */
	int size;		/* bytes in memory */
};

struct type *type_void(void);
struct type *type_int(bool is_signed);
struct type *type_string(void);
struct type *type_symbol(void);	/* a string shown demangled (kernel) */
struct type *type_tuple(struct type **elems, int n);
struct type *type_agg(enum agg_kind agg, bool is_signed);

/* Same shape (signedness of integers is not part of the identity). */
bool type_same(const struct type *a, const struct type *b);
/* "int64", "uint64", "string", "(int64, string)", "count", ... */
const char *type_str(const struct type *t);
const char *agg_name(enum agg_kind agg);

#endif
