/* SPDX-License-Identifier: MIT */
/* Tracepoint events as tracefs describes them (probes/tracepoint.c). */
#ifndef GT_TRACEPOINT_H
#define GT_TRACEPOINT_H

#include <stdbool.h>

enum tp_kind {
	TP_INT,		/* 1, 2, 4 or 8 bytes; pointers too */
	TP_CHARS,	/* char NAME[N]: a string */
	TP_DATALOC,	/* __data_loc char[] NAME: a string elsewhere in the record */
	TP_OTHER,	/* anything else: not readable from a program */
};

struct tp_field {
	const char *name;
	unsigned int off, size;
	bool sign;
	enum tp_kind kind;
};

/* One line of a format file; 0 when it is a field, -EINVAL otherwise. */
int tp_parse_field(const char *line, struct tp_field *f);

/*
 * Call FN for every tracepoint CAT:NAME whose parts match the globs, in
 * order; stops at FN's first non-zero answer and returns it.  -ENOENT
 * when tracefs is not mounted.
 */
int tp_foreach(const char *pat_cat, const char *pat_name,
	       int (*fn)(const char *cat, const char *name, void *arg),
	       void *arg);

#endif
