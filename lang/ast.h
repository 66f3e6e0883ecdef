/* SPDX-License-Identifier: MIT */
/*
 * The syntax tree.  Nodes live in an arena that is freed as a whole with
 * the program, so the parser and the checks never track ownership.
 */
#ifndef GT_AST_H
#define GT_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lang/diag.h"

struct type;

enum node_kind {
	/* expressions */
	N_INT,		/* ival */
	N_STR,		/* str, slen (escapes decoded) */
	N_BUILTIN,	/* str: pid, comm, blockIdx.x, arg3, ... */
	N_VAR,		/* str: "$x" */
	N_MAP,		/* str: "@x" or "@"; args: key expressions */
	N_POSARG,	/* ival: $1.. */
	N_ARGC,		/* $# */
	N_CALL,		/* str: function; args */
	N_BINOP,	/* op; a, b */
	N_UNOP,		/* op; a */
	N_TERNARY,	/* a ? b : c */
	N_TUPLE,	/* args */
	N_TUPLE_IDX,	/* a.ival */
	N_INCDEC,	/* op (B_ADD/B_SUB), post; a: variable or map */
	N_CAST,		/* (str ival*'*') a: str "uint8"/"struct x", ival: pointer depth */
	N_SIZEOF,	/* sizeof(a), or sizeof(type): a NULL, str and ival as N_CAST */
	N_DEREF,	/* *a */
	N_FIELD,	/* a->str (post) or a.str */
	N_INDEX,	/* a[b] */
	/* statements */
	N_EXPR_STMT,	/* a */
	N_ASSIGN,	/* a = b; op: -1 for '=', else the compound binop */
	N_IF,		/* if (a) b else c */
	N_UNROLL,	/* unroll (ival) b */
	N_WHILE,	/* while (a) b */
	N_FOR,		/* for (a : c) b: a variable, c a map without keys */
	N_BREAK,
	N_CONTINUE,
	N_RETURN,
	N_BLOCK,	/* args: statements */
};

enum binop {
	B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_AND, B_OR, B_XOR, B_SHL, B_SHR,
	B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_LAND, B_LOR,
};

enum unop { U_NEG, U_LNOT, U_BNOT };

struct node {
	enum node_kind kind;
	struct loc loc;
	int op;
	bool post;
	uint64_t ival;
	char *str;
	size_t slen;
	struct node *a, *b, *c;
	struct node *args;	/* list through ->next */
	int nargs;
	struct node *next;
	/* filled by the checks */
	struct type *type;
	void *sym;		/* struct map_sym * or struct var_sym * */
};

struct attach {
	char *text;
	struct loc loc;
	struct attach *next;
};

struct clause {
	struct attach *aps;
	struct node *pred;	/* NULL without predicate */
	struct node *body;	/* N_BLOCK */
	struct loc loc;
	struct clause *next;
	int index;
};

/* struct NAME { ... } written in the script: parsed by compiler/cstruct.c */
struct cdef {
	char *text;
	struct loc loc;
	struct cdef *next;
};

struct program {
	struct clause *clauses;
	int nclauses;
	struct cdef *cdefs;
};

/* The arena every node and string of the current parse comes from. */
void *ast_alloc(size_t size);
char *ast_strndup(const char *s, size_t n);
void ast_free_all(void);

struct node *ast_node(enum node_kind kind, struct loc loc);
/* Append N to list *HEAD; returns N. */
struct node *ast_append(struct node **head, struct node *n);
int ast_count(const struct node *list);

/*
 * Parse SRC into *PROG.  Errors are reported through diag (with location)
 * and give -EINVAL.
 */
int ast_parse(const struct source *src, struct program **prog);

/*
 * The checks and code generators recurse over the tree: refuse nesting past
 * AST_MAX_DEPTH (15,000 chained '+' overflowed the type checker's stack).
 */
#define AST_MAX_DEPTH 1000
int ast_check_depth(const struct program *prog);

void ast_dump(FILE *f, const struct program *prog);
const char *binop_str(int op);
const char *unop_str(int op);

#endif
