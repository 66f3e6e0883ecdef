// SPDX-License-Identifier: MIT
/*
 * PTX splicer: a list of edits (insert at an offset, maybe replacing a few
 * bytes) applied to the module text in one pass, so that whatever no edit
 * covers is copied unchanged.  docs/ptx-splice.md describes the result.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"
#include "gpucode/ptx_splice_priv.h"

void sb_add(struct sb *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		if (!(p = realloc(b->p, cap))) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void sb_str(struct sb *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

void sb_printf(struct sb *b, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		b->oom = true;	/* our own lines are short */
		return;
	}
	sb_add(b, buf, n);
}

/* Take B's text as an edit at OFF replacing DEL bytes. */
int add_edit(struct job *j, size_t off, size_t del, struct sb *b)
{
	if (b->oom) {
		free(b->p);
		return -ENOMEM;
	}
	if (j->nedits == j->cap) {
		int cap = j->cap ? j->cap * 2 : 16;
		struct edit *e = realloc(j->edits, cap * sizeof(*e));

		if (!e) {
			free(b->p);
			return -ENOMEM;
		}
		j->edits = e;
		j->cap = cap;
	}
	j->edits[j->nedits] = (struct edit){ off, del, b->p, j->nedits };
	j->nedits++;
	b->p = NULL;
	b->len = b->cap = 0;
	return 0;
}

/* Note which of %gt_t0 and %gt_argN TEXT uses. */
static int scan_uses(struct job *j, const char *text)
{
	for (const char *p = text; p && (p = strstr(p, "%gt_")); p += 4) {
		const char *w = p + 4;

		if (!strncmp(w, "t0", 2) && !ptx_ident_char((unsigned char)w[2])) {
			j->need_t0 = true;
		} else if (!strncmp(w, "t0lo", 4) && !ptx_ident_char((unsigned char)w[4])) {
			j->need_t0lo = true;
		} else if (!strncmp(w, "shard", 5) && !ptx_ident_char((unsigned char)w[5])) {
			j->need_shard = true;
		} else if (!strncmp(w, "launch_ns", 9) && !ptx_ident_char((unsigned char)w[9])) {
			j->need_word[2] = true;
		} else if (!strncmp(w, "launch", 6) && !ptx_ident_char((unsigned char)w[6])) {
			j->need_word[1] = true;
		} else if (!strncmp(w, "kernel", 6) && !ptx_ident_char((unsigned char)w[6])) {
			j->need_word[3] = true;
		} else if (w[0] == 'w' && isdigit((unsigned char)w[1])) {
			char *end;
			long n = strtol(w + 1, &end, 10);

			if (ptx_ident_char((unsigned char)*end))
				continue;
			if (n < 1 || n >= PTX_CTX_WORDS) {
				snprintf(j->err, j->errlen, "probe uses %%gt_w%ld; "
					 "the words are 1..%d", n,
					 PTX_CTX_WORDS - 1);
				return -EINVAL;
			}
			j->need_word[n] = true;
		} else if (!strncmp(w, "arg", 3) &&
			   isdigit((unsigned char)w[3])) {
			char *end;
			long n = strtol(w + 3, &end, 10);

			if (ptx_ident_char((unsigned char)*end))
				continue;
			if (n > PTX_MAX_ARG) {
				snprintf(j->err, j->errlen,
					 "probe uses %%gt_arg%ld; at most %d",
					 n, PTX_MAX_ARG);
				return -EINVAL;
			}
			j->need_arg[n] = true;
		}
	}
	return 0;
}

int ptx_highest_arg(const char *text)
{
	const char *p = text;
	int max = -1;

	while (p && (p = strstr(p, "%gt_arg"))) {
		char *end;
		long n;

		p += 7;
		if (!isdigit((unsigned char)*p))
			continue;
		n = strtol(p, &end, 10);
		if (!ptx_ident_char((unsigned char)*end) && n > max &&
		    n <= PTX_MAX_ARG)
			max = (int)n;
		p = end;
	}
	return max;
}

/* TEXT with %gt_uniq replaced by this site's label prefix. */
void add_expanded(struct sb *b, const char *text, int uniq)
{
	const char *p = text, *q;

	while ((q = strstr(p, "%gt_uniq"))) {
		sb_add(b, p, q - p);
		sb_printf(b, "$__gt%d", uniq);
		p = q + 8;
	}
	sb_str(b, p);
}

/* "\t{\n TEXT \n\t}\n": the probe text in a block of its own. */
static void add_block(struct sb *b, const char *text, int uniq)
{
	size_t n;

	sb_str(b, "\t{\n");
	add_expanded(b, text, uniq);
	n = strlen(text);
	if (n && text[n - 1] != '\n')
		sb_str(b, "\n");
	sb_str(b, "\t}\n");
}

/* Load parameter P into %gt_argN, as a u64. */
static void load_arg(struct sb *b, int n, const struct ptx_param *p)
{
	unsigned bytes = p->size < 8 ? p->size : 8;
	unsigned bits = p->elem * 8;

	switch (p->kind) {
	case PTX_P_UNSIGNED:
	case PTX_P_BITS:
	case PTX_P_FLOAT:
	case PTX_P_SIGNED:
		if (p->elem > 8)	/* .b128: the low half */
			bits = 64;
		/* ld widens into the .b64 register: sign for .s, else zero */
		sb_printf(b, "\tld.param.%c%u \t%%gt_arg%d, [%s];\n",
			  p->kind == PTX_P_SIGNED ? 's' : 'u', bits, n,
			  p->name);
		return;
	case PTX_P_AGGREGATE:
		if (!bytes)
			break;
		if (bytes == 8 && p->align >= 8) {
			sb_printf(b, "\tld.param.u64 \t%%gt_arg%d, [%s];\n", n,
				  p->name);
			return;
		}
		/* little-endian assembly of the first bytes, aligned pieces */
		sb_printf(b, "\t{\n\t.reg .b64 %%gt_piece;\n"
			  "\tmov.u64 \t%%gt_arg%d, 0;\n", n);
		for (unsigned off = 0; off < bytes;) {
			unsigned c = 8;

			while (c > 1 && (c > p->align || c > bytes - off ||
					 off % c))
				c /= 2;
			sb_printf(b, "\tld.param.u%u \t%%gt_piece, [%s+%u];\n",
				  c * 8, p->name, off);
			if (off)
				sb_printf(b, "\tshl.b64 \t%%gt_piece, "
					  "%%gt_piece, %u;\n", off * 8);
			sb_printf(b, "\tor.b64 \t%%gt_arg%d, %%gt_arg%d, "
				  "%%gt_piece;\n", n, n);
			off += c;
		}
		sb_str(b, "\t}\n");
		return;
	case PTX_P_OTHER:
		break;
	}
	sb_printf(b, "\tmov.u64 \t%%gt_arg%d, 0;\n", n);
}

/* The launch parameter's words after the context pointer, by name. */
static const char *const ctx_words[4] = { "ctx", "launch", "launch_ns", "kernel" };

/* Declare and load word W of the launch parameter as %gt_NAME. */
static void load_word(struct sb *b, int w)
{
	char name[16];

	if (w < 4)
		snprintf(name, sizeof(name), "%s", ctx_words[w]);
	else
		snprintf(name, sizeof(name), "w%d", w);
	sb_printf(b, "\t.reg .b64 \t%%gt_%s;\n\tld.param.u64 \t%%gt_%s, ["
		  PTX_CTX_PARAM "+%d];\n", name, name, 8 * w);
}

/*
 * Declare, at kernel scope, the registers %gt_d<K>_<N>{a,v,p} that TEXT
 * names: an entry probe's deferred updates, set at entry and applied at
 * the exits (.b64 address and value, .pred whether), once each.
 */
static void declare_deferred(struct sb *b, const char *text)
{
	for (const char *p = text; p && (p = strstr(p, "%gt_d")); p += 5) {
		size_t n = 5;
		char decl[96];

		while (isdigit((unsigned char)p[n]) || p[n] == '_')
			n++;
		if (n > 40 || !strchr("avp", p[n]) || !p[n] ||
		    ptx_ident_char((unsigned char)p[n + 1]))
			continue;
		snprintf(decl, sizeof(decl), "\t.reg .%s \t%.*s;\n",
			 p[n] == 'p' ? "pred" : "b64", (int)n + 1, p);
		if (!b->p || !strstr(b->p, decl))
			sb_str(b, decl);
	}
}

#define T0LO_READ "\tmov.u32 \t%gt_t0lo, %globaltimer_lo;\n"

/* Declarations, context and argument loads, then the entry text. */
static int splice_entry(struct job *j, const struct ptx_func *f, int uniq)
{
	const struct ptx_splice_req *req = j->req;
	bool t0_early = (req->entry && strstr(req->entry, "%gt_t0lo")) ||
			j->mem_t0lo;
	bool shard_early = (req->entry && strstr(req->entry, "%gt_shard")) ||
			   j->mem_shard;
	bool late = f->t0_at > f->entry_at;
	struct sb b = { 0 };
	int rc;

	sb_str(&b, "\t// gputrace probe: entry\n\t.reg .b64 \t%gt_ctx;\n");
	declare_deferred(&b, req->entry);
	declare_deferred(&b, req->exit);
	if (j->need_t0)
		sb_str(&b, "\t.reg .b64 \t%gt_t0;\n");
	for (int i = 0; i <= PTX_MAX_ARG; i++) {
		if (!j->need_arg[i])
			continue;
		if (i >= f->nparams && (req->flags & PTX_SPLICE_STRICT_ARGS)) {
			free(b.p);
			snprintf(j->err, j->errlen,
				 "%s has %d parameters; the probe uses "
				 "%%gt_arg%d", f->name, f->nparams, i);
			return -EINVAL;
		}
		sb_printf(&b, "\t.reg .b64 \t%%gt_arg%d;\n", i);
	}
	sb_str(&b, "\tld.param.u64 \t%gt_ctx, [" PTX_CTX_PARAM "];\n");
	for (int w = 1; w < PTX_CTX_WORDS; w++)
		if (j->need_word[w])
			load_word(&b, w);
	if (j->need_t0)
		sb_str(&b, "\tmov.u64 \t%gt_t0, %globaltimer;\n");
	if (j->need_t0lo)
		sb_str(&b, "\t.reg .b32 \t%gt_t0lo;\n");
	if (j->need_shard)
		sb_str(&b, "\t.reg .b64 \t%gt_shard;\n");
	for (int i = 0; i <= PTX_MAX_ARG; i++) {
		if (!j->need_arg[i])
			continue;
		if (i < f->nparams)
			load_arg(&b, i, &f->params[i]);
		else
			sb_printf(&b, "\tmov.u64 \t%%gt_arg%d, 0;\n", i);
	}
	/*
	 * %gt_t0lo (exit probes' durations) and %gt_shard: at the end of
	 * the kernel's straight-line start, so that their special register
	 * reads neither hold up the kernel's first instructions nor lie on
	 * an exit's last dependent chain (ptxas leaves an S2R next to its
	 * use); they still run once in every thread.  At the entry when the
	 * entry text uses them.
	 */
	if (j->need_t0lo && (t0_early || !late))
		sb_str(&b, T0LO_READ);
	if (j->need_shard && (shard_early || !late))
		sb_str(&b, PTX_SHARD_TEXT("%gt_shard"));
	if (req->entry && req->entry[0])
		add_block(&b, req->entry, uniq);
	if ((rc = add_edit(j, f->entry_at, 0, &b)))
		return rc;
	if (!late)
		return 0;
	if (j->need_t0lo && !t0_early)
		sb_str(&b, T0LO_READ);
	if (j->need_shard && !shard_early)
		sb_str(&b, PTX_SHARD_TEXT("%gt_shard"));
	return b.len ? add_edit(j, f->t0_at, 0, &b) : 0;
}

static int splice_exits(struct job *j, const struct ptx_func *f)
{
	const char *text = j->m->text;
	const char *exit = j->req->exit;
	int rc;

	for (int i = 0; i < f->nsites; i++) {
		const struct ptx_site *s = &f->sites[i];
		struct sb b = { 0 };
		size_t at;

		if (!s->guard) {
			/* before the ret, at its line's start when it has one */
			at = s->op;
			while (at > 0 && (text[at - 1] == ' ' ||
					  text[at - 1] == '\t'))
				at--;
			if (at > 0 && text[at - 1] != '\n')
				at = s->op;
			if (at != s->op || s->kind == PTX_SITE_FALLOFF) {
				add_block(&b, exit, j->uniq++);
			} else {
				/* "L: ret;": the label stays on the block */
				sb_str(&b, "\n");
				add_block(&b, exit, j->uniq++);
				sb_str(&b, "\t");
			}
			if ((rc = add_edit(j, at, 0, &b)))
				return rc;
			continue;
		}
		/* "@P ret;" -> "@!P bra SKIP; { exit } ret; SKIP:" */
		int skip = j->uniq++;

		sb_printf(&b, "@%s%.*s bra \t$__gt%d;\n", s->guard_neg ? "" :
			  "!", (int)s->guard_len, text + s->guard, skip);
		add_block(&b, exit, j->uniq++);
		sb_str(&b, "\t");
		sb_add(&b, text + s->op, s->end - s->op);
		sb_printf(&b, "\n$__gt%d:", skip);
		if ((rc = add_edit(j, s->stmt, s->end - s->stmt, &b)))
			return rc;
	}
	return 0;
}

static int splice_params(struct job *j, const struct ptx_func *f)
{
	struct sb b = { 0 };

	for (int i = 0; i < f->nparams; i++) {
		if (!strcmp(f->params[i].name, PTX_CTX_PARAM)) {
			snprintf(j->err, j->errlen, "%s is already instrumented",
				 f->name);
			return -EEXIST;
		}
	}
	if (!f->lparen) {
		sb_str(&b, "(\n\t" PTX_CTX_DECL "\n)");
		return add_edit(j, f->name_end, 0, &b);
	}
	if (!f->nparams) {
		sb_str(&b, "\n\t" PTX_CTX_DECL "\n");
		return add_edit(j, f->rparen, 0, &b);
	}
	sb_str(&b, ",\n\t" PTX_CTX_DECL);
	return add_edit(j, f->last_param_end, 0, &b);
}

/* `.maxnreg N` among F's performance directives, unless it has one. */
static int splice_maxnreg(struct job *j, const struct ptx_func *f)
{
	const char *t = j->m->text;
	size_t from = f->rparen ? f->rparen : f->name_end;
	struct sb b = { 0 };

	if (!j->req->maxnreg || !f->body_open)
		return 0;
	for (size_t i = from; i + 8 <= f->body_open; i++)
		if (!memcmp(t + i, ".maxnreg", 8))
			return 0;
	sb_printf(&b, ".maxnreg %u\n", j->req->maxnreg);
	return add_edit(j, f->body_open, 0, &b);
}

static bool matches(const struct ptx_splice_req *req, const char *name)
{
	if (req->match)
		return req->match(name, req->match_arg) != 0;
	if (req->names) {
		for (const char *const *n = req->names; *n; n++)
			if (!strcmp(*n, name))
				return true;
		return false;
	}
	return true;
}

static int cmp_edit(const void *a, const void *b)
{
	const struct edit *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->seq - y->seq;
}

static int apply(struct job *j, char **out)
{
	const struct ptx_module *m = j->m;
	struct sb b = { 0 };
	size_t cur = 0;

	if (j->nedits)
		qsort(j->edits, j->nedits, sizeof(*j->edits), cmp_edit);
	for (int i = 0; i < j->nedits; i++) {
		const struct edit *e = &j->edits[i];

		if (e->off < cur || e->off + e->del > m->len) {
			free(b.p);
			snprintf(j->err, j->errlen, "internal: edits overlap");
			return -EINVAL;
		}
		sb_add(&b, m->text + cur, e->off - cur);
		if (e->ins)	/* NULL: a pure deletion */
			sb_str(&b, e->ins);
		cur = e->off + e->del;
	}
	sb_add(&b, m->text + cur, m->len - cur);
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	if (!b.p)	/* empty module, nothing inserted */
		b.p = calloc(1, 1);
	*out = b.p;
	return b.p ? 0 : -ENOMEM;
}

static int plan(struct job *j, int *count)
{
	const struct ptx_module *m = j->m;
	const struct ptx_splice_req *req = j->req;
	bool drop = (req->flags & PTX_SPLICE_ONLY_MATCHED) &&
		    !m->has_sections;
	struct sb b = { 0 };
	int rc;

	if ((rc = scan_uses(j, req->entry)) || (rc = scan_uses(j, req->exit)))
		return rc;
	for (int i = 0; i < req->nmem; i++) {
		if ((rc = scan_uses(j, req->mem[i].text)))
			return rc;
		j->mem_t0lo |= strstr(req->mem[i].text, "%gt_t0lo") != NULL;
		j->mem_shard |= strstr(req->mem[i].text, "%gt_shard") != NULL;
	}
	if (!strncmp(m->target, "sm_", 3))
		j->sm = atoi(m->target + 3);
	if (req->flags & PTX_SPLICE_T0)
		j->need_t0 = true;
	if (m->ver_major < req->min_major ||
	    (m->ver_major == req->min_major &&
	     m->ver_minor < req->min_minor)) {
		sb_printf(&b, "%d.%d", req->min_major, req->min_minor);
		if ((rc = add_edit(j, m->ver_off, m->ver_len, &b)))
			return rc;
	}
	if (req->decls && req->decls[0]) {
		const char **roots = calloc(2 + req->nmem, sizeof(*roots));
		char *pruned = NULL;
		const char *d = req->decls;

		if (!roots)
			return -ENOMEM;
		roots[0] = req->entry;
		roots[1] = req->exit;
		for (int i = 0; i < req->nmem; i++)
			roots[2 + i] = req->mem[i].text;
		rc = (req->flags & PTX_SPLICE_PRUNE) ?
		     ptx_prune_decls(d, roots, 2 + req->nmem, &pruned, j->err,
				     j->errlen) : 0;
		free(roots);
		if (rc)
			return rc;
		if (pruned)
			d = pruned;
		if (d[0]) {
			/* at the end of a text without a last newline, maybe
			 * in a // comment (found by fuzz_ptx's oracle) */
			if (m->decls_at && m->text[m->decls_at - 1] != '\n')
				sb_str(&b, "\n");
			sb_str(&b, d);
			if (d[strlen(d) - 1] != '\n')
				sb_str(&b, "\n");
			sb_str(&b, "\n");
		}
		free(pruned);
		if (b.len && (rc = add_edit(j, m->decls_at, 0, &b)))
			return rc;
	}
	for (int i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i];

		if (!f->is_entry)
			continue;
		if (!f->is_def || !matches(req, f->name)) {
			if (drop && !f->referenced &&
			    (rc = add_edit(j, f->start, f->end - f->start, &b)))
				return rc;
			continue;
		}
		if ((rc = splice_params(j, f)) ||
		    (rc = splice_maxnreg(j, f)) ||
		    (rc = splice_entry(j, f, j->uniq++)) ||
		    (req->exit && (rc = splice_exits(j, f))) ||
		    (req->nmem && (rc = splice_mem(j, f))))
			return rc;
		++*count;
	}
	return 0;
}

int ptx_splice(const struct ptx_module *m, const struct ptx_splice_req *req,
	       char **out_text, char *err, size_t errlen)
{
	struct job j = { .m = m, .req = req, .err = err, .errlen = errlen };
	int count = 0, rc;

	*out_text = NULL;
	if (err && errlen)
		err[0] = 0;
	if (!(j.need_arg = calloc(PTX_MAX_ARG + 1, sizeof(bool)))) {
		rc = -ENOMEM;
	} else {
		rc = plan(&j, &count);
		if (!rc)
			rc = apply(&j, out_text);
	}
	if (rc == -ENOMEM && err && errlen && !err[0])
		snprintf(err, errlen, "out of memory");
	for (int i = 0; i < j.nedits; i++)
		free(j.edits[i].ins);
	free(j.edits);
	free(j.need_arg);
	return rc ? rc : count;
}
