// SPDX-License-Identifier: MIT
/*
 * gpu:mem's half of the PTX reader: the memory instructions of a kernel
 * body, each with its class (global/generic load or store, shared), its
 * bytes per lane, its index among the body's instructions, the source
 * line of the last .loc before it and its address operand recovered
 * ([reg], [reg+imm], [var], [var+imm], [imm]).  The splicer
 * (ptx_splice.c) puts the clauses before each one.  docs/ptx-splice.md,
 * "Memory instructions".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"

static bool word_ch(int c)
{
	return ptx_ident_char(c) || c == '%' || c == '.';
}

/* Bytes of one element of type qualifier W (without its dot), or 0. */
static unsigned type_bytes(const char *w, size_t n)
{
	static const struct { const char *t; unsigned b; } types[] = {
		{ "u8", 1 }, { "s8", 1 }, { "b8", 1 },
		{ "u16", 2 }, { "s16", 2 }, { "b16", 2 }, { "f16", 2 },
		{ "bf16", 2 }, { "e4m3x2", 2 }, { "e5m2x2", 2 },
		{ "u32", 4 }, { "s32", 4 }, { "b32", 4 }, { "f32", 4 },
		{ "f16x2", 4 }, { "bf16x2", 4 }, { "tf32", 4 },
		{ "u64", 8 }, { "s64", 8 }, { "b64", 8 }, { "f64", 8 },
		{ "b128", 16 },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].t) == n && !memcmp(types[i].t, w, n))
			return types[i].b;
	return 0;
}

static bool qual_is(const char *w, size_t n, const char *q)
{
	return strlen(q) == n && !memcmp(w, q, n);
}

int ptx_mem_classify(const char *op, size_t len, unsigned *cls, bool *store,
		     unsigned *size)
{
	const char *p = op, *end = op + len;
	size_t n = strcspn(op, ".");
	unsigned elem = 0, vec = 1;
	bool shared = false, global = false, other = false;

	if (n > len)
		n = len;
	*cls = 0;
	*store = false;
	*size = 0;
	if (qual_is(op, n, "ld") || qual_is(op, n, "ldu"))
		*store = false;
	else if (qual_is(op, n, "st") || qual_is(op, n, "atom") ||
		 qual_is(op, n, "red"))
		*store = true;
	else
		return 0;
	for (p = op + n; p < end && *p == '.';) {
		const char *w = ++p;
		size_t k = 0;

		/* "L1::evict_last", "shared::cta": "::" joins a qualifier */
		while (w + k < end && w[k] != '.')
			k++;
		p = w + k;
		if (qual_is(w, k, "global"))
			global = true;
		else if (qual_is(w, k, "shared") || qual_is(w, k, "shared::cta"))
			shared = true;
		else if (qual_is(w, k, "local") || qual_is(w, k, "param") ||
			 qual_is(w, k, "const") || qual_is(w, k, "shared::cluster") ||
			 !strncmp(w, "param::", 7) || qual_is(w, k, "async") ||
			 qual_is(w, k, "tex") || qual_is(w, k, "bulk"))
			other = true;
		else if (k == 2 && w[0] == 'v' && (w[1] == '2' || w[1] == '4' ||
						 w[1] == '8'))
			vec = w[1] - '0';
		else if (type_bytes(w, k))
			elem = type_bytes(w, k);
	}
	if (other)
		return 0;
	*cls = shared ? PTX_MEM_SHARED : *store ? PTX_MEM_STORE : PTX_MEM_LOAD;
	(void)global;	/* global and generic are one class */
	*size = elem * vec;
	return 1;
}

int ptx_mem_addr(const char *s, size_t len, struct ptx_mem_addr *a)
{
	size_t i = 0, n;
	const char *num = NULL;
	char buf[32], *e;

	memset(a, 0, sizeof(*a));
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	while (len > i && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (i >= len)
		return -EINVAL;
	if (word_ch((unsigned char)s[i]) && !(s[i] >= '0' && s[i] <= '9') &&
	    s[i] != '-') {
		n = 0;
		while (i + n < len && word_ch((unsigned char)s[i + n]))
			n++;
		if (n >= sizeof(a->base))
			return -EINVAL;
		memcpy(a->base, s + i, n);
		a->base[n] = 0;
		a->is_reg = s[i] == '%';
		i += n;
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i == len)
			return 0;
		if (s[i] != '+' && s[i] != '-')
			return -EINVAL;
		if (s[i] == '+')
			i++;
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
	}
	num = s + i;
	n = len - i;
	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, num, n);
	buf[n] = 0;
	errno = 0;
	a->off = strtoll(buf, &e, 0);
	if (*e || errno)
		return -EINVAL;
	return 0;
}

/* A register declaration: "%r" with a <N> range, or a plain name. */
struct regdecl {
	const char *name;
	size_t len;
	bool range;
	unsigned bits;
};

struct scan {
	const char *s;
	size_t pos, end;
	struct regdecl *regs;
	int nregs, cap;
	bool oom;
};

static void skip_blank(struct scan *c)
{
	const char *s = c->s;

	for (;;) {
		while (c->pos < c->end && (s[c->pos] == ' ' || s[c->pos] == '\t' ||
		       s[c->pos] == '\n' || s[c->pos] == '\r'))
			c->pos++;
		if (c->pos + 1 < c->end && s[c->pos] == '/' && s[c->pos + 1] == '/') {
			while (c->pos < c->end && s[c->pos] != '\n')
				c->pos++;
		} else if (c->pos + 1 < c->end && s[c->pos] == '/' &&
			   s[c->pos + 1] == '*') {
			const char *q = strstr(s + c->pos + 2, "*/");

			c->pos = q && (size_t)(q - s) < c->end ? (size_t)(q - s) + 2 :
				 c->end;
		} else {
			return;
		}
	}
}

/* Past the statement's ';' (comments and braces of vector operands). */
static size_t stmt_end(struct scan *c)
{
	const char *s = c->s;

	while (c->pos < c->end && s[c->pos] != ';') {
		if (c->pos + 1 < c->end && s[c->pos] == '/' &&
		    (s[c->pos + 1] == '/' || s[c->pos + 1] == '*')) {
			skip_blank(c);
			continue;
		}
		c->pos++;
	}
	if (c->pos < c->end)
		c->pos++;
	return c->pos;
}

static unsigned reg_bits(const char *t, size_t n)
{
	if (n > 1 && t[0] == '.')
		return 8 * type_bytes(t + 1, n - 1);
	return 0;
}

/* ".reg .b64 %rd<5>;" or ".reg .b32 %r1, %r2;": remember the names. */
static void read_regs(struct scan *c, size_t stop)
{
	const char *s = c->s;
	size_t p = c->pos, t;
	unsigned bits;

	while (p < stop && (s[p] == ' ' || s[p] == '\t'))
		p++;
	t = p;
	while (p < stop && word_ch((unsigned char)s[p]))
		p++;
	bits = reg_bits(s + t, p - t);
	while (bits && p < stop) {
		struct regdecl d = { 0 };

		while (p < stop && (s[p] == ' ' || s[p] == '\t' || s[p] == ','))
			p++;
		if (p >= stop || s[p] != '%')
			break;
		d.name = s + p;
		while (p < stop && word_ch((unsigned char)s[p]))
			p++;
		d.len = s + p - d.name;
		d.bits = bits;
		if (p < stop && s[p] == '<') {
			d.range = true;
			while (p < stop && s[p] != '>')
				p++;
			p++;
		}
		if (c->nregs == c->cap) {
			int cap = c->cap ? 2 * c->cap : 32;
			struct regdecl *v = realloc(c->regs, cap * sizeof(*v));

			if (!v) {
				c->oom = true;
				return;
			}
			c->regs = v;
			c->cap = cap;
		}
		c->regs[c->nregs++] = d;
	}
}

/* Bits of register NAME as declared in the body, 0 when unknown. */
static unsigned lookup_reg(const struct scan *c, const char *name)
{
	size_t n = strlen(name);
	unsigned bits = 0;

	for (int i = 0; i < c->nregs; i++) {
		const struct regdecl *d = &c->regs[i];
		bool hit;

		if (d->range) {
			size_t k = d->len;

			hit = n > k && !memcmp(name, d->name, k);
			while (hit && k < n)
				hit = name[k] >= '0' && name[k++] <= '9';
		} else {
			hit = n == d->len && !memcmp(name, d->name, n);
		}
		if (!hit)
			continue;
		if (bits && bits != d->bits)
			return 0;	/* two scopes disagree */
		bits = d->bits;
	}
	return bits;
}

/* The address of an instruction's operands OPS..END: its first [...]. */
static void site_addr(const struct scan *c, struct ptx_mem_site *m,
		      size_t ops, size_t end)
{
	const char *s = c->s;
	const char *lb = memchr(s + ops, '[', end - ops), *rb;

	rb = lb ? memchr(lb, ']', s + end - lb) : NULL;
	if (!lb || !rb || ptx_mem_addr(lb + 1, rb - lb - 1, &m->addr)) {
		m->why = "its address operand is not [reg], [reg+imm], [var] or [var+imm]";
		return;
	}
	if (m->addr.is_reg) {
		m->addr.bits = lookup_reg(c, m->addr.base);
		if (m->addr.bits != 32 && m->addr.bits != 64)
			m->why = "its address register's width is unknown";
	} else if (m->addr.base[0] && m->cls != PTX_MEM_SHARED &&
		   !m->global) {
		m->why = "a generic access to a named variable";
	}
}

static int add_site(struct ptx_mem_site **v, int *n, int *cap,
		    const struct ptx_mem_site *m)
{
	int rc = PTX_GROW(*v, *n, *cap);

	if (!rc)
		(*v)[(*n)++] = *m;
	return rc;
}

int ptx_mem_sites(const struct ptx_module *mod, const struct ptx_func *f,
		  struct ptx_mem_site **out, int *nout)
{
	struct scan c = { .s = mod->text };
	struct ptx_mem_site *v = NULL;
	int n = 0, cap = 0, insn = 0, line = 0, rc = 0;

	*out = NULL;
	*nout = 0;
	if (!f->is_def || !f->body_close)
		return 0;
	/* the declarations first: a register may be declared after use
	 * in an inner block's text, never mind; nvcc declares at the top */
	c.pos = f->body_open + 1;
	c.end = f->body_close;
	for (;;) {
		skip_blank(&c);
		if (c.pos >= c.end)
			break;
		if (!strncmp(c.s + c.pos, ".reg", 4) &&
		    !word_ch((unsigned char)c.s[c.pos + 4])) {
			size_t at = c.pos + 4, e;

			c.pos = at;
			e = stmt_end(&c);
			c.pos = at;
			read_regs(&c, e);
			c.pos = e;
		} else if (c.s[c.pos] == '{' || c.s[c.pos] == '}') {
			c.pos++;
		} else if (!strncmp(c.s + c.pos, ".loc", 4) ||
			   !strncmp(c.s + c.pos, ".file", 5)) {
			while (c.pos < c.end && c.s[c.pos] != '\n')
				c.pos++;
		} else {
			stmt_end(&c);
		}
	}
	if (c.oom)
		return -ENOMEM;
	c.pos = f->body_open + 1;
	for (;;) {
		struct ptx_mem_site m = { 0 };
		const char *s = c.s;
		size_t w, e;

		skip_blank(&c);
		if (c.pos >= c.end)
			break;
		if (s[c.pos] == '{' || s[c.pos] == '}') {
			c.pos++;
			continue;
		}
		if (!strncmp(s + c.pos, ".loc", 4) &&
		    !word_ch((unsigned char)s[c.pos + 4])) {
			/* .loc FILE LINE COL[, ...] */
			char *endp;
			long fl = strtol(s + c.pos + 4, &endp, 10);
			long ln = strtol(endp, NULL, 10);

			line = fl > 0 && ln > 0 && ln < 1 << 30 ? (int)ln : 0;
			while (c.pos < c.end && s[c.pos] != '\n')
				c.pos++;
			continue;
		}
		if (!strncmp(s + c.pos, ".file", 5)) {
			while (c.pos < c.end && s[c.pos] != '\n')
				c.pos++;
			continue;
		}
		if (s[c.pos] == '.') {		/* a declaration, .pragma */
			stmt_end(&c);
			continue;
		}
		m.stmt = c.pos;
		if (s[c.pos] == '@') {
			c.pos++;
			if (c.pos < c.end && s[c.pos] == '!') {
				m.guard_neg = true;
				c.pos++;
			}
			m.guard = c.pos;
			while (c.pos < c.end && word_ch((unsigned char)s[c.pos]))
				c.pos++;
			m.guard_len = c.pos - m.guard;
			skip_blank(&c);
		}
		w = c.pos;
		while (c.pos < c.end && (word_ch((unsigned char)s[c.pos]) ||
		       (s[c.pos] == ':' && c.pos + 1 < c.end &&
			s[c.pos + 1] == ':' && (c.pos += 1))))
			c.pos++;
		if (c.pos == w) {
			stmt_end(&c);	/* not PTX we know: pass over it */
			continue;
		}
		skip_blank(&c);
		if (!m.guard && c.pos < c.end && s[c.pos] == ':') {
			c.pos++;	/* a label */
			continue;
		}
		m.op = w;
		m.op_len = 0;
		while (m.op_len < c.pos - w && !(s[w + m.op_len] == ' ' ||
		       s[w + m.op_len] == '\t' || s[w + m.op_len] == '\n'))
			m.op_len++;
		e = stmt_end(&c);
		m.end = e;
		m.insn = insn++;
		m.line = line;
		if (!ptx_mem_classify(s + m.op, m.op_len, &m.cls, &m.store,
				      &m.size))
			continue;
		m.global = m.op_len > 7 && memmem(s + m.op, m.op_len, ".global", 7);
		if (!m.size)
			m.why = "its access size is unknown";
		else
			site_addr(&c, &m, m.op + m.op_len, e);
		if ((rc = add_site(&v, &n, &cap, &m)))
			break;
	}
	free(c.regs);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}
