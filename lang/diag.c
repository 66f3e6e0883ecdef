// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "lang/diag.h"

static const struct source *cur_src;
static int nerrors, nhidden;

void diag_set_source(const struct source *src)
{
	cur_src = src;
}

const struct source *diag_source(void)
{
	return cur_src;
}

/* Print source line LINE (1-based) and a caret under COL. */
static void show_line(int line, int col)
{
	const char *p = cur_src->text, *end = p + cur_src->len, *eol;
	int i;

	for (i = 1; i < line && p < end; p++)
		if (*p == '\n')
			i++;
	if (p >= end && line > 1 && i < line)
		return;
	eol = memchr(p, '\n', end - p);
	if (!eol)
		eol = end;
	/* a NUL byte (refused by the parser) shows as a space, not an end */
	for (const char *q = p; q < eol; q++)
		fputc(*q ? *q : ' ', stderr);
	fputc('\n', stderr);
	/* keep tabs so the caret lines up in a terminal */
	for (i = 1; i < col && p + i - 1 < eol; i++)
		fputc(p[i - 1] == '\t' ? '\t' : ' ', stderr);
	for (; i < col; i++)
		fputc(' ', stderr);
	fputs("^\n", stderr);
}

void diag_verror(const char *kind, struct loc loc, const char *fmt, va_list ap)
{
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
	if (loc.line > 0)
		fprintf(stderr, "%s:%d:%d: %s: ", name, loc.line, loc.col, kind);
	else
		fprintf(stderr, "%s: %s: ", name, kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	if (loc.line > 0 && cur_src)
		show_line(loc.line + base, loc.col);
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
