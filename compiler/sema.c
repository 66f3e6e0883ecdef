// SPDX-License-Identifier: MIT
/*
 * Semantic checks.  Two passes over the program: the first learns the
 * types of maps from every assignment (a clause may read a map that a
 * later clause writes), the second checks everything and reports errors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cstruct.h"
#include "compiler/sema.h"
#include "gpucode/ptx.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "runtime/fmt.h"

struct ctx {
	struct unit *u;
	struct clause *clause;
	struct clause_info *ci;
	bool report;		/* second pass: report errors */
	int unroll_depth;
	int loop_depth;		/* while loops around the statement */
	bool in_for;		/* in the body of a for over a map */
	bool unsafe;
};

static void err(struct ctx *c, struct loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void err(struct ctx *c, struct loc loc, const char *fmt, ...)
{
	va_list ap;

	if (!c->report)
		return;
	va_start(ap, fmt);
	diag_verror("error", loc, fmt, ap);
	va_end(ap);
}

static struct type *check_expr(struct ctx *c, struct node *n);
static void check_for(struct ctx *c, struct node *n);

static struct map_sym *map_get(struct ctx *c, struct node *n)
{
	struct map_sym *m;

	for (m = c->u->maps; m; m = m->next)
		if (!strcmp(m->name, n->str))
			break;
	if (!m) {
		m = ast_alloc(sizeof(*m));
		m->name = n->str;
		m->loc = n->loc;
		m->index = c->u->nmaps++;
		struct map_sym **tail = &c->u->maps;

		while (*tail)
			tail = &(*tail)->next;
		*tail = m;
	}
	n->sym = m;
	return m;
}

static struct var_sym *var_find(struct ctx *c, const char *name)
{
	for (struct var_sym *v = c->ci->vars; v; v = v->next)
		if (!strcmp(v->name, name))
			return v;
	return NULL;
}

/* A new variable of the clause, last in its list (slots in that order). */
static struct var_sym *var_add(struct ctx *c, char *name, struct type *t)
{
	struct var_sym *v = ast_alloc(sizeof(*v)), **tail = &c->ci->vars;

	v->name = name;
	v->type = t;
	while (*tail)
		tail = &(*tail)->next;
	*tail = v;
	return v;
}

/* A variable's name as written: a loop's "$v#K" (the parser's) is $v. */
static const char *vname(const char *name)
{
	return ast_strndup(name, strcspn(name, "#"));
}

static bool is_int(const struct type *t)
{
	return t && t->kind == T_INT;
}

static bool is_value(const struct type *t)
{
	return t && (t->kind == T_INT || t->kind == T_STR || t->kind == T_TUPLE ||
		     t->kind == T_PTR || t->kind == T_BUF || t->kind == T_TIME ||
		     t->kind == T_USER || t->kind == T_PROBE ||
		     t->kind == T_STACK || t->kind == T_SYM);
}

/* Check the key expressions of map access N against the map's key type. */
static void check_key(struct ctx *c, struct node *n, struct map_sym *m)
{
	struct type *parts[16];
	int i = 0;

	if (n->nargs > 16) {
		err(c, n->loc, "too many keys for map %s", m->name);
		return;
	}
	for (struct node *k = n->args; k; k = k->next) {
		struct type *t = check_expr(c, k);

		if (!t)
			return;
		if (!is_value(t) || t->kind == T_TUPLE || t->kind == T_PTR) {
			err(c, k->loc, "map key must be an integer or a string, not %s",
			    type_str(t));
			return;
		}
		parts[i++] = t;
	}
	struct type *key = i ? type_tuple(parts, i) : NULL;

	if (!m->key_known) {
		m->key_known = true;
		m->key = key;
		return;
	}
	if ((!key) != (!m->key) || (key && !type_same(key, m->key)))
		err(c, n->loc, "argument mismatch for %s: accessed with keys %s, the map's keys are %s",
		    m->name, key ? type_str(key) : "()",
		    m->key ? type_str(m->key) : "()");
}

/* Record that map M holds values of type T (first use fixes it). */
static void map_set_val(struct ctx *c, struct map_sym *m, struct type *t,
			struct loc loc)
{
	if (!m->val) {
		m->val = t;
		return;
	}
	if (!type_same(m->val, t))
		err(c, loc, "type mismatch for %s: assigning a value of type %s to a map that holds %s",
		    m->name, type_str(t), type_str(m->val));
}

static void mark_map(struct ctx *c, struct map_sym *m)
{
	if (c->ci->device)
		m->device = true;
	else
		m->host = true;
}

static int add_event(struct unit *u, struct event_desc ev)
{
	struct event_desc *e = realloc(u->events, (u->nevents + 1) * sizeof(*e));

	if (!e) {
		fputs("gputrace: out of memory\n", stderr);
		abort();
	}
	u->events = e;
	e[u->nevents] = ev;
	return u->nevents++;
}

int unit_add_event(struct unit *u, struct event_desc ev)
{
	return add_event(u, ev);
}

static const char *const agg_funcs[] = {
	"count", "sum", "min", "max", "avg", "stats", "hist", "lhist", "smload",
};

static int agg_lookup(const char *name)
{
	for (int i = 0; i < (int)(sizeof(agg_funcs) / sizeof(agg_funcs[0])); i++)
		if (!strcmp(agg_funcs[i], name))
			return i;
	return -1;
}

static bool const_int(struct node *n, int64_t *v)
{
	if (n->kind == N_INT) {
		*v = (int64_t)n->ival;
		return true;
	}
	if (n->kind == N_UNOP && n->op == U_NEG && n->a->kind == N_INT) {
		*v = -(int64_t)n->a->ival;
		return true;
	}
	return false;
}

/* @m[k] = AGG(args): the only place an aggregation may appear. */
static void check_agg(struct ctx *c, struct map_sym *m, struct node *call,
		      struct loc lvloc)
{
	int agg = agg_lookup(call->str);
	int want = agg == AGG_COUNT ? 0 : agg == AGG_LHIST ? 4 : 1;
	bool sgn = true;

	if (call->nargs != want) {
		err(c, call->loc, "%s() takes %d argument%s, %d given", call->str,
		    want, want == 1 ? "" : "s", call->nargs);
		return;
	}
	if (agg == AGG_SMLOAD && !c->ci->device) {
		err(c, call->loc, "smload() is keyed by SM and only exists in gpu: probes");
		return;
	}
	if (want) {
		struct type *t = check_expr(c, call->args);

		if (!t)
			return;
		if (!is_int(t)) {
			err(c, call->args->loc, "%s() expects an integer, not %s",
			    call->str, type_str(t));
			return;
		}
		sgn = t->is_signed;
	}
	if (agg == AGG_COUNT)
		sgn = false;
	if (agg == AGG_LHIST) {
		struct node *a = call->args->next;
		int64_t v[3];

		for (int i = 0; i < 3; i++, a = a->next) {
			if (!const_int(a, &v[i])) {
				err(c, a->loc, "lhist() %s must be an integer literal",
				    i == 0 ? "min" : i == 1 ? "max" : "step");
				return;
			}
		}
		a = call->args->next;
		if (v[2] <= 0) {
			err(c, a->next->next->loc, "lhist() step must be >= 1 (%lld given)",
			    (long long)v[2]);
			return;
		}
		if (v[0] < 0) {
			err(c, a->loc, "lhist() min must be non-negative (%lld given)",
			    (long long)v[0]);
			return;
		}
		if (v[1] <= v[0]) {
			err(c, a->next->loc, "lhist() max must be greater than min");
			return;
		}
		if ((v[1] - v[0]) / v[2] > 1000) {
			err(c, a->next->next->loc, "lhist() has too many buckets: (max - min) / step must be at most 1000");
			return;
		}
		if (m->val && m->val->kind == T_AGG && m->val->agg == AGG_LHIST &&
		    (m->lmin != v[0] || m->lmax != v[1] || m->lstep != v[2]))
			err(c, call->loc, "lhist() arguments differ from an earlier lhist() on %s",
			    m->name);
		m->lmin = v[0];
		m->lmax = v[1];
		m->lstep = v[2];
	}
	call->type = type_agg(agg, sgn);
	map_set_val(c, m, call->type, lvloc);
}

/* Every builtin but arg0..arg9; also the prompt's completion list. */
const char *const sema_builtin_names[] = {
	"pid", "tid", "uid", "gid", "comm", "nsecs", "elapsed", "cpu",
	"cpid", "probe", "func", "retval", "kernel", "stream", "shmem",
	"size", "kind", "duration", "queued", "smid", "nsmid", "warpid", "laneid",
	"lanes", "gtime", "clock", "launch", "launch_ns", "gpu",
	"addr", "store", "sectors", "insn", "line", "conflicts",
	"username", "rand", "curtask", "cgroup", "numaid", "ctx",
	"gridDim.x", "gridDim.y", "gridDim.z", "blockDim.x",
	"blockDim.y", "blockDim.z", "blockIdx.x", "blockIdx.y",
	"blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
	"ustack", "kstack", "pc", "stall", "samples", NULL,
};

/* The functions a program may call, for the prompt's completion. */
const char *const sema_function_names[] = {
	"printf", "print", "time", "clear", "zero", "delete", "exit", "len",
	"count", "sum", "min", "max", "avg", "stats", "hist", "lhist",
	"smload", "str", "buf", "strncmp", "strftime", "join", "cat",
	"system", "signal", "sizeof", "ustack", "kstack", "usym", "ksym",
	"uaddr", "kname", "has_key", "strerror", NULL,
};

static bool builtin_known(const char *name)
{
	const char *const *host = sema_builtin_names;

	for (size_t i = 0; host[i]; i++)
		if (!strcmp(host[i], name))
			return true;
	/* tracepoint fields: the provider knows them */
	if (!strncmp(name, "args->", 6))
		return true;
	/* arg0..arg9 */
	return !strncmp(name, "arg", 3) && name[3] >= '0' && name[3] <= '9' &&
	       (!name[4] || (name[4] >= '0' && name[4] <= '9' && !name[5]));
}

static struct type *builtin_type(const char *name)
{
	struct type *t;

	if (!strcmp(name, "kernel"))
		return type_symbol();
	if (!strcmp(name, "comm")) {
		t = type_string();
		t->bytes = 16;	/* sizeof(comm), as the kernel's */
		return t;
	}
	if (!strcmp(name, "username"))
		return type_user();
	/* a number named by the tracer: full names, as bpftrace's */
	if (!strcmp(name, "probe"))
		return type_probe();
	if (!strcmp(name, "rand") || !strcmp(name, "numaid"))
		return type_intn(4, false);
	if (!strcmp(name, "ustack") || !strcmp(name, "kstack"))
		return type_stack(name[0] == 'u', false, GT_STACK_LIMIT);
	if (!strcmp(name, "comm") || !strcmp(name, "func") || !strcmp(name, "kernel") ||
	    !strcmp(name, "kind") || !strcmp(name, "stall"))
		return type_string();
	return type_int(false);
}

/*
 * A builtin whose type the attach point decides (tracepoint fields, usdt
 * arguments): asked of the clause's first probe; the others were checked
 * to have it too.
 */
static struct type *provider_type(const struct clause_info *ci,
				  const char *name)
{
	const struct probe *p = ci->nprobes ? ci->probes[0] : NULL;
	struct builtin_src src;

	if (!p || p->prov->device || !p->prov->builtin_src ||
	    p->prov->builtin_src(p, name, &src))
		return builtin_type(name);
	switch (src.kind) {
	case BSRC_CTX_CHARS:
	case BSRC_CTX_DATALOC:
		return type_string();
	case BSRC_CTX_INT:
	case BSRC_PTR_INT:
	case BSRC_IMM:
		return type_int(src.sign);
	default:
		return builtin_type(name);
	}
}

static struct type *check_builtin(struct ctx *c, struct node *n)
{
	if (!builtin_known(n->str)) {
		err(c, n->loc, "unknown builtin '%s'", n->str);
		return NULL;
	}
	for (int i = 0; i < c->ci->nprobes; i++) {
		struct probe *p = c->ci->probes[i];

		if (!p->prov->has_builtin || !p->prov->has_builtin(p, n->str)) {
			char why[256];

			if (p->prov->builtin_why &&
			    p->prov->builtin_why(p, n->str, why, sizeof(why))) {
				err(c, n->loc, "%s", why);
				return NULL;
			}
			if (p->prov->device && !p->retprobe &&
			    !strcmp(n->str, "duration")) {
				err(c, n->loc, "builtin 'duration' exists in :exit clauses only, like %s:exit",
				    p->name);
				return NULL;
			}
			if (p->prov->device && !strcmp(n->str, "conflicts")) {
				err(c, n->loc, "builtin 'conflicts' exists in gpu:mem:GLOB:shared clauses only");
				return NULL;
			}
			if (p->prov->device && p->prov->has_builtin(&(struct probe){ .mem =
					PTX_MEM_LOAD }, n->str)) {
				err(c, n->loc, "builtin '%s' exists in gpu:mem clauses only",
				    n->str);
				return NULL;
			}
			if (!strncmp(n->str, "args->", 6))
				err(c, n->loc, "%s has no field '%s'", p->name,
				    n->str + 6);
			else
				err(c, n->loc, "builtin '%s' is not available in %s probes",
				    n->str, p->prov->name);
			return NULL;
		}
	}
	return provider_type(c->ci, n->str);
}

static struct type *posarg_type(struct ctx *c, struct node *n)
{
	const char *s = n->ival >= 1 && c->u->argc > 0 &&
			n->ival <= (uint64_t)c->u->argc ?
			c->u->argv[n->ival - 1] : "";
	char *end;

	if (!*s)
		return type_int(true);
	strtoll(s, &end, 0);
	return *end ? type_string() : type_int(true);
}

/* unroll($N): the count from the arguments; false after an error. */
static bool posarg_count(struct ctx *c, struct node *n)
{
	const char *s = n->a->ival >= 1 && c->u->argc > 0 &&
			n->a->ival <= (uint64_t)c->u->argc ?
			c->u->argv[n->a->ival - 1] : "0";
	char *end;

	errno = 0;
	n->ival = strtoull(s, &end, 0);
	if (errno || *end || !*s || *s == '-') {
		err(c, n->a->loc, "unroll count must be an integer, not '%s'", s);
		return false;
	}
	return true;
}

static enum fmt_argty fmt_ty(const struct type *t)
{
	if (t->kind == T_STR || t->kind == T_TIME || t->kind == T_USER ||
	    t->kind == T_PROBE || t->kind == T_STACK || t->kind == T_SYM)
		return FMT_STR;
	if (t->kind == T_BUF)
		return FMT_BUF;
	return t->is_signed ? FMT_INT : FMT_UINT;
}

static struct type *args_tuple(struct ctx *c, struct node *args, bool *ok)
{
	struct type *ts[32];
	int n = 0;

	*ok = true;
	for (struct node *a = args; a; a = a->next) {
		struct type *t = check_expr(c, a);

		if (!t) {
			*ok = false;
			continue;
		}
		if (n == 32) {
			err(c, a->loc, "too many arguments (at most 32)");
			*ok = false;
			break;
		}
		ts[n++] = t;
	}
	return type_tuple(ts, n);
}

static struct type *check_printf(struct ctx *c, struct node *n)
{
	struct node *f = n->args;
	enum fmt_argty tys[32];
	char msg[256];
	bool ok;
	int off;

	if (!f || f->kind != N_STR) {
		err(c, f ? f->loc : n->loc, "printf() expects a format string literal first");
		return NULL;
	}
	struct type *args = args_tuple(c, f->next, &ok);

	if (!ok)
		return NULL;
	for (int i = 0; i < args->nelems; i++) {
		struct node *a = f->next;

		for (int j = 0; j < i; j++)
			a = a->next;
		if (!is_value(args->elems[i]) || args->elems[i]->kind == T_TUPLE) {
			err(c, a->loc, "printf() cannot print a value of type %s",
			    type_str(args->elems[i]));
			return NULL;
		}
		tys[i] = fmt_ty(args->elems[i]);
	}
	if (fmt_check(f->str, tys, args->nelems, msg, sizeof(msg), &off)) {
		struct loc l = f->loc;

		/* point at the conversion (+1 for the quote), or the call */
		if (off >= 0)
			l.col += 1 + off;
		else
			l = n->loc;
		err(c, l, "%s", msg);
		return NULL;
	}
	if (c->report)
		n->ival = add_event(c->u, (struct event_desc){
			.kind = EV_PRINTF, .fmt = f->str, .args = args });
	return type_void();
}

static struct node *nth(struct node *n, int i)
{
	while (i-- && n)
		n = n->next;
	return n;
}

/* A whole-map argument: @m without keys. */
static struct map_sym *map_arg(struct ctx *c, struct node *call, struct node *a)
{
	if (!a || a->kind != N_MAP || a->nargs) {
		err(c, a ? a->loc : call->loc, "%s() expects a map without keys, like %s(@m)",
		    call->str, call->str);
		return NULL;
	}
	struct map_sym *m = map_get(c, a);

	if (!m->val && c->report) {
		err(c, a->loc, "undefined map: %s", m->name);
		return NULL;
	}
	return m;
}

static int64_t signal_number(const char *name)
{
	static const struct { const char *n; int v; } sigs[] = {
		{ "HUP", 1 }, { "INT", 2 }, { "QUIT", 3 }, { "ILL", 4 },
		{ "TRAP", 5 }, { "ABRT", 6 }, { "BUS", 7 }, { "FPE", 8 },
		{ "KILL", 9 }, { "USR1", 10 }, { "SEGV", 11 }, { "USR2", 12 },
		{ "PIPE", 13 }, { "ALRM", 14 }, { "TERM", 15 }, { "STKFLT", 16 },
		{ "CHLD", 17 }, { "CONT", 18 }, { "STOP", 19 }, { "TSTP", 20 },
		{ "TTIN", 21 }, { "TTOU", 22 }, { "URG", 23 }, { "XCPU", 24 },
		{ "XFSZ", 25 }, { "VTALRM", 26 }, { "PROF", 27 }, { "WINCH", 28 },
		{ "IO", 29 }, { "PWR", 30 }, { "SYS", 31 },
	};

	if (!strncmp(name, "SIG", 3))
		name += 3;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcmp(sigs[i].n, name))
			return sigs[i].v;
	return -1;
}

/* An integer argument that must be a literal: its value, or -1. */
static int64_t literal_arg(struct ctx *c, struct node *call, struct node *a,
			   const char *what)
{
	int64_t v;

	if (!const_int(a, &v) || v < 0) {
		err(c, a->loc, "%s() %s must be a non-negative integer literal",
		    call->str, what);
		return -1;
	}
	return v;
}

/* str, buf, strncmp, strftime, signal: calls that give a value or act
 * in the probe itself */
static struct type *check_value_call(struct ctx *c, struct node *n)
{
	const char *f = n->str;
	struct node *a = n->args, *b = a ? a->next : NULL;
	struct type *ta = NULL, *tb = NULL;
	int want_min = 1, want_max = 2;

	if (!strcmp(f, "strncmp"))
		want_min = want_max = 3;
	else if (!strcmp(f, "buf") || !strcmp(f, "strftime"))
		want_min = 2;
	else if (!strcmp(f, "signal"))
		want_max = 1;
	if (n->nargs < want_min || n->nargs > want_max) {
		if (want_min == want_max)
			err(c, n->loc, "%s() takes %d arguments, %d given", f,
			    want_min, n->nargs);
		else
			err(c, n->loc, "%s() takes %d or %d arguments, %d given", f,
			    want_min, want_max, n->nargs);
		return NULL;
	}
	if (!strcmp(f, "signal")) {
		int64_t v;

		if (!c->unsafe) {
			err(c, n->loc, "signal() is an unsafe function being used in safe mode (run with --unsafe)");
			return NULL;
		}
		for (int i = 0; i < c->ci->nprobes; i++)
			if (!strcmp(c->ci->probes[i]->prov->name, "BEGIN") ||
			    !strcmp(c->ci->probes[i]->prov->name, "END")) {
				err(c, n->loc, "signal can not be used with \"%s\" probes",
				    c->ci->probes[i]->prov->name);
				return NULL;
			}
		if (a->kind == N_STR) {
			v = signal_number(a->str);
			if (v < 0) {
				err(c, a->loc, "unknown signal '%s'", a->str);
				return NULL;
			}
			a->kind = N_INT;	/* the number from now on */
			a->ival = v;
		}
		ta = check_expr(c, a);
		if (!ta)
			return NULL;
		if (const_int(a, &v) && (v < 1 || v > 64)) {
			err(c, a->loc, "signal %lld is not a valid signal number",
			    (long long)v);
			return NULL;
		}
		if (!is_int(ta)) {
			err(c, a->loc, "signal() expects a signal number or name");
			return NULL;
		}
		return type_void();
	}
	if (!strcmp(f, "strftime")) {
		if (a->kind != N_STR) {
			err(c, a->loc, "strftime() expects a format string literal first");
			return NULL;
		}
		tb = check_expr(c, b);
		if (!tb)
			return NULL;
		if (!is_int(tb)) {
			err(c, b->loc, "strftime() expects a time in nanoseconds (nsecs), not %s",
			    type_str(tb));
			return NULL;
		}
		if (c->report) {
			const char **fs = realloc(c->u->tfmts,
				(c->u->ntfmts + 1) * sizeof(*fs));

			if (!fs) {
				fputs("gputrace: out of memory\n", stderr);
				abort();
			}
			c->u->tfmts = fs;
			fs[c->u->ntfmts] = a->str;
			n->ival = c->u->ntfmts++;
		}
		return type_time();
	}
	ta = check_expr(c, a);
	tb = b ? check_expr(c, b) : NULL;
	if (!ta || (b && !tb))
		return NULL;
	if (!strcmp(f, "strncmp")) {
		if (ta->kind != T_STR || tb->kind != T_STR) {
			err(c, n->loc, "strncmp() compares two strings, not %s and %s",
			    type_str(ta), type_str(tb));
			return NULL;
		}
		if (ta->symbol || tb->symbol) {
			/* as '==' is refused: a kernel key is no text */
			err(c, ta->symbol ? a->loc : b->loc, "strncmp() cannot "
			    "read 'kernel' as text; select kernels with a GLOB "
			    "in the probe (cuda:launch:GLOB, gpu:kernel:GLOB)");
			return NULL;
		}
		if (literal_arg(c, n, b->next, "length") < 0)
			return NULL;
		return type_int(false);
	}
	/* str(p[, n]), buf(p, n) */
	if (ta->kind == T_STR && ta->symbol) {
		/* str(kernel) is kernel; a part of its key is nothing */
		if (!b && f[0] == 's')
			return ta;
		err(c, a->loc, "%s() cannot cut 'kernel' (a kernel key, shown "
		    "as its name when printed)", f);
		return NULL;
	}
	if (!type_is_num(ta) && !(ta->kind == T_STR && f[0] == 's')) {
		err(c, a->loc, "%s() expects a pointer%s, not %s", f,
		    f[0] == 's' ? " or a string" : "", type_str(ta));
		return NULL;
	}
	if (b && !is_int(tb)) {
		err(c, b->loc, "%s() length must be an integer, not %s", f,
		    type_str(tb));
		return NULL;
	}
	return f[0] == 's' ? type_string() : type_buf();
}

/* ustack, ustack(N), ustack(perf), ustack(perf, N); kstack alike */
static struct type *check_stack(struct ctx *c, struct node *n)
{
	struct node *a = n->args;
	bool perf = false;
	int64_t limit = GT_STACK_LIMIT;

	if (n->nargs > 2) {
		err(c, n->loc, "%s() takes up to 2 arguments (%d provided)",
		    n->str, n->nargs);
		return NULL;
	}
	if (a && a->kind == N_BUILTIN &&
	    (!strcmp(a->str, "perf") || !strcmp(a->str, "bpftrace"))) {
		perf = a->str[0] == 'p';
		a = a->next;
	} else if (a && (n->nargs == 2 || a->kind == N_BUILTIN)) {
		err(c, a->loc, "%s() takes a stack mode (bpftrace or perf) and an integer literal limit, like %s(perf, 8)",
		    n->str, n->str);
		return NULL;
	}
	if (a && !const_int(a, &limit)) {
		err(c, a->loc, "%s() expects an integer literal limit", n->str);
		return NULL;
	}
	if (limit < 1 || limit > GT_STACK_MAX) {
		err(c, a->loc, "%s() limit must be between 1 and %d, %lld given",
		    n->str, GT_STACK_MAX, (long long)limit);
		return NULL;
	}
	return type_stack(n->str[0] == 'u', perf, (int)limit);
}

/* usym(addr), ksym(addr): the address, shown as its symbol's name;
 * strerror(e) alike */
static struct type *check_sym(struct ctx *c, struct node *n)
{
	struct type *t;

	if (n->nargs != 1) {
		err(c, n->loc, "%s() takes 1 argument, %d given", n->str, n->nargs);
		return NULL;
	}
	t = check_expr(c, n->args);
	if (!t)
		return NULL;
	if (!is_int(t)) {
		err(c, n->args->loc, "%s() expects an integer (%s), not %s",
		    n->str, n->str[0] == 's' ? "an errno" : "an address",
		    type_str(t));
		return NULL;
	}
	/* strerror(e): the errno, its text written by the tracer */
	return n->str[0] == 's' ? type_errno() : type_sym(n->str[0] == 'u');
}

/*
 * len(@m), has_key(@m, key) (bpftrace 0.21): the map's element count and
 * whether KEY is in it.  has_key keeps an N_MAP of the key in n->a.
 */
static struct type *check_map_query(struct ctx *c, struct node *n)
{
	bool has = n->str[0] == 'h';
	struct node *a = n->args, *k;
	struct map_sym *m;

	if (n->nargs != (has ? 2 : 1)) {
		err(c, n->loc, has ? "has_key() takes a map and a key, like has_key(@m, key)" :
		    "len() takes a map, like len(@m)");
		return NULL;
	}
	m = map_arg(c, n, a);
	if (!m)
		return NULL;
	if (has) {
		k = ast_node(N_MAP, a->loc);
		k->str = a->str;
		k->args = a->next->kind == N_TUPLE ? a->next->args : a->next;
		k->nargs = a->next->kind == N_TUPLE ? a->next->nargs : 1;
		map_get(c, k);
		check_key(c, k, m);
		n->a = k;
	}
	mark_map(c, m);
	return type_int(!has);
}

/*
 * uaddr("name"): the address of a data symbol of the probed binary, as
 * its symbol table gives it (like bpftrace 0.17: variables only, and
 * no load bias in a PIE).  Resolved now, into n->ival.
 */
static struct type *check_uaddr(struct ctx *c, struct node *n)
{
	struct type *t = type_int(false);
	bool found = false;

	t->ptr = true;
	if (n->nargs != 1 || n->args->kind != N_STR) {
		err(c, n->nargs == 1 ? n->args->loc : n->loc,
		    "uaddr() expects a string literal, like uaddr(\"name\")");
		return NULL;
	}
	for (int i = 0; i < c->ci->nprobes; i++) {
		struct probe *p = c->ci->probes[i];

		if (p->prov != &provider_uprobe && p->prov != &provider_uretprobe) {
			err(c, n->loc, "uaddr() can only be used in uprobe and uretprobe probes, not %s",
			    p->prov->name);
			return NULL;
		}
	}
	for (int i = 0; c->report && i < c->ci->nprobes; i++) {
		const struct probe *p = c->ci->probes[i];
		struct syms s;
		char msg[256];
		uint64_t addr = 0;
		bool here = false;

		if (syms_read(p->path, SYMS_OBJECTS | SYMS_DEBUG, &s, msg,
			      sizeof(msg))) {
			err(c, n->loc, "uaddr(): %s", msg);
			return NULL;
		}
		for (size_t j = 0; j < s.n && !here; j++)
			if (s.funcs[j].object && !strcmp(s.funcs[j].name, n->args->str)) {
				addr = s.funcs[j].addr;
				here = true;
			}
		syms_free(&s);
		if (!here) {
			err(c, n->args->loc, "could not resolve symbol %s:%s (uaddr() takes data symbols: variables)",
			    p->path, n->args->str);
			return NULL;
		}
		if (found && addr != n->ival) {
			err(c, n->args->loc, "uaddr(\"%s\") has different addresses in the probed binaries",
			    n->args->str);
			return NULL;
		}
		n->ival = addr;
		found = true;
	}
	return t;
}

/*
 * kname(kernel): the same key, printed short (runtime/kname_fold.c);
 * map entries that print alike are one.  Host and device clauses.
 */
static struct type *check_kname(struct ctx *c, struct node *n)
{
	struct type *t;

	if (n->nargs != 1) {
		err(c, n->loc, "kname() takes 1 argument, %d given", n->nargs);
		return NULL;
	}
	t = check_expr(c, n->args);
	if (!t)
		return NULL;
	if (t->kind != T_STR || !t->symbol) {
		err(c, n->args->loc, "kname() takes 'kernel', not %s",
		    type_str(t));
		return NULL;
	}
	return type_symbol_base();
}

static struct type *check_call(struct ctx *c, struct node *n)
{
	const char *f = n->str;
	struct event_desc ev = { 0 };

	if (agg_lookup(f) >= 0) {
		err(c, n->loc, "%s() is an aggregation: assign it to a map, like @x = %s(...)",
		    f, f);
		return NULL;
	}
	if (!strcmp(f, "printf"))
		return check_printf(c, n);
	if (!strcmp(f, "kname"))
		return check_kname(c, n);
	if (c->ci->device && strcmp(f, "delete")) {
		err(c, n->loc, "%s() is not available in gpu: probes", f);
		return NULL;
	}
	if (!strcmp(f, "ustack") || !strcmp(f, "kstack"))
		return check_stack(c, n);
	if (!strcmp(f, "usym") || !strcmp(f, "ksym"))
		return check_sym(c, n);
	if (!strcmp(f, "uaddr"))
		return check_uaddr(c, n);
	if (!strcmp(f, "len") || !strcmp(f, "has_key"))
		return check_map_query(c, n);
	if (!strcmp(f, "strerror"))
		return check_sym(c, n);
	if (!strcmp(f, "time")) {
		if (n->nargs > 1 || (n->nargs == 1 && n->args->kind != N_STR)) {
			err(c, n->loc, "time() takes an optional format string literal");
			return NULL;
		}
		ev.kind = EV_TIME;
		ev.fmt = n->nargs ? n->args->str : NULL;
	} else if (!strcmp(f, "exit")) {
		if (n->nargs > 1) {
			err(c, n->loc, "exit() takes at most one argument, %d given", n->nargs);
			return NULL;
		}
		struct type *t = n->nargs ? check_expr(c, n->args) : NULL;

		if (n->nargs && !t)
			return NULL;
		if (t && !is_int(t)) {
			err(c, n->args->loc, "exit() expects an integer exit status");
			return NULL;
		}
		ev.kind = EV_EXIT;
		ev.args = args_tuple(c, NULL, &(bool){ 0 });
	} else if (!strcmp(f, "clear") || !strcmp(f, "zero")) {
		if (n->nargs != 1) {
			err(c, n->loc, "%s() takes 1 argument, %d given", f, n->nargs);
			return NULL;
		}
		ev.map = map_arg(c, n, n->args);
		if (!ev.map)
			return NULL;
		ev.kind = f[0] == 'c' ? EV_CLEAR : EV_ZERO;
	} else if (!strcmp(f, "delete")) {
		struct node *a = n->args;

		if (n->nargs != 1 || a->kind != N_MAP) {
			err(c, a ? a->loc : n->loc, "delete() expects a map element, like delete(@m[key])");
			return NULL;
		}
		struct map_sym *m = map_get(c, a);

		/* as clear() and zero(): codegen has no map to delete from */
		if (!m->val && c->report) {
			err(c, a->loc, "undefined map: %s", m->name);
			return NULL;
		}
		check_key(c, a, m);
		mark_map(c, m);
		return type_void();
	} else if (!strcmp(f, "print")) {
		struct node *a = n->args;

		if (n->nargs < 1 || n->nargs > 3) {
			err(c, n->loc, "print() takes 1 to 3 arguments, %d given", n->nargs);
			return NULL;
		}
		if (a->kind == N_MAP && !a->nargs) {
			ev.map = map_arg(c, n, a);
			if (!ev.map)
				return NULL;
			ev.kind = EV_PRINT_MAP;
			for (int i = 1; i < n->nargs; i++) {
				int64_t v;

				if (!const_int(nth(a, i), &v) || v < 0) {
					err(c, nth(a, i)->loc, "print() top and div must be non-negative integer literals");
					return NULL;
				}
				if (i == 1)
					ev.top = v;
				else
					ev.div = v;
			}
		} else {
			if (n->nargs != 1) {
				err(c, n->loc, "print() of a value takes 1 argument");
				return NULL;
			}
			struct type *t = check_expr(c, a);

			if (!t)
				return NULL;
			if (t->kind == T_PTR) {
				/* bpftrace 0.17's words */
				err(c, a->loc, "%s type passed to print() is not printable",
				    type_str(t));
				return NULL;
			}
			if (!is_value(t)) {
				err(c, a->loc, "print() cannot print a value of type %s",
				    type_str(t));
				return NULL;
			}
			struct type *one[1] = { t };

			ev.kind = EV_PRINT_VAL;
			ev.args = type_tuple(one, 1);
		}
	} else if (!strcmp(f, "str") || !strcmp(f, "buf") ||
		   !strcmp(f, "strncmp") || !strcmp(f, "strftime") ||
		   !strcmp(f, "signal")) {
		return check_value_call(c, n);
	} else if (!strcmp(f, "join")) {
		struct type *t = n->nargs ? check_expr(c, n->args) : NULL;

		if (n->nargs < 1 || n->nargs > 2 || !t || !type_is_num(t) ||
		    (n->nargs == 2 && n->args->next->kind != N_STR)) {
			if (!n->nargs || t)
				err(c, n->loc, "join() takes a pointer to an array of strings and an optional delimiter literal");
			return NULL;
		}
		ev.kind = EV_JOIN;
		ev.fmt = n->nargs == 2 ? n->args->next->str : " ";
	} else if (!strcmp(f, "cat") || !strcmp(f, "system")) {
		if (f[0] == 's' && !c->unsafe) {
			err(c, n->loc, "system() is an unsafe function being used in safe mode (run with --unsafe)");
			return NULL;
		}
		if (!check_printf(c, n))
			return NULL;
		if (c->report) {
			c->u->events[n->ival].kind = f[0] == 'c' ? EV_CAT : EV_SYSTEM;
			return type_void();
		}
		return type_void();
	} else {
		err(c, n->loc, "unknown function '%s'", f);
		return NULL;
	}
	if (c->report)
		n->ival = add_event(c->u, ev);
	return type_void();
}

/* A non-negative literal: a number, or a positional argument (0 unset) */
static bool literal(struct ctx *c, const struct node *n)
{
	if (n->kind == N_POSARG)
		return n->ival < 1 || n->ival > (uint64_t)c->u->argc ||
		       c->u->argv[n->ival - 1][0] != '-';
	return n->kind == N_INT;
}

/*
 * bpftrace 0.17 divides as unsigned and warns where an operand may be
 * negative: signed and not a non-negative literal.
 */
static void warn_signed_divmod(struct ctx *c, struct node *n,
			       const struct type *a, const struct type *b)
{
	if (!c->report || (n->op != B_DIV && n->op != B_MOD))
		return;
	if ((a->is_signed && !literal(c, n->a)) ||
	    (b->is_signed && !literal(c, n->b)))
		diag_warn(n->loc, "signed operands for '%s' can lead to undefined behavior (cast to unsigned to silence warning)",
			  binop_str(n->op));
}

/*
 * A constant shift count outside 0..63: bpftrace 0.17 accepts it without a
 * word (LLVM leaves the result undefined); we accept it too, but say so,
 * since eBPF and the PTX lowering use the count modulo 64.
 */
static void check_shift(struct ctx *c, struct node *n)
{
	const struct node *k = n->b;
	bool neg = false;

	if (k->kind == N_UNOP && k->op == U_NEG) {
		neg = true;
		k = k->a;
	}
	if (!c->report || k->kind != N_INT || (!neg && k->ival < 64) ||
	    (neg && !k->ival))
		return;
	diag_warn(n->loc, "shift by %s%llu is outside 0..63: the count is taken modulo 64",
		  neg ? "-" : "", (unsigned long long)k->ival);
}

static struct type *check_binop(struct ctx *c, struct node *n)
{
	struct type *a = check_expr(c, n->a), *b = check_expr(c, n->b);

	/* learning: an operator gives an integer even where a map is not
	 * known yet (@n = @n + 1 reads 0 before the first assignment) */
	if ((!a || !b) && !c->report)
		return type_int(true);
	if (!a || !b)
		return NULL;
	if (a->kind == T_STR && b->kind == T_STR &&
	    (n->op == B_EQ || n->op == B_NE) && (a->symbol || b->symbol)) {
		/* a kernel key (gpucode/kname.h) is no text to compare */
		err(c, n->loc, "'kernel' cannot be compared as a string; select "
		    "kernels with a GLOB in the probe (cuda:launch:GLOB, "
		    "gpu:kernel:GLOB)");
		return NULL;
	}
	if (a->kind == T_STR && b->kind == T_STR &&
	    (n->op == B_EQ || n->op == B_NE))
		return type_int(false);
	if (!type_is_num(a) || !type_is_num(b)) {
		err(c, n->loc, "type mismatch for '%s': comparing %s with %s",
		    binop_str(n->op), type_str(a), type_str(b));
		return NULL;
	}
	if (a->kind == T_PTR || b->kind == T_PTR) {
		/* C pointer arithmetic: p + i moves by i elements */
		if (n->op >= B_EQ)
			return type_int(false);
		if (n->op == B_ADD && (a->kind != T_PTR || b->kind != T_PTR))
			return a->kind == T_PTR ? a : b;
		if (n->op == B_SUB && a->kind == T_PTR && b->kind != T_PTR)
			return a;
		if (n->op == B_SUB && type_same(a, b))
			return type_int(true);
		err(c, n->loc, "invalid operands to '%s': %s and %s",
		    binop_str(n->op), type_str(a), type_str(b));
		return NULL;
	}
	if ((n->op == B_DIV || n->op == B_MOD) && n->b->kind == N_INT &&
	    n->b->ival == 0) {
		err(c, n->loc, "division by zero");
		return NULL;
	}
	warn_signed_divmod(c, n, a, b);
	if (n->op == B_SHL || n->op == B_SHR)
		check_shift(c, n);
	if (n->op >= B_EQ)
		return type_int(false);
	return type_int(a->is_signed && b->is_signed);
}

static struct type *check_map_read(struct ctx *c, struct node *n)
{
	struct map_sym *m = map_get(c, n);

	check_key(c, n, m);
	if (!m->val) {
		if (c->report)
			err(c, n->loc, "undefined map: %s", m->name);
		return NULL;
	}
	if (m->val->kind == T_AGG) {
		err(c, n->loc, "map %s holds a %s() aggregation, which cannot be used as a value",
		    m->name, agg_name(m->val->agg));
		return NULL;
	}
	return m->val;
}

static struct type *check_incdec(struct ctx *c, struct node *n)
{
	struct node *lv = n->a;

	if (lv->kind == N_VAR) {
		struct var_sym *v = var_find(c, lv->str);

		if (!v) {
			err(c, lv->loc, "undefined variable %s", vname(lv->str));
			return NULL;
		}
		lv->sym = v;
		if (!is_int(v->type)) {
			err(c, lv->loc, "%s is not an integer", vname(lv->str));
			return NULL;
		}
		lv->type = v->type;
		return v->type;
	}
	struct map_sym *m = map_get(c, lv);

	check_key(c, lv, m);
	mark_map(c, m);
	map_set_val(c, m, type_int(true), n->loc);
	if (m->val && !is_int(m->val)) {
		err(c, lv->loc, "%s does not hold an integer", m->name);
		return NULL;
	}
	lv->type = m->val;
	return m->val;
}

/* The type a cast or sizeof names: n->str with n->ival '*'s. */
static struct type *named_type(struct ctx *c, struct node *n)
{
	struct type *t;

	if (!strncmp(n->str, "struct ", 7)) {
		t = cstruct_find(c->u->structs, n->str);
		if (!t) {
			err(c, n->loc, "unknown %s: define it in the script, like %s { int a; }",
			    n->str, n->str);
			return NULL;
		}
	} else {
		t = type_named_int(n->str);
	}
	for (uint64_t i = 0; i < n->ival; i++)
		t = type_ptr(t);
	return t;
}

static struct type *check_cast(struct ctx *c, struct node *n)
{
	struct type *to = named_type(c, n), *from = check_expr(c, n->a);

	if (!to || !from)
		return NULL;
	if (to->kind == T_STRUCT) {
		err(c, n->loc, "cannot cast to %s, only to a pointer to it: (%s *)",
		    to->name, to->name);
		return NULL;
	}
	if (!type_is_num(from)) {
		err(c, n->loc, "cannot cast %s to %s", type_str(from), type_str(to));
		return NULL;
	}
	return to;
}

/* sizeof: a constant, kept in n->slen */
static struct type *check_sizeof(struct ctx *c, struct node *n)
{
	struct type *t = n->a ? check_expr(c, n->a) : named_type(c, n);

	if (!t)
		return NULL;
	if (t->kind == T_STRUCT && !t->fields) {
		err(c, n->loc, "sizeof of %s, which is not defined", t->name);
		return NULL;
	}
	if (t->kind == T_VOID || t->kind == T_AGG) {
		err(c, n->loc, "sizeof of a value of type %s", type_str(t));
		return NULL;
	}
	n->slen = t->kind == T_TUPLE ? t->size : t->bytes;
	return type_int(false);
}

/*
 * *p, p->f, a[i] read user memory; on the GPU device memory, integers
 * and pointers only (checked against the allocations the agent knows),
 * with structs and arrays on the way to one.  T: the type read, or NULL.
 */
static struct type *mem_read(struct ctx *c, struct node *n, struct type *t)
{
	if (!t || !c->ci->device || t->kind == T_INT || t->kind == T_PTR ||
	    t->kind == T_STRUCT || t->kind == T_ARRAY)
		return t;
	err(c, n->loc, "gpu: probes read integers and pointers from device "
	    "memory, not %s", type_str(t));
	return NULL;
}

/* The type read through a pointer to T; NULL after an error. */
static struct type *pointee(struct ctx *c, struct node *n, struct type *t)
{
	if (t->kind != T_PTR) {
		err(c, n->loc, "cannot dereference %s: cast it to a pointer first, like *(uint64 *)x",
		    type_str(t));
		return NULL;
	}
	if (t->elem->kind == T_STRUCT && !t->elem->fields) {
		err(c, n->loc, "%s is not defined", t->elem->name);
		return NULL;
	}
	return t->elem;
}

static struct type *check_deref(struct ctx *c, struct node *n)
{
	struct type *t = check_expr(c, n->a);

	if (!t)
		return NULL;
	return mem_read(c, n, pointee(c, n, t));
}

static struct type *check_field(struct ctx *c, struct node *n)
{
	struct type *t = check_expr(c, n->a), *st;

	if (!t)
		return NULL;
	if (n->post) {
		if (t->kind != T_PTR || t->elem->kind != T_STRUCT) {
			err(c, n->loc, "'->' needs a pointer to a struct, not %s",
			    type_str(t));
			return NULL;
		}
		st = pointee(c, n, t);
		if (!st)
			return NULL;
	} else if (t->kind != T_STRUCT) {
		err(c, n->loc, "'.%s' needs a struct, not %s%s", n->str, type_str(t),
		    t->kind == T_PTR ? " (use '->' on a pointer)" : "");
		return NULL;
	} else {
		st = t;
	}
	for (int i = 0; i < st->nfields; i++)
		if (!strcmp(st->fields[i].name, n->str)) {
			n->ival = st->fields[i].offset;
			return mem_read(c, n, st->fields[i].type);
		}
	err(c, n->loc, "%s has no field named '%s'", st->name, n->str);
	return NULL;
}

static struct type *check_index(struct ctx *c, struct node *n)
{
	struct type *t = check_expr(c, n->a), *i = check_expr(c, n->b);

	if (!t || !i)
		return NULL;
	if (!is_int(i)) {
		err(c, n->b->loc, "an index must be an integer, not %s", type_str(i));
		return NULL;
	}
	if (t->kind == T_ARRAY)
		return mem_read(c, n, t->elem);
	if (t->kind == T_PTR)
		return mem_read(c, n, pointee(c, n, t));
	err(c, n->loc, "cannot index a value of type %s", type_str(t));
	return NULL;
}

static struct type *check_expr_(struct ctx *c, struct node *n)
{
	struct type *t;

	switch (n->kind) {
	case N_INT:
		return type_int(true);
	case N_STR:
		if (n->slen >= GT_STRLEN) {
			err(c, n->loc, "string literal too long (%zu bytes, at most %d)",
			    n->slen, GT_STRLEN - 1);
			return NULL;
		}
		t = type_string();
		t->bytes = n->slen + 1;	/* sizeof("abc") is 4 */
		return t;
	case N_BUILTIN:
		return check_builtin(c, n);
	case N_VAR: {
		struct var_sym *v = var_find(c, n->str);

		if (!v) {
			err(c, n->loc, "undefined variable %s", vname(n->str));
			return NULL;
		}
		n->sym = v;
		return v->type;
	}
	case N_MAP:
		return check_map_read(c, n);
	case N_POSARG:
		return posarg_type(c, n);
	case N_ARGC:
		return type_int(true);
	case N_CALL:
		return check_call(c, n);
	case N_BINOP:
		return check_binop(c, n);
	case N_UNOP:
		t = check_expr(c, n->a);
		if (!t)
			return NULL;
		if (!type_is_num(t)) {
			err(c, n->loc, "operator '%s' needs an integer, not %s",
			    unop_str(n->op), type_str(t));
			return NULL;
		}
		return n->op == U_LNOT ? type_int(false) : type_int(t->is_signed);
	case N_TERNARY: {
		struct type *cond = check_expr(c, n->a);
		struct type *a = check_expr(c, n->b), *b = check_expr(c, n->c);

		if (!cond || !a || !b)
			return NULL;
		if (!type_is_num(cond)) {
			err(c, n->a->loc, "condition must be an integer, not %s",
			    type_str(cond));
			return NULL;
		}
		if (a->kind == T_VOID && b->kind == T_VOID)
			return a;	/* calls with no value: a statement */
		if (!is_value(a) || !type_same(a, b)) {
			err(c, n->loc, "ternary branches have different types: %s and %s",
			    type_str(a), type_str(b));
			return NULL;
		}
		return a->kind == T_INT ? type_int(a->is_signed && b->is_signed) : a;
	}
	case N_TUPLE: {
		bool ok;

		t = args_tuple(c, n->args, &ok);
		if (!ok)
			return NULL;
		for (int i = 0; i < t->nelems; i++)
			if (!is_value(t->elems[i])) {
				err(c, nth(n->args, i)->loc, "a tuple holds integers, strings and tuples, not %s",
				    type_str(t->elems[i]));
				return NULL;
			}
		return t;
	}
	case N_TUPLE_IDX:
		t = check_expr(c, n->a);
		if (!t)
			return NULL;
		if (t->kind != T_TUPLE) {
			err(c, n->loc, "%s is not a tuple", type_str(t));
			return NULL;
		}
		if (n->ival >= (uint64_t)t->nelems) {
			err(c, n->loc, "tuple index %llu out of range (%d elements)",
			    (unsigned long long)n->ival, t->nelems);
			return NULL;
		}
		return t->elems[n->ival];
	case N_INCDEC:
		return check_incdec(c, n);
	case N_CAST:
		return check_cast(c, n);
	case N_SIZEOF:
		return check_sizeof(c, n);
	case N_DEREF:
		return check_deref(c, n);
	case N_FIELD:
		return check_field(c, n);
	case N_INDEX:
		return check_index(c, n);
	default:
		err(c, n->loc, "not an expression");
		return NULL;
	}
}

static struct type *check_expr(struct ctx *c, struct node *n)
{
	struct type *t = check_expr_(c, n);

	n->type = t;
	return t;
}

static void check_block(struct ctx *c, struct node *blk);

static void check_assign(struct ctx *c, struct node *n)
{
	struct node *lv = n->a, *rhs = n->b;
	struct type *t;

	if (lv->kind == N_MAP && n->op < 0 && rhs->kind == N_CALL &&
	    agg_lookup(rhs->str) >= 0) {
		struct map_sym *m = map_get(c, lv);

		check_key(c, lv, m);
		mark_map(c, m);
		check_agg(c, m, rhs, lv->loc);
		return;
	}
	t = check_expr(c, rhs);
	if (!t)
		return;
	if (!is_value(t)) {
		err(c, rhs->loc, "cannot assign a value of type %s", type_str(t));
		return;
	}
	if (n->op >= 0 && !is_int(t)) {
		err(c, n->loc, "operator '%s=' needs integers", binop_str(n->op));
		return;
	}
	if (lv->kind == N_VAR) {
		struct var_sym *v = var_find(c, lv->str);

		if (!v) {
			if (n->op >= 0) {
				err(c, lv->loc, "undefined variable %s", vname(lv->str));
				return;
			}
			v = var_add(c, lv->str, t);
		} else if (!type_same(v->type, t)) {
			err(c, lv->loc, "type mismatch for %s: assigning a value of type %s to a variable that holds %s",
			    vname(lv->str), type_str(t), type_str(v->type));
			return;
		}
		lv->sym = v;
		lv->type = v->type;
		if (n->op == B_DIV || n->op == B_MOD)
			warn_signed_divmod(c, n, v->type, t);
		return;
	}
	struct map_sym *m = map_get(c, lv);

	check_key(c, lv, m);
	mark_map(c, m);
	if (n->op >= 0 && !m->val) {
		/* @x += 1 on a new map starts from 0 */
		m->val = type_int(true);
	}
	if (n->op >= 0 && m->val->kind != T_INT) {
		err(c, n->loc, "operator '%s=' needs a map that holds integers",
		    binop_str(n->op));
		return;
	}
	map_set_val(c, m, t, lv->loc);
	lv->type = m->val;
	if (n->op == B_DIV || n->op == B_MOD)
		warn_signed_divmod(c, n, m->val, t);
}

static void check_stmt(struct ctx *c, struct node *n)
{
	switch (n->kind) {
	case N_EXPR_STMT:
		if (n->a->kind == N_CALL) {
			struct type *t = check_expr(c, n->a);

			/* ustack(3); ksym(x); */
			if (t && t->kind != T_VOID)
				err(c, n->a->loc, "expression result is not used");
		} else if (n->a->kind == N_INCDEC)
			check_expr(c, n->a);
		else if (n->a->kind == N_TERNARY) {
			struct type *t = check_expr(c, n->a);

			if (t && t->kind != T_VOID)
				err(c, n->a->loc, "expression result is not used");
		}
		else if (check_expr(c, n->a))
			err(c, n->a->loc, "expression result is not used");
		break;
	case N_ASSIGN:
		check_assign(c, n);
		break;
	case N_IF: {
		struct type *t = check_expr(c, n->a);

		if (t && !type_is_num(t))
			err(c, n->a->loc, "condition must be an integer, not %s",
			    type_str(t));
		check_block(c, n->b);
		if (n->c) {
			if (n->c->kind == N_IF)
				check_stmt(c, n->c);
			else
				check_block(c, n->c);
		}
		break;
	}
	case N_UNROLL:
		if (n->a->kind == N_POSARG && !posarg_count(c, n))
			break;
		/* bpftrace 0.17's words */
		if (n->ival < 1 || n->ival > 100) {
			err(c, n->a->loc, "unroll %s value is %d",
			    n->ival < 1 ? "minimum" : "maximum",
			    n->ival < 1 ? 1 : 100);
			break;
		}
		check_block(c, n->b);
		break;
	case N_WHILE: {
		struct type *t;

		t = check_expr(c, n->a);
		if (t && !type_is_num(t))
			err(c, n->a->loc, "condition must be an integer, not %s",
			    type_str(t));
		c->loop_depth++;
		check_block(c, n->b);
		c->loop_depth--;
		break;
	}
	case N_FOR:
		check_for(c, n);
		break;
	case N_BREAK:
	case N_CONTINUE:
		if (!c->loop_depth)
			err(c, n->loc, "'%s' outside of a while loop",
			    n->kind == N_BREAK ? "break" : "continue");
		break;
	case N_RETURN:
		break;
	default:
		err(c, n->loc, "not a statement");
	}
}

static void check_block(struct ctx *c, struct node *blk)
{
	for (struct node *s = blk->args; s; s = s->next)
		check_stmt(c, s);
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?") != NULL;
}

/* Make the probe(s) for attach point TEXT; 0 or -EINVAL after an error. */
static int make_probe(struct unit *u, struct clause_info *ci, const char *text,
		      struct loc loc, int depth)
{
	struct probe *p = ast_alloc(sizeof(*p));
	char *prov = ast_strndup(text, strlen(text));
	char *colon = strchr(prov, ':');
	char msg[512] = "";
	int arg = -1;

	p->name = ast_strndup(text, strlen(text));
	p->target_pid = u->target_pid;
	p->prog_fd = -1;
	if (colon)
		*colon = 0;
	p->prov = provider_find(prov);
	if (!p->prov) {
		diag_error(loc, "unknown probe provider '%s'", prov);
		return -EINVAL;
	}
	if (strcmp(prov, p->prov->name)) {
		/* an alias (i:, u:, begin): the probe is named in full, as in
		 * bpftrace's `probe` and -l */
		size_t n = strlen(p->prov->name) + strlen(text) + 2;
		char *full = ast_alloc(n);

		snprintf(full, n, "%s%s", p->prov->name, text + strlen(prov));
		p->name = full;
	}
	/* gpu:sample is a host probe (in the agent), spelt under gpu: */
	if (p->prov == &provider_gpu && gpu_sample_probe(text))
		p->prov = &provider_gpu_sample;
	/* the rest, split at ':' (the provider may rejoin) */
	for (char *s = colon ? colon + 1 : NULL; s && p->nargs < 4;) {
		char *next = strchr(s, ':');

		if (next && p->nargs < 3)
			*next++ = 0;
		else
			next = NULL;
		p->args[p->nargs++] = s;
		s = next;
	}
	if (p->prov->expand && (has_glob(text) || p->prov->expand_all) &&
	    depth == 0) {
		char **names = NULL;
		int n = p->prov->expand(p, &names, msg, sizeof(msg)), bad = 0;

		if (n < 0) {
			diag_error(loc, "%s", msg[0] ? msg : "cannot expand the probe");
			return -EINVAL;
		}
		if (n == 0)
			diag_error(loc, "no probe matches '%s'", text);
		for (int i = 0; i < n; i++) {
			if (!bad && make_probe(u, ci, names[i], loc, 1))
				bad = 1;
			free(names[i]);
		}
		free(names);
		return n && !bad ? 0 : -EINVAL;
	}
	if (p->prov->parse && p->prov->parse(p, msg, sizeof(msg), &arg)) {
		if (arg >= 0 && arg < p->nargs)
			loc.col += (int)(p->args[arg] - prov);
		diag_error(loc, "%s", msg[0] ? msg : "invalid probe");
		return -EINVAL;
	}
	if (ci->nprobes == ci->cap) {
		int cap = ci->cap ? ci->cap * 2 : 4;
		struct probe **np = ast_alloc(cap * sizeof(*np));

		if (ci->nprobes)
			memcpy(np, ci->probes, ci->nprobes * sizeof(*np));
		ci->probes = np;
		ci->cap = cap;
	}
	if (ci->nprobes && p->prov->device != ci->device) {
		diag_error(loc, "a clause cannot mix gpu: and host probes");
		return -EINVAL;
	}
	ci->device = p->prov->device;
	ci->probes[ci->nprobes++] = p;
	u->nprobes++;
	return 0;
}

/* $N in a probe name stands for the Nth argument (empty when unset). */
static char *subst_posargs(struct unit *u, char *text)
{
	size_t n = 1, len = 0;
	char *out;

	if (!strchr(text, '$'))
		return text;
	for (const char *s = text; *s; s++) {
		n++;
		if (s[0] == '$' && s[1] >= '0' && s[1] <= '9') {
			unsigned long i = strtoul(s + 1, NULL, 10);

			if (i >= 1 && i <= (unsigned long)u->argc)
				n += strlen(u->argv[i - 1]);
		}
	}
	out = ast_alloc(n);
	for (const char *s = text; *s;) {
		if (s[0] == '$' && s[1] >= '0' && s[1] <= '9') {
			char *end;
			unsigned long i = strtoul(s + 1, &end, 10);

			if (i >= 1 && i <= (unsigned long)u->argc) {
				strcpy(out + len, u->argv[i - 1]);
				len += strlen(u->argv[i - 1]);
			}
			s = end;
		} else {
			out[len++] = *s++;
		}
	}
	out[len] = 0;
	return out;
}

static int make_probes(struct unit *u, struct clause *cl, struct clause_info *ci)
{
	int bad = 0;

	for (struct attach *a = cl->aps; a; a = a->next)
		if (make_probe(u, ci, subst_posargs(u, a->text), a->loc, 0))
			bad++;
	return bad ? -EINVAL : 0;
}

int sema_check(struct program *prog, const struct sema_opts *opts,
	       struct unit **out)
{
	struct unit *u = calloc(1, sizeof(*u));
	struct ctx c = { .u = u };
	int err0 = diag_errors();

	if (!u)
		return -ENOMEM;
	u->prog = prog;
	u->argv = opts->argv;
	u->argc = opts->argc;
	u->target_pid = opts->target_pid;
	u->clauses = ast_alloc(prog->nclauses * sizeof(*u->clauses));
	c.unsafe = opts->unsafe;
	for (struct cdef *d = prog->cdefs; d; d = d->next)
		cstruct_define(d, &u->structs);
	for (struct clause *cl = prog->clauses; cl; cl = cl->next)
		make_probes(u, cl, &u->clauses[cl->index]);
	if (diag_errors() != err0)
		goto fail;
	/* learn map types until nothing new is learned (a map may be read
	 * before the clause that fixes its type), then check and report */
	for (int pass = 0, known = -1; pass < 2;) {
		int now = 0;

		c.report = pass == 1;
		for (struct clause *cl = prog->clauses; cl; cl = cl->next) {
			c.clause = cl;
			c.ci = &u->clauses[cl->index];
			c.ci->vars = NULL;
			if (cl->pred) {
				struct type *t = check_expr(&c, cl->pred);

				if (t && !type_is_num(t))
					err(&c, cl->pred->loc, "predicate must be an integer, not %s",
					    type_str(t));
			}
			check_block(&c, cl->body);
		}
		for (struct map_sym *m = u->maps; m; m = m->next)
			now += m->val != NULL;
		if (c.report || now == known)
			pass++;
		known = now;
	}
	if (diag_errors() != err0)
		goto fail;
	sema_mark_kernel_maps(u);
	*out = u;
	return 0;
fail:
	unit_free(u);
	*out = NULL;
	return -EINVAL;
}

void unit_free(struct unit *u)
{
	if (!u)
		return;
	free(u->events);
	free(u->tfmts);
	free(u);
}

void sema_dump(FILE *f, const struct unit *u)
{
	fputs("Maps\n", f);
	for (struct map_sym *m = u->maps; m; m = m->next)
		fprintf(f, "  %s[%s] = %s%s%s\n", m->name,
			m->key ? type_str(m->key) : "",
			m->val ? type_str(m->val) : "?",
			m->host ? " host" : "", m->device ? " device" : "");
	for (struct clause *cl = u->prog->clauses; cl; cl = cl->next) {
		const struct clause_info *ci = &u->clauses[cl->index];

		fprintf(f, "Clause %d (%s)%s\n", cl->index, cl->aps->text,
			ci->device ? " device" : "");
		for (struct var_sym *v = ci->vars; v; v = v->next)
			fprintf(f, "  %s: %s\n", v->name, type_str(v->type));
	}
	ast_dump(f, u->prog);
}

/*
 * for ($kv : @m) { ... } (bpftrace 0.21): $kv is the tuple (key, value)
 * of each element, the key itself a tuple for a map of several keys.
 * The body runs in a callback of bpf_for_each_map_elem (codegen.c), so
 * it is refused where that cannot be: the device, nested, over
 * aggregations (per-CPU values).
 */
static void check_for(struct ctx *c, struct node *n)
{
	struct node *mn = n->c, *v = n->a;
	struct map_sym *m;
	struct type *parts[2], *t;
	struct var_sym *vs;

	if (c->ci->device) {
		err(c, n->loc, "for loops over a map are not available in gpu: probes");
		return;
	}
	if (c->in_for) {
		err(c, n->loc, "for loops over a map cannot be nested");
		return;
	}
	if (mn->nargs) {
		err(c, mn->loc, "for loops take a map without keys, like for ($kv : @m)");
		return;
	}
	m = map_get(c, mn);
	if (!m->val) {
		err(c, mn->loc, "undefined map: %s", m->name);
	} else if (!m->key) {
		err(c, mn->loc, "%s has no keys: a for loop needs a map with keys",
		    m->name);
	} else if (m->val->kind == T_AGG) {
		err(c, mn->loc, "for loops over %s, a map of aggregations, are not supported (per-CPU values)",
		    m->name);
	} else {
		parts[0] = m->key->nelems == 1 ? m->key->elems[0] : m->key;
		parts[1] = m->val;
		t = type_tuple(parts, 2);
		/* the parser gave it a name of its own (loop_var) */
		vs = var_find(c, v->str);
		if (!vs)
			vs = var_add(c, v->str, t);
		v->sym = vs;
		v->type = vs->type;
		mark_map(c, m);
	}
	c->in_for = true;
	c->loop_depth++;
	check_block(c, n->b);
	c->loop_depth--;
	c->in_for = false;
}
