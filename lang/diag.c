// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "lang/diag.h"

static const struct source *cur_src;
static int nerrors, nhidden;
static FILE *dout;	/* stderr, unless diag_warn_to */
static int warnings_off;

void diag_set_warnings(int on)
{
	warnings_off = !on;
}

int diag_warnings_on(void)
{
	return !warnings_off;
}

void diag_set_source(const struct source *src)
{
	cur_src = src;
}

const struct source *diag_source(void)
{
	return cur_src;
}

/* Print source line LINE (1-based) and MARK under columns COL..END-1. */
static void show_line(int line, int col, int end, char mark)
{
	const char *p = cur_src->text, *end_p = p + cur_src->len, *eol;
	int i;

	for (i = 1; i < line && p < end_p; p++)
		if (*p == '\n')
			i++;
	if (p >= end_p && line > 1 && i < line)
		return;
	eol = memchr(p, '\n', end_p - p);
	if (!eol)
		eol = end_p;
	/* a NUL byte (refused by the parser) shows as a space, not an end;
	 * bpftrace's form ('~') shows a tab as 4 spaces, marks included */
	for (const char *q = p; q < eol; q++)
		fputs(*q == '\t' && mark == '~' ? "    " : *q ? (char[]){ *q, 0 } : " ",
		      dout);
	fputc('\n', dout);
	if (mark == '~') {
		for (i = 1; i < end && p + i - 1 < eol; i++)
			fputs(p[i - 1] == '\t' ? (i < col ? "    " : "~~~~") :
			      i < col ? " " : "~", dout);
		fputc('\n', dout);
		return;
	}
	/* keep tabs so the mark lines up in a terminal */
	for (i = 1; i < col && p + i - 1 < eol; i++)
		fputc(p[i - 1] == '\t' ? '\t' : ' ', dout);
	for (; i < col; i++)
		fputc(' ', dout);
	for (; i < end; i++)
		fputc(mark, dout);
	fputc('\n', dout);
}

/*
 * The length of the token at LINE:COL (an operator, or a word with the
 * bracketed groups after it on the line: a call, a map element), for the
 * column range bpftrace prints with a warning ("stdin:1:25-26:").
 */
static int token_len(int line, int col)
{
	static const char *const ops[] = {
		"<<=", ">>=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
		"->", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	};
	const char *p = cur_src->text, *end = p + cur_src->len;
	int i, n = 0;

	for (i = 1; i < line && p < end; p++)
		if (*p == '\n')
			i++;
	for (i = 1; i < col && p < end && *p != '\n'; i++)
		p++;
	if (p >= end || *p == '\n')
		return 1;
	while (p + n < end && (p[n] == '_' || p[n] == '$' || p[n] == '@' ||
			       (p[n] >= 'a' && p[n] <= 'z') ||
			       (p[n] >= 'A' && p[n] <= 'Z') ||
			       (p[n] >= '0' && p[n] <= '9')))
		n++;
	while (n && p + n < end && (p[n] == '(' || p[n] == '[')) {
		int depth = 0, k = n;

		for (; p + k < end && p[k] != '\n'; k++) {
			if (p[k] == '(' || p[k] == '[')
				depth++;
			else if ((p[k] == ')' || p[k] == ']') && !--depth)
				break;
		}
		if (depth)
			break;	/* not closed on this line */
		n = k + 1;
	}
	if (n)
		return n;
	for (i = 0; i < (int)(sizeof(ops) / sizeof(ops[0])); i++) {
		size_t l = strlen(ops[i]);

		if ((size_t)(end - p) >= l && !memcmp(p, ops[i], l))
			return l;
	}
	return 1;
}

void diag_verror(const char *kind, struct loc loc, const char *fmt, va_list ap)
{
	if (!dout)
		dout = stderr;
	const char *name = cur_src ? cur_src->name : "gputrace";
	int base = cur_src ? cur_src->line_base : 0;

	if (loc.line > 0 && loc.line <= base) {
		/* earlier text, checked when it was new: count, say nothing */
		if (!strcmp(kind, "error")) {
			nerrors++;
			nhidden++;
		}
		return;
	}
	loc.line -= base;
	if (!strcmp(kind, "warning") && warnings_off)
		return;
	if (!strcmp(kind, "warning")) {
		/* bpftrace's form: "stdin:1:25-26: WARNING: ...", '~' under
		 * the token (tools written for it parse these lines) */
		int end = loc.col + (cur_src && loc.line > 0 ?
				     token_len(loc.line + base, loc.col) : 1);

		if (loc.line > 0)
			fprintf(dout, "%s:%d:%d-%d: WARNING: ", name,
				loc.line, loc.col, end);
		else
			fprintf(dout, "%s: WARNING: ", name);
		vfprintf(dout, fmt, ap);
		fputc('\n', dout);
		if (loc.line > 0 && cur_src)
			show_line(loc.line + base, loc.col, end, '~');
		return;
	}
	if (loc.line > 0)
		fprintf(dout, "%s:%d:%d: %s: ", name, loc.line, loc.col, kind);
	else
		fprintf(dout, "%s: %s: ", name, kind);
	vfprintf(dout, fmt, ap);
	fputc('\n', dout);
	if (loc.line > 0 && cur_src)
		show_line(loc.line + base, loc.col, loc.col + 1, '^');
	if (!strcmp(kind, "error"))
		nerrors++;
}

void diag_error(struct loc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_verror("error", loc, fmt, ap);
	va_end(ap);
}

void diag_warn_to(FILE *f, struct loc loc, const char *fmt, ...)
{
	va_list ap;

	dout = f;
	va_start(ap, fmt);
	diag_verror("warning", loc, fmt, ap);
	va_end(ap);
	dout = stderr;
}

void diag_warn(struct loc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_verror("warning", loc, fmt, ap);
	va_end(ap);
}

int diag_errors(void)
{
	return nerrors;
}

int diag_hidden_errors(void)
{
	return nhidden;
}

void diag_reset(void)
{
	nerrors = nhidden = 0;
}
