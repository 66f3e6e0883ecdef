/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics: "FILE:LINE:COL: error: MESSAGE", the source line, and a
 * caret under the column.  Every error in the front end and compiler goes
 * through here, so the format is the same everywhere.
 */
#ifndef GT_DIAG_H
#define GT_DIAG_H

#include <stdarg.h>
#include <stdio.h>

struct loc {
	int line;	/* 1-based; 0 = no location */
	int col;	/* 1-based */
};

struct source {
	const char *name;	/* file name, or "stdin" for -e and - */
	const char *text;
	unsigned long len;
	/*
	 * The prompt compiles earlier clauses again before the new ones:
	 * lines 1..line_base are that earlier text, whose messages are not
	 * shown; later lines are reported as line - line_base.
	 */
	int line_base;
};

void diag_set_source(const struct source *src);
const struct source *diag_source(void);

__attribute__((format(printf, 2, 3)))
void diag_error(struct loc loc, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void diag_warn(struct loc loc, const char *fmt, ...);
void diag_verror(const char *kind, struct loc loc, const char *fmt, va_list ap);
/* A warning written to F (bpftrace writes -k's to its output). */
__attribute__((format(printf, 3, 4)))
void diag_warn_to(FILE *f, struct loc loc, const char *fmt, ...);

/* --no-warnings: warnings are not shown (bpftrace's option). */
void diag_set_warnings(int on);
int diag_warnings_on(void);

/* Number of errors reported since the last diag_reset(). */
int diag_errors(void);
void diag_reset(void);
/* Of those, the ones in hidden lines (line_base). */
int diag_hidden_errors(void);

#endif
