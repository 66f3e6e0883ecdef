// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "compiler/types.h"

/* A bump allocator: the tree is freed as a whole with the program. */
struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

static struct chunk *chunks;

void *ast_alloc(size_t size)
{
	struct chunk *c = chunks;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->used + size > c->size) {
		size_t cap = size > 65536 ? size : 65536;

		c = malloc(sizeof(*c) + cap);
		if (!c) {
			fputs("gputrace: out of memory\n", stderr);
			abort();
		}
		c->next = chunks;
		c->used = 0;
		c->size = cap;
		chunks = c;
	}
	void *p = (char *)c->data + c->used;

	c->used += size;
	memset(p, 0, size);
	return p;
}

char *ast_strndup(const char *s, size_t n)
{
	char *p = ast_alloc(n + 1);

	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

void ast_free_all(void)
{
	while (chunks) {
		struct chunk *next = chunks->next;

		free(chunks);
		chunks = next;
	}
}

struct node *ast_node(enum node_kind kind, struct loc loc)
{
	struct node *n = ast_alloc(sizeof(*n));

	n->kind = kind;
	n->loc = loc;
	return n;
}

struct node *ast_append(struct node **head, struct node *n)
{
	while (*head)
		head = &(*head)->next;
	*head = n;
	return n;
}

int ast_count(const struct node *list)
{
	int n = 0;

	for (; list; list = list->next)
		n++;
	return n;
}

const char *binop_str(int op)
{
	static const char *const s[] = {
		"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>",
		"==", "!=", "<", "<=", ">", ">=", "&&", "||",
	};

	return op >= 0 && op < (int)(sizeof(s) / sizeof(s[0])) ? s[op] : "?";
}

const char *unop_str(int op)
{
	return op == U_NEG ? "-" : op == U_LNOT ? "!" : "~";
}

static void dump_node(FILE *f, const struct node *n, int ind);

static void dump_list(FILE *f, const struct node *n, int ind)
{
	for (; n; n = n->next)
		dump_node(f, n, ind);
}

static void dump_node(FILE *f, const struct node *n, int ind)
{
	char tbuf[128] = "";

	if (n->type)
		snprintf(tbuf, sizeof(tbuf), " :: %s", type_str(n->type));
	fprintf(f, "%*s", ind * 2, "");
	switch (n->kind) {
	case N_INT:
		fprintf(f, "int: %llu%s\n", (unsigned long long)n->ival, tbuf);
		return;
	case N_STR:
		fprintf(f, "string: \"%s\"%s\n", n->str, tbuf);
		return;
	case N_BUILTIN:
		fprintf(f, "builtin: %s%s\n", n->str, tbuf);
		return;
	case N_VAR:
		fprintf(f, "variable: %s%s\n", n->str, tbuf);
		return;
	case N_MAP:
		fprintf(f, "map: %s%s\n", n->str, tbuf);
		dump_list(f, n->args, ind + 1);
		return;
	case N_POSARG:
		fprintf(f, "param: $%llu%s\n", (unsigned long long)n->ival, tbuf);
		return;
	case N_ARGC:
		fprintf(f, "param: $#%s\n", tbuf);
		return;
	case N_CALL:
		fprintf(f, "call: %s%s\n", n->str, tbuf);
		dump_list(f, n->args, ind + 1);
		return;
	case N_BINOP:
		fprintf(f, "%s%s\n", binop_str(n->op), tbuf);
		break;
	case N_UNOP:
		fprintf(f, "unop %s%s\n", unop_str(n->op), tbuf);
		break;
	case N_TERNARY:
		fprintf(f, "?:%s\n", tbuf);
		break;
	case N_TUPLE:
		fprintf(f, "tuple%s\n", tbuf);
		dump_list(f, n->args, ind + 1);
		return;
	case N_TUPLE_IDX:
		fprintf(f, ".%llu%s\n", (unsigned long long)n->ival, tbuf);
		break;
	case N_INCDEC:
		fprintf(f, "%s%s%s\n", n->post ? "post" : "pre",
			n->op == B_ADD ? "++" : "--", tbuf);
		break;
	case N_EXPR_STMT:
		fputs("expr\n", f);
		break;
	case N_ASSIGN:
		fprintf(f, "=%s\n", n->op >= 0 ? binop_str(n->op) : "");
		break;
	case N_IF:
		fputs("if\n", f);
		break;
	case N_UNROLL:
		fprintf(f, "unroll %llu\n", (unsigned long long)n->ival);
		dump_node(f, n->b, ind + 1);
		return;
	case N_RETURN:
		fputs("return\n", f);
		return;
	case N_CAST:
		fprintf(f, "cast (%s%.*s)%s\n", n->str, (int)n->ival,
			"**********", tbuf);
		break;
	case N_SIZEOF:
		fprintf(f, "sizeof %s%.*s%s\n", n->a ? "" : n->str,
			n->a ? 0 : (int)n->ival, "**********", tbuf);
		break;
	case N_DEREF:
		fprintf(f, "deref%s\n", tbuf);
		break;
	case N_FIELD:
		fprintf(f, "%s%s%s\n", n->post ? "->" : ".", n->str, tbuf);
		break;
	case N_INDEX:
		fprintf(f, "[]%s\n", tbuf);
		break;
	case N_WHILE:
		fputs("while\n", f);
		break;
	case N_FOR:
		fputs("for\n", f);
		break;
	case N_BREAK:
		fputs("break\n", f);
		return;
	case N_CONTINUE:
		fputs("continue\n", f);
		return;
	case N_BLOCK:
		fputs("block\n", f);
		dump_list(f, n->args, ind + 1);
		return;
	}
	if (n->a)
		dump_node(f, n->a, ind + 1);
	if (n->b)
		dump_node(f, n->b, ind + 1);
	if (n->c)
		dump_node(f, n->c, ind + 1);
}

void ast_dump(FILE *f, const struct program *prog)
{
	fputs("Program\n", f);
	for (const struct clause *c = prog->clauses; c; c = c->next) {
		for (const struct attach *a = c->aps; a; a = a->next)
			fprintf(f, " %s\n", a->text);
		if (c->pred) {
			fputs("  predicate\n", f);
			dump_node(f, c->pred, 2);
		}
		dump_node(f, c->body, 1);
	}
}

/* The first node deeper than AST_MAX_DEPTH under N (and its followers). */
static const struct node *too_deep(const struct node *n, int depth)
{
	const struct node *d;

	for (; n; n = n->next) {
		if (depth > AST_MAX_DEPTH)
			return n;
		if ((d = too_deep(n->a, depth + 1)) || (d = too_deep(n->b, depth + 1)) ||
		    (d = too_deep(n->c, depth + 1)) || (d = too_deep(n->args, depth + 1)))
			return d;
	}
	return NULL;
}

int ast_check_depth(const struct program *prog)
{
	for (const struct clause *cl = prog->clauses; cl; cl = cl->next) {
		const struct node *d = too_deep(cl->pred, 1);

		if (!d)
			d = too_deep(cl->body, 1);
		if (d) {
			diag_error(d->loc, "nested too deeply (more than %d levels)",
				   AST_MAX_DEPTH);
			return -22;	/* -EINVAL */
		}
	}
	return 0;
}
