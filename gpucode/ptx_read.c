// SPDX-License-Identifier: MIT
/*
 * PTX reader: enough of the PTX grammar to find, in nvcc's output, the
 * module header, every .entry/.func with its parameters and body, where a
 * kernel's setup ends and where its threads leave.  It keeps offsets into
 * the text rather than a tree, so that the splicer can copy everything it
 * does not change byte for byte.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"

enum tk { T_EOF, T_WORD, T_STR, T_PUNCT, T_ERR };

struct tok {
	enum tk k;
	size_t off, len;
	bool nl;		/* a newline came before it */
};

struct rd {
	const char *s;
	size_t len, pos;
	struct tok t;
	size_t prev_end;	/* just past the token before t */
	char *err;
	size_t errlen;
	int rc;
	int fcap;		/* room in the module's funcs[] */
};

/*
 * Character classes by table: the lexer's inner loops ran most of a
 * parse in isalnum() and isspace() (a locale lookup per byte; a thrust
 * module's 0.5 MB took 6 ms).
 */
static const bool word_tab[256] = {
	['0' ... '9'] = true, ['A' ... 'Z'] = true, ['a' ... 'z'] = true,
	['_'] = true, ['$'] = true, ['%'] = true, ['.'] = true,
};
static const bool space_tab[256] = {
	[' '] = true, ['\t'] = true, ['\n'] = true, ['\r'] = true,
	['\f'] = true, ['\v'] = true,
};

static inline bool word_char(int c)
{
	return word_tab[c & 0xff];
}

static void next(struct rd *r)
{
	const char *s = r->s;
	size_t p = r->pos, n = r->len;
	bool nl = false;

	r->prev_end = r->t.off + r->t.len;
	for (;;) {
		while (p < n && space_tab[(unsigned char)s[p]])
			nl |= s[p++] == '\n';
		if (p + 1 < n && s[p] == '/' && s[p + 1] == '/') {
			while (p < n && s[p] != '\n')
				p++;
		} else if (p + 1 < n && s[p] == '/' && s[p + 1] == '*') {
			size_t q = p + 2;

			while (q + 1 < n && !(s[q] == '*' && s[q + 1] == '/'))
				nl |= s[q++] == '\n';
			if (q + 1 >= n) {
				r->t = (struct tok){ T_ERR, p, n - p, nl };
				r->pos = n;
				return;
			}
			p = q + 2;
		} else {
			break;
		}
	}
	r->t.off = p;
	r->t.nl = nl;
	if (p >= n) {
		r->t.k = T_EOF;
		r->t.len = 0;
	} else if (word_char((unsigned char)s[p])) {
		size_t q = p;

		/* "ld.global.L1::evict_last": "::" joins qualifiers */
		for (;;) {
			while (q < n && word_char((unsigned char)s[q]))
				q++;
			if (!(q + 2 < n && s[q] == ':' && s[q + 1] == ':' &&
			      word_char((unsigned char)s[q + 2])))
				break;
			q += 2;
		}
		r->t.k = T_WORD;
		r->t.len = q - p;
		p = q;
	} else if (s[p] == '"') {
		size_t q = p + 1;

		while (q < n && s[q] != '"' && s[q] != '\n')
			q += s[q] == '\\' && q + 1 < n ? 2 : 1;
		if (q >= n || s[q] != '"') {
			r->t.k = T_ERR;
			r->t.len = q - p;
			r->pos = q;
			return;
		}
		r->t.k = T_STR;
		r->t.len = q + 1 - p;
		p = q + 1;
	} else {
		r->t.k = T_PUNCT;
		r->t.len = 1;
		p++;
	}
	r->pos = p;
}

static int line_of(const struct rd *r, size_t off)
{
	int line = 1;

	for (size_t i = 0; i < off && i < r->len; i++)
		line += r->s[i] == '\n';
	return line;
}

/* Report an error at the current token, once. */
static int fail(struct rd *r, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	if (r->rc)
		return r->rc;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->err && r->errlen)
		snprintf(r->err, r->errlen, "ptx line %d: %s",
			 line_of(r, r->t.off), msg);
	r->rc = -EINVAL;
	return r->rc;
}

static bool is(const struct rd *r, const char *w)
{
	size_t n = strlen(w);

	return r->t.k == T_WORD && r->t.len == n &&
	       !memcmp(r->s + r->t.off, w, n);
}

static bool is_punct(const struct rd *r, char c)
{
	return r->t.k == T_PUNCT && r->s[r->t.off] == c;
}

/* Does the current word start with W and then end or go on with '.'? */
static bool is_op(const struct rd *r, const char *w)
{
	size_t n = strlen(w);

	return r->t.k == T_WORD && r->t.len >= n &&
	       !memcmp(r->s + r->t.off, w, n) &&
	       (r->t.len == n || r->s[r->t.off + n] == '.');
}

static char *tok_dup(const struct rd *r)
{
	char *p = malloc(r->t.len + 1);

	if (p) {
		memcpy(p, r->s + r->t.off, r->t.len);
		p[r->t.len] = 0;
	}
	return p;
}

static int bad_token(struct rd *r, const char *where)
{
	if (r->t.k == T_ERR)
		return fail(r, "unterminated comment or string");
	if (r->t.k == T_EOF)
		return fail(r, "unexpected end of text %s", where);
	return fail(r, "unexpected '%.*s' %s", (int)(r->t.len > 32 ? 32 :
		    r->t.len), r->s + r->t.off, where);
}

/* Skip the rest of a line-terminated directive (.target, .loc, ...). */
static void skip_line(struct rd *r)
{
	do
		next(r);
	while (r->t.k != T_EOF && r->t.k != T_ERR && !r->t.nl);
}

/*
 * Skip to just past the ';' that ends the current statement, keeping
 * (), [] and {} balanced (vector operands, initialisers, call lists).
 */
static int skip_stmt(struct rd *r, const char *where, size_t *semi)
{
	char stack[64];
	int depth = 0;

	for (;; next(r)) {
		if (r->t.k == T_EOF || r->t.k == T_ERR)
			return bad_token(r, where);
		if (r->t.k != T_PUNCT)
			continue;
		char c = r->s[r->t.off];

		if (c == ';' && !depth) {
			if (semi)
				*semi = r->t.off;
			next(r);
			return 0;
		}
		if (c == '(' || c == '[' || c == '{') {
			if (depth == (int)sizeof(stack))
				return fail(r, "nesting too deep");
			stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
		} else if (c == ')' || c == ']' || c == '}') {
			if (!depth || stack[depth - 1] != c)
				return bad_token(r, where);
			depth--;
		}
	}
}

/* Skip a balanced group that starts at the current '(' / '{'. */
static int skip_group(struct rd *r, char open, char close, const char *where)
{
	int depth = 0;

	for (;; next(r)) {
		if (r->t.k == T_EOF || r->t.k == T_ERR)
			return bad_token(r, where);
		if (is_punct(r, open)) {
			depth++;
		} else if (is_punct(r, close) && !--depth) {
			next(r);
			return 0;
		}
	}
}

int ptx_grow(void **arr, int *cap, size_t elem)
{
	int ncap = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, (size_t)ncap * elem);

	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* ".u32" -> kind and bytes; false if not a parameter type. */
static bool param_type(const char *w, size_t n, enum ptx_pkind *kind,
		       unsigned *bytes)
{
	static const struct { const char *name; enum ptx_pkind k; unsigned b; }
	types[] = {
		{ ".u8", PTX_P_UNSIGNED, 1 }, { ".u16", PTX_P_UNSIGNED, 2 },
		{ ".u32", PTX_P_UNSIGNED, 4 }, { ".u64", PTX_P_UNSIGNED, 8 },
		{ ".s8", PTX_P_SIGNED, 1 }, { ".s16", PTX_P_SIGNED, 2 },
		{ ".s32", PTX_P_SIGNED, 4 }, { ".s64", PTX_P_SIGNED, 8 },
		{ ".b8", PTX_P_BITS, 1 }, { ".b16", PTX_P_BITS, 2 },
		{ ".b32", PTX_P_BITS, 4 }, { ".b64", PTX_P_BITS, 8 },
		{ ".b128", PTX_P_BITS, 16 },
		{ ".f16", PTX_P_FLOAT, 2 }, { ".bf16", PTX_P_FLOAT, 2 },
		{ ".f16x2", PTX_P_FLOAT, 4 }, { ".bf16x2", PTX_P_FLOAT, 4 },
		{ ".f32", PTX_P_FLOAT, 4 }, { ".f64", PTX_P_FLOAT, 8 },
		{ ".pred", PTX_P_OTHER, 1 }, { ".texref", PTX_P_OTHER, 8 },
		{ ".samplerref", PTX_P_OTHER, 8 },
		{ ".surfref", PTX_P_OTHER, 8 },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strlen(types[i].name) == n && !memcmp(types[i].name, w, n)) {
			*kind = types[i].k;
			*bytes = types[i].b;
			return true;
		}
	}
	return false;
}

static unsigned parse_uint(struct rd *r, const char *what)
{
	unsigned long v;
	char buf[24], *end;

	if (r->t.k != T_WORD || r->t.len >= sizeof(buf)) {
		fail(r, "expected %s", what);
		return 0;
	}
	memcpy(buf, r->s + r->t.off, r->t.len);
	buf[r->t.len] = 0;
	errno = 0;
	v = strtoul(buf, &end, 0);
	if (*end || errno || v > (1u << 30)) {
		fail(r, "bad %s '%s'", what, buf);
		return 0;
	}
	next(r);
	return (unsigned)v;
}

/* One parameter declaration, up to (not past) its ',' or ')'. */
static int parse_param(struct rd *r, struct ptx_param *p)
{
	unsigned count = 1;
	bool typed = false, array = false;

	memset(p, 0, sizeof(*p));
	while (!is_punct(r, ',') && !is_punct(r, ')')) {
		if (r->t.k != T_WORD && !is_punct(r, '['))
			return bad_token(r, "in a parameter list");
		if (is(r, ".align")) {
			next(r);
			p->align = parse_uint(r, "alignment");
			if (r->rc)
				return r->rc;
			continue;
		}
		if (is_punct(r, '[')) {
			if (!p->name)
				return fail(r, "array bound before the name");
			next(r);
			if (is_punct(r, ']')) {
				count = 0;	/* unsized (.func only) */
			} else {
				unsigned c = parse_uint(r, "array size");

				if (r->rc)
					return r->rc;
				if (!is_punct(r, ']'))
					return bad_token(r, "in an array bound");
				count *= c;
			}
			array = true;
			next(r);
			continue;
		}
		const char *w = r->s + r->t.off;

		if (w[0] != '.') {
			if (p->name)
				return fail(r, "two names in one parameter");
			if (!(p->name = tok_dup(r)))
				return -ENOMEM;
		} else if (is(r, ".ptr")) {
			p->is_ptr = true;
		} else if (param_type(w, r->t.len, &p->kind, &p->elem)) {
			if (typed)
				return fail(r, "two types in one parameter");
			typed = true;
			snprintf(p->type, sizeof(p->type), "%.*s",
				 (int)r->t.len, w);
		}
		/* .param, .reg and state spaces after .ptr say nothing more */
		next(r);
	}
	if (!p->name || !typed)
		return fail(r, "parameter without %s", p->name ? "a type" :
			    "a name");
	if (array)
		p->kind = PTX_P_AGGREGATE;
	p->size = p->elem * count;
	if (!p->align)
		p->align = p->elem;
	return 0;
}

static void free_params(struct ptx_param *ps, int n)
{
	for (int i = 0; i < n; i++)
		free(ps[i].name);
	free(ps);
}

/* "( param, param )": the current token is '('. */
static int parse_params(struct rd *r, struct ptx_func *f)
{
	int cap = 0;

	f->lparen = r->t.off;
	next(r);
	while (!is_punct(r, ')')) {
		int rc = PTX_GROW(f->params, f->nparams, cap);

		if (rc)
			return rc;
		rc = parse_param(r, &f->params[f->nparams]);
		if (f->params[f->nparams].name || !rc)
			f->nparams++;	/* so that it is freed */
		if (rc)
			return rc;
		if (is_punct(r, ',')) {
			next(r);
			if (is_punct(r, ')'))
				return bad_token(r, "after ','");
		}
	}
	f->rparen = r->t.off;
	/* end of the last parameter: its last token, not ')' less blanks (a
	 * comment may sit between them) */
	if (f->nparams)
		f->last_param_end = r->prev_end;
	next(r);
	return 0;
}

/* Start of OFF's line if only blanks precede OFF on it, else OFF. */
static size_t line_start(const char *s, size_t off)
{
	size_t p = off;

	while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t'))
		p--;
	return p == 0 || s[p - 1] == '\n' ? p : off;
}

static int add_site(struct ptx_func *f, int *cap, const struct ptx_site *s)
{
	int rc = PTX_GROW(f->sites, f->nsites, *cap);

	if (rc)
		return rc;
	f->sites[f->nsites++] = *s;
	return 0;
}

static bool body_decl(const struct rd *r)
{
	return is(r, ".reg") || is(r, ".local") || is(r, ".shared") ||
	       is(r, ".param") || is(r, ".const");
}

/* Is the current word a label (followed by ':')?  Reads nothing. */
static bool label_next(struct rd *r)
{
	struct tok t = r->t;
	size_t pos = r->pos, prev_end = r->prev_end;
	bool label;

	if (r->t.k != T_WORD)
		return false;
	next(r);
	label = is_punct(r, ':');
	r->t = t;
	r->pos = pos;
	r->prev_end = prev_end;
	return label;
}

/*
 * The body: the current token is '{'.  Entry code goes before the first
 * statement that is not a declaration at the top of the body (a label,
 * an instruction, a nested block, a .pragma); exit code before every
 * ret/exit, and at the closing brace if control can fall off the end.
 */
static int parse_body(struct rd *r, struct ptx_func *f)
{
	int depth = 1, cap = 0, rc;
	bool lead = true, terminal = false, t0_set = false;

	f->body_open = r->t.off;
	next(r);
	for (;;) {
		struct ptx_site site = { 0 };
		size_t stmt = r->t.off;
		bool is_site;

		if (r->t.k == T_EOF || r->t.k == T_ERR)
			return bad_token(r, "in a function body");
		if (r->t.k == T_STR || (r->t.k == T_PUNCT &&
		    !is_punct(r, '{') && !is_punct(r, '}') &&
		    !is_punct(r, '@')))
			return bad_token(r, "at the start of a statement");
		if (lead && !(r->t.k == T_WORD && (body_decl(r) ||
		    is(r, ".loc") || is(r, ".file")))) {
			lead = false;
			f->entry_at = line_start(r->s, stmt);
		}
		/* the straight-line start ends at a block or a label */
		if (!lead && !t0_set && (is_punct(r, '{') || is_punct(r, '}') ||
					 r->t.k != T_WORD || label_next(r))) {
			t0_set = true;
			f->t0_at = line_start(r->s, stmt);
		}
		if (is_punct(r, '}') && depth == 1) {
			f->body_close = r->t.off;
			if (!terminal) {
				site.kind = PTX_SITE_FALLOFF;
				site.stmt = site.op = site.end =
					line_start(r->s, r->t.off);
				if ((rc = add_site(f, &cap, &site)))
					return rc;
			}
			next(r);
			return 0;
		}
		if (is_punct(r, '{') || is_punct(r, '}')) {
			depth += is_punct(r, '{') ? 1 : -1;
			if (depth > 256)
				return fail(r, "blocks nested too deep");
			terminal &= is_punct(r, '}');
			next(r);
			continue;
		}
		if (is(r, ".loc") || is(r, ".file")) {
			skip_line(r);
			continue;
		}
		if (is_punct(r, '@')) {
			next(r);
			if (is_punct(r, '!')) {
				site.guard_neg = true;
				next(r);
			}
			if (r->t.k != T_WORD)
				return bad_token(r, "in a guard");
			site.guard = r->t.off;
			site.guard_len = r->t.len;
			next(r);
			if (r->t.k != T_WORD || r->s[r->t.off] == '.')
				return bad_token(r, "after a guard");
		} else {
			size_t off = r->t.off;

			next(r);
			if (is_punct(r, ':')) {		/* a label */
				terminal = false;
				next(r);
				continue;
			}
			/* back up: the word was the statement's first */
			r->pos = off;
			next(r);
		}
		site.stmt = stmt;
		site.op = r->t.off;
		/* ... or at control flow, guarded or not */
		if (!t0_set && depth == 1 &&
		    (is_op(r, "bra") || is_op(r, "brx") || is_op(r, "call") ||
		     is_op(r, "ret") || is_op(r, "exit") || is_op(r, "trap"))) {
			t0_set = true;
			f->t0_at = line_start(r->s, stmt);
		}
		site.kind = is_op(r, "ret") ? PTX_SITE_RET : PTX_SITE_EXIT;
		is_site = is_op(r, "ret") || is_op(r, "exit");
		/* a thread cannot run past these unguarded */
		terminal = !site.guard && r->s[r->t.off] != '.' &&
			   (is_op(r, "ret") || is_op(r, "exit") ||
			    is_op(r, "bra") || is_op(r, "brx") ||
			    is_op(r, "trap"));
		if ((rc = skip_stmt(r, "in a statement", &site.end)))
			return rc;
		if (is_site) {
			site.end++;	/* past the ';' */
			if ((rc = add_site(f, &cap, &site)))
				return rc;
		}
	}
}

/* .entry/.func: the current token is that word; START the item's start. */
static int parse_func(struct rd *r, struct ptx_module *m, size_t start)
{
	struct ptx_func *f;
	int rc;

	if ((rc = PTX_GROW(m->funcs, m->nfuncs, r->fcap)))
		return rc;
	f = &m->funcs[m->nfuncs++];
	memset(f, 0, sizeof(*f));
	f->start = start;
	f->is_entry = is(r, ".entry");
	next(r);
	if (!f->is_entry && is_punct(r, '(') &&
	    (rc = skip_group(r, '(', ')', "in return parameters")))
		return rc;
	if (r->t.k != T_WORD || r->s[r->t.off] == '.')
		return bad_token(r, "where a function name should be");
	if (!(f->name = tok_dup(r)))
		return -ENOMEM;
	f->name_end = r->t.off + r->t.len;
	next(r);
	if (is_punct(r, '(') && (rc = parse_params(r, f)))
		return rc;
	/* performance directives (.maxntid 256, 1, 1 ...) up to the body */
	for (;;) {
		if (is_punct(r, '{')) {
			f->is_def = true;
			if ((rc = parse_body(r, f)))
				return rc;
			break;
		}
		if (is_punct(r, ';')) {
			next(r);
			break;
		}
		if (is_punct(r, '(')) {
			if ((rc = skip_group(r, '(', ')', "in a directive")))
				return rc;
			continue;
		}
		if (r->t.k != T_WORD && !is_punct(r, ','))
			return bad_token(r, "before a function body");
		next(r);
	}
	f->end = r->t.k == T_EOF ? r->len : r->t.off;
	/* end at the closing brace or ';' rather than the next token */
	while (f->end > f->start && isspace((unsigned char)r->s[f->end - 1]))
		f->end--;
	return 0;
}

static int parse_version(struct rd *r, struct ptx_module *m)
{
	const char *w;
	char *end;
	long maj, min;

	next(r);
	if (r->t.k != T_WORD || r->t.nl)
		return bad_token(r, "after .version");
	w = r->s + r->t.off;
	if (!isdigit((unsigned char)w[0]))
		return fail(r, "bad .version");
	maj = strtol(w, &end, 10);
	if (*end != '.' || end + 1 >= w + r->t.len ||
	    !isdigit((unsigned char)end[1]))
		return fail(r, "bad .version");
	min = strtol(end + 1, &end, 10);
	if (end != w + r->t.len || maj > 99 || min > 99)
		return fail(r, "bad .version");
	m->ver_major = (int)maj;
	m->ver_minor = (int)min;
	m->ver_off = r->t.off;
	m->ver_len = r->t.len;
	next(r);
	return 0;
}

static int parse_module(struct rd *r, struct ptx_module *m)
{
	bool have_version = false;
	int rc;

	m->decls_at = r->len;
	next(r);
	while (r->t.k != T_EOF) {
		size_t start = r->t.off;

		if (r->t.k != T_WORD) {
			if (is_punct(r, ';')) {		/* empty statement */
				next(r);
				continue;
			}
			return bad_token(r, "at module scope");
		}
		if (is(r, ".version")) {
			if (have_version)
				return fail(r, "second .version");
			have_version = true;
			if ((rc = parse_version(r, m)))
				return rc;
			continue;
		}
		if (!have_version)
			return fail(r, "no .version before '%.*s'",
				    (int)(r->t.len > 32 ? 32 : r->t.len),
				    r->s + r->t.off);
		if (is(r, ".target")) {
			next(r);
			if (r->t.k != T_WORD || r->t.nl)
				return bad_token(r, "after .target");
			snprintf(m->target, sizeof(m->target), "%.*s",
				 (int)r->t.len, r->s + r->t.off);
			while (r->t.k != T_EOF && r->t.k != T_ERR) {
				next(r);
				if (r->t.nl)
					break;
			}
			continue;
		}
		if (is(r, ".address_size") || is(r, ".file")) {
			skip_line(r);
			continue;
		}
		if (is(r, ".section")) {
			m->has_sections = true;
			while (!is_punct(r, '{')) {
				if (r->t.k == T_EOF || r->t.k == T_ERR ||
				    is_punct(r, ';') || is_punct(r, '}'))
					return bad_token(r, "in .section");
				next(r);
			}
			if ((rc = skip_group(r, '{', '}', "in .section")))
				return rc;
			continue;
		}
		while (is(r, ".visible") || is(r, ".weak") || is(r, ".extern") ||
		       is(r, ".common"))
			next(r);
		if (is(r, ".entry") || is(r, ".func")) {
			if (m->decls_at == r->len)
				m->decls_at = line_start(r->s, start);
			if ((rc = parse_func(r, m, start)))
				return rc;
			continue;
		}
		if ((rc = skip_stmt(r, "in a module-scope statement", NULL)))
			return rc;
	}
	if (!have_version)
		return fail(r, "no .version directive");
	return 0;
}

static size_t name_hash(const char *w, size_t n)
{
	size_t h = 5381;

	for (size_t i = 0; i < n; i++)
		h = h * 33 + (unsigned char)w[i];
	return h;
}

/*
 * Mark functions whose names occur outside their own items (a kernel
 * launched from the device, a function called): the splicer keeps those
 * when it drops unmatched kernels.
 */
static int mark_referenced(struct ptx_module *m)
{
	size_t nb = 16, mask;
	int *tab, *count, *items;
	struct rd r = { .s = m->text, .len = m->len };

	while (nb < (size_t)m->nfuncs * 2)
		nb *= 2;
	mask = nb - 1;
	tab = malloc(nb * sizeof(*tab));
	count = calloc(m->nfuncs + 1, sizeof(*count));
	items = calloc(m->nfuncs + 1, sizeof(*items));
	if (!tab || !count || !items) {
		free(tab);
		free(count);
		free(items);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nb; i++)
		tab[i] = -1;
	/* tab: name -> first function of that name */
	for (int i = 0; i < m->nfuncs; i++) {
		const char *n = m->funcs[i].name;
		size_t h = name_hash(n, strlen(n));

		while (tab[h & mask] >= 0 &&
		       strcmp(m->funcs[tab[h & mask]].name, n))
			h++;
		if (tab[h & mask] < 0)
			tab[h & mask] = i;
		items[tab[h & mask]]++;
	}
	for (next(&r); r.t.k != T_EOF && r.t.k != T_ERR; next(&r)) {
		const char *w = r.s + r.t.off;
		size_t h;

		if (r.t.k != T_WORD)
			continue;
		for (h = name_hash(w, r.t.len); tab[h & mask] >= 0; h++) {
			const char *n = m->funcs[tab[h & mask]].name;

			if (strlen(n) == r.t.len && !memcmp(n, w, r.t.len)) {
				count[tab[h & mask]]++;
				break;
			}
		}
	}
	for (int i = 0; i < m->nfuncs; i++) {
		const char *n = m->funcs[i].name;
		size_t h = name_hash(n, strlen(n));

		while (strcmp(m->funcs[tab[h & mask]].name, n))
			h++;
		m->funcs[i].referenced = count[tab[h & mask]] >
					 items[tab[h & mask]];
	}
	free(tab);
	free(count);
	free(items);
	return 0;
}

int ptx_parse(const char *text, size_t len, struct ptx_module **out,
	      char *err, size_t errlen)
{
	struct ptx_module *m = calloc(1, sizeof(*m));
	struct rd r = { .len = len, .err = err, .errlen = errlen };
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = 0;
	len = strnlen(text, len);	/* fatbin PTX is NUL-terminated, padded */
	r.len = len;
	if (!m || !(m->text = malloc(len + 1))) {
		free(m);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(m->text, text, len);
	m->text[len] = 0;
	m->len = len;
	r.s = m->text;
	rc = parse_module(&r, m);
	if (!rc && (rc = mark_referenced(m)) == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (rc == -ENOMEM && err && errlen && !err[0])
		snprintf(err, errlen, "out of memory");
	if (rc) {
		ptx_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void ptx_free(struct ptx_module *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nfuncs; i++) {
		free(m->funcs[i].name);
		free_params(m->funcs[i].params, m->funcs[i].nparams);
		free(m->funcs[i].sites);
	}
	free(m->funcs);
	free(m->text);
	free(m);
}

const struct ptx_func *ptx_find_entry(const struct ptx_module *m,
				      const char *name)
{
	for (int i = 0; i < m->nfuncs; i++)
		if (m->funcs[i].is_entry && !strcmp(m->funcs[i].name, name))
			return &m->funcs[i];
	return NULL;
}

size_t ptx_ctx_offset(const struct ptx_func *f)
{
	size_t off = 0;

	for (int i = 0; i < f->nparams; i++) {
		size_t a = f->params[i].align ? f->params[i].align : 1;

		off = (off + a - 1) / a * a + f->params[i].size;
	}
	return (off + 7) / 8 * 8;
}
