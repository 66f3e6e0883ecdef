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
	T_PTR,		/* elem: what it points to; an integer in registers */
	T_STRUCT,	/* a C struct in user memory; as a value, its address */
	T_ARRAY,	/* elem[count] in user memory; as a value, its address */
	T_BUF,		/* buf(p, n): a length byte, then up to GT_BUFLEN bytes */
	T_TIME,		/* strftime(): format id and ns, formatted by the tracer */
	T_USER,		/* username: the uid, named by the tracer */
	T_PROBE,	/* probe: the probe's number, named by the tracer */
	T_STACK,	/* kstack/ustack: a stack id (ustack: | pid << 32) */
	T_SYM,		/* ksym(addr): the address; usym(addr): address, pid */
};

struct field {
	const char *name;
	struct type *type;
	int offset;
};

/* Stack limit when none is given: the kernel's perf_event_max_stack default. */
#define GT_STACK_LIMIT 127
#define GT_STACK_MAX 1024	/* bpftrace's bound on ustack(N)/kstack(N) */

enum agg_kind {
	AGG_COUNT, AGG_SUM, AGG_MIN, AGG_MAX, AGG_AVG, AGG_STATS,
	AGG_HIST, AGG_LHIST, AGG_SMLOAD,
};

struct type {
	enum type_kind kind;
	bool is_signed;		/* T_INT; T_AGG: of the aggregated values */
	bool symbol;		/* T_STR: a mangled name, shown demangled */
	bool base;		/* symbol: shown short, kname(kernel) */
	bool ptr;		/* T_INT: an address (uaddr), a key shows 0x.. */
	bool user;		/* T_STACK, T_SYM: user space, not the kernel */
	bool perf;		/* T_STACK: perf's format (address, module) */
	bool errstr;		/* T_SYM: strerror(): an errno, shown as its text */
	int limit;		/* T_STACK: frames kept */
	enum agg_kind agg;	/* T_AGG */
	int nelems;		/* T_TUPLE */
	struct type **elems;
	int *offsets;		/* byte offset of each element */
	int size;		/* bytes in memory */
	int bytes;		/* C size: sizeof() and reads from user memory */
	struct type *elem;	/* T_PTR, T_ARRAY */
	int count;		/* T_ARRAY */
	const char *name;	/* T_STRUCT */
	struct field *fields;	/* T_STRUCT */
	int nfields;
	int align;		/* T_STRUCT: C alignment */
	struct type *next;	/* T_STRUCT: the unit's list of definitions */
};

#define GT_BUFLEN 64	/* bytes buf() keeps */

struct type *type_void(void);
struct type *type_int(bool is_signed);
/* An integer of BYTES (1, 2, 4, 8) in C; held in 8 bytes like any other. */
struct type *type_intn(int bytes, bool is_signed);
/* "int8".."uint64" (and the C names of cstruct.c): NULL when not one */
struct type *type_named_int(const char *name);
struct type *type_ptr(struct type *elem);
struct type *type_array(struct type *elem, int count);
struct type *type_buf(void);
struct type *type_time(void);
struct type *type_user(void);
struct type *type_probe(void);
/* integer or pointer: what arithmetic, conditions and printf %d take */
bool type_is_num(const struct type *t);
struct type *type_string(void);
struct type *type_symbol(void);	/* a string shown demangled (kernel) */
struct type *type_symbol_base(void);	/* kname(kernel): shown short */
struct type *type_tuple(struct type **elems, int n);
struct type *type_agg(enum agg_kind agg, bool is_signed);
struct type *type_stack(bool user, bool perf, int limit);
struct type *type_sym(bool user);
struct type *type_errno(void);	/* strerror(e): e, shown as its text */

/* Same shape (signedness of integers is not part of the identity). */
bool type_same(const struct type *a, const struct type *b);
/* "int64", "uint64", "string", "(int64, string)", "count", ... */
const char *type_str(const struct type *t);
const char *agg_name(enum agg_kind agg);

#endif
