/* SPDX-License-Identifier: MIT */
/* Grammar of the gputrace language: bpftrace's, for the parts in SPEC §2. */
%define api.prefix {gt_yy}
%define parse.error verbose
%locations
%expect 0

%code requires {
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include "lang/ast.h"
}

%code {
#include "lang/lex.h"

static struct program *result;
static int lex_failed;

static struct loc L(GT_YYLTYPE l)
{
	return (struct loc){ l.first_line, l.first_column };
}

static struct node *mk(enum node_kind k, GT_YYLTYPE l)
{
	return ast_node(k, L(l));
}

static struct node *bin(int op, struct node *a, struct node *b, GT_YYLTYPE l)
{
	struct node *n = mk(N_BINOP, l);

	n->op = op;
	n->a = a;
	n->b = b;
	return n;
}

static struct node *un(int op, struct node *a, GT_YYLTYPE l)
{
	struct node *n = mk(N_UNOP, l);

	n->op = op;
	n->a = a;
	return n;
}

static struct node *assign(int op, struct node *lv, struct node *v, GT_YYLTYPE l)
{
	struct node *n = mk(N_ASSIGN, l);

	n->op = op;
	n->a = lv;
	n->b = v;
	return n;
}

static struct node *incdec(int op, bool post, struct node *lv, GT_YYLTYPE l)
{
	struct node *n = mk(N_INCDEC, l);

	n->op = op;
	n->post = post;
	n->a = lv;
	return n;
}

static struct node *var_node(const char *name, struct loc l)
{
	struct node *n = ast_node(N_VAR, l);

	n->str = ast_strndup(name, strlen(name));
	return n;
}

/*
 * A loop's variable lives in the loop (bpftrace): it and its uses in
 * BODY get a name of their own, "$v#K", which no other $v meets.
 */
static void rename_var(struct node *n, const char *from, const char *to)
{
	for (; n; n = n->next) {
		if (n->kind == N_VAR && !strcmp(n->str, from))
			n->str = (char *)to;
		rename_var(n->a, from, to);
		rename_var(n->b, from, to);
		rename_var(n->c, from, to);
		rename_var(n->args, from, to);
	}
}

static char *loop_var(struct node *v, struct node *body)
{
	static unsigned int nloop;
	size_t len = strlen(v->str) + 16;
	char *name = ast_alloc(len);

	snprintf(name, len, "%s#%u", v->str, nloop++);
	rename_var(body->args, v->str, name);
	v->str = name;
	return name;
}

/*
 * for ($v : START..END) BODY (bpftrace 0.23; END excluded), as
 *   if (1) { $v#Kc = START; $v#Ke = END;
 *	      while ($v#Kc < $v#Ke) { $v#K = $v#Kc; $v#Kc++; BODY } }
 * ($v#K: loop_var's name).  The counter steps before BODY so that
 * continue needs no step of its own; '#' keeps the hidden names out of
 * the user's reach, and messages about them, at START, name $v.
 */
static struct node *range_for(struct node *v, struct node *from,
			      struct node *to, struct node *body, struct loc l)
{
	size_t len = strlen(v->str) + 2;
	char *cnt = ast_alloc(len), *end = ast_alloc(len);
	struct node *w = ast_node(N_WHILE, l), *top = ast_node(N_IF, l);
	struct node *s1, *s2, *set, *step;

	snprintf(cnt, len, "%sc", v->str);
	snprintf(end, len, "%se", v->str);
	l = from->loc;
	s1 = ast_node(N_ASSIGN, l);
	s1->op = -1;
	s1->a = var_node(cnt, l);
	s1->b = from;
	s2 = ast_node(N_ASSIGN, l);
	s2->op = -1;
	s2->a = var_node(end, l);
	s2->b = to;
	s1->next = s2;
	s2->next = w;
	w->a = ast_node(N_BINOP, l);
	w->a->op = B_LT;
	w->a->a = var_node(cnt, l);
	w->a->b = var_node(end, l);
	set = ast_node(N_ASSIGN, l);
	set->op = -1;
	set->a = v;
	set->b = var_node(cnt, l);
	step = ast_node(N_EXPR_STMT, l);
	step->a = ast_node(N_INCDEC, l);
	step->a->op = B_ADD;
	step->a->post = true;
	step->a->a = var_node(cnt, l);
	set->next = step;
	step->next = body->args;
	body->args = set;
	w->b = body;
	top->a = ast_node(N_INT, l);
	top->a->ival = 1;
	top->b = ast_node(N_BLOCK, l);
	top->b->args = s1;
	return top;
}

static void gt_yyerror(const char *msg)
{
	if (lex_failed)
		return;
	diag_error(L(gt_yylloc), "%s", msg);
}

static int yylex_wrap(void)
{
	int t = gt_yylex();

	if (t == LEX_ERROR)
		lex_failed = 1;
	return t;
}
#define gt_yylex yylex_wrap
}

%union {
	uint64_t ival;
	struct { char *s; size_t len; } str;
	struct node *node;
	struct attach *ap;
	struct clause *clause;
	int op;
}

%token <ival> INT "integer" POSPARAM "positional parameter"
%token <str> STR "string" IDENT "identifier" MAP "map" VAR "variable"
%token <str> AP "probe"
%token ARGC "$#" IF "if" ELSE "else" UNROLL "unroll" RETURN "return"
%token WHILE "while" BREAK "break" CONTINUE "continue" SIZEOF "sizeof"
%token STRUCT "struct" ARROW "->" FOR "for" DOTDOT ".."
%token <str> TYPE "type" CDEF "struct definition"
%token ENDPRED "end of predicate" LEX_ERROR "invalid token"
%token EQ "==" NE "!=" LE "<=" GE ">=" LAND "&&" LOR "||" SHL "<<" SHR ">>"
%token INC "++" DEC "--"
%token ADD_ASSIGN "+=" SUB_ASSIGN "-=" MUL_ASSIGN "*=" DIV_ASSIGN "/="
%token MOD_ASSIGN "%=" AND_ASSIGN "&=" OR_ASSIGN "|=" XOR_ASSIGN "^="
%token SHL_ASSIGN "<<=" SHR_ASSIGN ">>="

%type <clause> clause
%type <ap> aps
%type <node> pred block stmts stmt simple_stmt block_stmt else_part
%type <node> expr ternary lor land bor bxor band equality relation shift
%type <node> additive mult unary postfix primary map var args opt_args
%type <op> compound_op
%type <node> type_name

/* @m[k] is a map access, not an index into @m */
%precedence MAP_ALONE
%precedence '['

%start program

%%

program:
	items
	;

items:
	item
	| items item
	;

item:
	clause {
		struct clause **t = &result->clauses;

		while (*t)
			t = &(*t)->next;
		*t = $1;
	}
	| CDEF {
		struct cdef *d = ast_alloc(sizeof(*d)), **t = &result->cdefs;

		d->text = $1.s;
		d->loc = L(@1);
		while (*t)
			t = &(*t)->next;
		*t = d;
	}
	;

clause:
	aps pred block {
		$$ = ast_alloc(sizeof(*$$));
		$$->aps = $1;
		$$->pred = $2;
		$$->body = $3;
		$$->loc = $1->loc;
		$$->index = result->nclauses++;
	}
	;

aps:
	AP {
		$$ = ast_alloc(sizeof(*$$));
		$$->text = $1.s;
		$$->loc = L(@1);
	}
	| AP ',' aps {
		$$ = ast_alloc(sizeof(*$$));
		$$->text = $1.s;
		$$->loc = L(@1);
		$$->next = $3;
	}
	;

pred:
	%empty			{ $$ = NULL; }
	| '/' expr ENDPRED	{ $$ = $2; }
	;

block:
	'{' stmts '}'		{ $$ = mk(N_BLOCK, @1); $$->args = $2; }
	;

/* Statements are separated by ';'; if/unroll blocks need none after them. */
stmts:
	%empty			{ $$ = NULL; }
	| simple_stmt		{ $$ = $1; }
	| simple_stmt ';' stmts	{ $1->next = $3; $$ = $1; }
	| block_stmt stmts	{ $1->next = $2; $$ = $1; }
	;

block_stmt:
	IF '(' expr ')' block else_part {
		$$ = mk(N_IF, @1);
		$$->a = $3;
		$$->b = $5;
		$$->c = $6;
	}
	| UNROLL '(' INT ')' block {
		$$ = mk(N_UNROLL, @1);
		$$->ival = $3;
		$$->b = $5;
		$$->a = mk(N_INT, @3);
		$$->a->ival = $3;
	}
	| WHILE '(' expr ')' block {
		$$ = mk(N_WHILE, @1);
		$$->a = $3;
		$$->b = $5;
	}
	| FOR '(' var ':' expr DOTDOT expr ')' block {
		loop_var($3, $9);
		$$ = range_for($3, $5, $7, $9, L(@1));
	}
	| FOR '(' var ':' map ')' block {
		loop_var($3, $7);
		$$ = mk(N_FOR, @1);
		$$->a = $3;
		$$->c = $5;
		$$->b = $7;
	}
	| UNROLL '(' POSPARAM ')' block {
		/* the count is read from the arguments by the checks */
		$$ = mk(N_UNROLL, @1);
		$$->b = $5;
		$$->a = mk(N_POSARG, @3);
		$$->a->ival = $3;
	}
	;

else_part:
	%empty			{ $$ = NULL; }
	| ELSE block		{ $$ = $2; }
	| ELSE block_stmt	{
		if ($2->kind != N_IF) {
			diag_error($2->loc, "expected 'if' or a block after 'else'");
			YYERROR;
		}
		$$ = $2;
	}
	;

simple_stmt:
	stmt			{ $$ = $1; }
	;

stmt:
	expr			{ $$ = mk(N_EXPR_STMT, @1); $$->a = $1; }
	| map '=' expr		{ $$ = assign(-1, $1, $3, @2); }
	| var '=' expr		{ $$ = assign(-1, $1, $3, @2); }
	| map compound_op expr	{ $$ = assign($2, $1, $3, @2); }
	| var compound_op expr	{ $$ = assign($2, $1, $3, @2); }
	| RETURN		{ $$ = mk(N_RETURN, @1); }
	| BREAK			{ $$ = mk(N_BREAK, @1); }
	| CONTINUE		{ $$ = mk(N_CONTINUE, @1); }
	;

compound_op:
	ADD_ASSIGN		{ $$ = B_ADD; }
	| SUB_ASSIGN		{ $$ = B_SUB; }
	| MUL_ASSIGN		{ $$ = B_MUL; }
	| DIV_ASSIGN		{ $$ = B_DIV; }
	| MOD_ASSIGN		{ $$ = B_MOD; }
	| AND_ASSIGN		{ $$ = B_AND; }
	| OR_ASSIGN		{ $$ = B_OR; }
	| XOR_ASSIGN		{ $$ = B_XOR; }
	| SHL_ASSIGN		{ $$ = B_SHL; }
	| SHR_ASSIGN		{ $$ = B_SHR; }
	;

expr:
	ternary			{ $$ = $1; }
	;

ternary:
	lor			{ $$ = $1; }
	| lor '?' expr ':' ternary {
		$$ = mk(N_TERNARY, @2);
		$$->a = $1;
		$$->b = $3;
		$$->c = $5;
	}
	;

lor:	land | lor LOR land		{ $$ = bin(B_LOR, $1, $3, @2); } ;
land:	bor | land LAND bor		{ $$ = bin(B_LAND, $1, $3, @2); } ;
bor:	bxor | bor '|' bxor		{ $$ = bin(B_OR, $1, $3, @2); } ;
bxor:	band | bxor '^' band		{ $$ = bin(B_XOR, $1, $3, @2); } ;
band:	equality | band '&' equality	{ $$ = bin(B_AND, $1, $3, @2); } ;

equality:
	relation
	| equality EQ relation		{ $$ = bin(B_EQ, $1, $3, @2); }
	| equality NE relation		{ $$ = bin(B_NE, $1, $3, @2); }
	;

relation:
	shift
	| relation '<' shift		{ $$ = bin(B_LT, $1, $3, @2); }
	| relation '>' shift		{ $$ = bin(B_GT, $1, $3, @2); }
	| relation LE shift		{ $$ = bin(B_LE, $1, $3, @2); }
	| relation GE shift		{ $$ = bin(B_GE, $1, $3, @2); }
	;

shift:
	additive
	| shift SHL additive		{ $$ = bin(B_SHL, $1, $3, @2); }
	| shift SHR additive		{ $$ = bin(B_SHR, $1, $3, @2); }
	;

additive:
	mult
	| additive '+' mult		{ $$ = bin(B_ADD, $1, $3, @2); }
	| additive '-' mult		{ $$ = bin(B_SUB, $1, $3, @2); }
	;

mult:
	unary
	| mult '*' unary		{ $$ = bin(B_MUL, $1, $3, @2); }
	| mult '/' unary		{ $$ = bin(B_DIV, $1, $3, @2); }
	| mult '%' unary		{ $$ = bin(B_MOD, $1, $3, @2); }
	;

unary:
	postfix
	| '-' unary			{ $$ = un(U_NEG, $2, @1); }
	| '!' unary			{ $$ = un(U_LNOT, $2, @1); }
	| '~' unary			{ $$ = un(U_BNOT, $2, @1); }
	| '*' unary			{ $$ = mk(N_DEREF, @1); $$->a = $2; }
	| '(' type_name ')' unary	{ $$ = $2; $$->loc = L(@1); $$->a = $4; }
	| INC map			{ $$ = incdec(B_ADD, false, $2, @1); }
	| DEC map			{ $$ = incdec(B_SUB, false, $2, @1); }
	| INC var			{ $$ = incdec(B_ADD, false, $2, @1); }
	| DEC var			{ $$ = incdec(B_SUB, false, $2, @1); }
	;

postfix:
	primary
	| map INC			{ $$ = incdec(B_ADD, true, $1, @2); }
	| map DEC			{ $$ = incdec(B_SUB, true, $1, @2); }
	| var INC			{ $$ = incdec(B_ADD, true, $1, @2); }
	| var DEC			{ $$ = incdec(B_SUB, true, $1, @2); }
	| postfix ARROW IDENT {
		$$ = mk(N_FIELD, @3);
		$$->a = $1;
		$$->str = $3.s;
		$$->post = true;
	}
	| postfix '.' IDENT {
		$$ = mk(N_FIELD, @3);
		$$->a = $1;
		$$->str = $3.s;
	}
	| postfix '[' expr ']' {
		$$ = mk(N_INDEX, @2);
		$$->a = $1;
		$$->b = $3;
	}
	| postfix '.' INT {
		$$ = mk(N_TUPLE_IDX, @3);
		$$->a = $1;
		$$->ival = $3;
	}
	;

primary:
	INT				{ $$ = mk(N_INT, @1); $$->ival = $1; }
	| STR {
		$$ = mk(N_STR, @1);
		$$->str = $1.s;
		$$->slen = $1.len;
	}
	| IDENT				{ $$ = mk(N_BUILTIN, @1); $$->str = $1.s; }
	| IDENT '(' opt_args ')' {
		$$ = mk(N_CALL, @1);
		$$->str = $1.s;
		$$->args = $3;
		$$->nargs = ast_count($3);
	}
	| POSPARAM			{ $$ = mk(N_POSARG, @1); $$->ival = $1; }
	| ARGC				{ $$ = mk(N_ARGC, @1); }
	| map				{ $$ = $1; }
	| var				{ $$ = $1; }
	| '(' expr ')'			{ $$ = $2; }
	| SIZEOF '(' type_name ')'	{ $$ = $3; $$->kind = N_SIZEOF; $$->loc = L(@1); }
	| SIZEOF '(' expr ')'		{ $$ = mk(N_SIZEOF, @1); $$->a = $3; }
	| '(' expr ',' args ')' {
		$$ = mk(N_TUPLE, @1);
		$2->next = $4;
		$$->args = $2;
		$$->nargs = ast_count($2);
	}
	;

/* a cast's or sizeof's type: N_CAST with the name and the pointer depth */
type_name:
	TYPE				{ $$ = mk(N_CAST, @1); $$->str = $1.s; }
	| STRUCT IDENT {
		size_t n = strlen($2.s) + 8;

		$$ = mk(N_CAST, @1);
		$$->str = ast_alloc(n);
		snprintf($$->str, n, "struct %s", $2.s);
	}
	| type_name '*'			{ $$ = $1; $$->ival++; }
	;

map:
	MAP %prec MAP_ALONE		{ $$ = mk(N_MAP, @1); $$->str = $1.s; }
	| MAP '[' args ']' {
		$$ = mk(N_MAP, @1);
		$$->str = $1.s;
		$$->args = $3;
		$$->nargs = ast_count($3);
	}
	;

var:
	VAR				{ $$ = mk(N_VAR, @1); $$->str = $1.s; }
	;

opt_args:
	%empty				{ $$ = NULL; }
	| args				{ $$ = $1; }
	;

args:
	expr				{ $$ = $1; }
	| expr ',' args			{ $1->next = $3; $$ = $1; }
	;

%%

/*
 * A NUL byte would silently cut a name or a string where the lexer hands
 * text on as C strings (gpu:kernel:v\0add attaching to v): refuse it.
 */
static int check_nul(const struct source *src)
{
	const char *nul = memchr(src->text, 0, src->len);
	struct loc l = { 1, 1 };

	if (!nul)
		return 0;
	for (const char *p = src->text; p < nul; p++) {
		if (*p == '\n') {
			l.line++;
			l.col = 1;
		} else {
			l.col++;
		}
	}
	diag_error(l, "NUL byte in the program text");
	return -22;	/* -EINVAL */
}

int ast_parse(const struct source *src, struct program **prog)
{
	int err;

	diag_set_source(src);
	*prog = NULL;
	if (check_nul(src))
		return -22;
	result = ast_alloc(sizeof(*result));
	lex_failed = 0;
	lex_start(src->text, src->len);
	err = gt_yyparse();
	lex_end();
	if (!err && !diag_errors() && !result->clauses) {
		diag_error(L(gt_yylloc), "expected a probe");
		err = -22;
	}
	if (!err && !diag_errors())
		err = ast_check_depth(result);
	if (err || diag_errors()) {
		*prog = NULL;
		return -22;	/* -EINVAL */
	}
	*prog = result;
	return 0;
}
