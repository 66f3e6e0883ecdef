/* SPDX-License-Identifier: MIT */
/*
 * Tiny unit-test helpers.  Each test binary prints one line per check,
 * "PASS name" or "FAIL name: why", and exits 1 if any check failed;
 * tests/run.sh counts the lines.
 */
#ifndef GT_UNIT_H
#define GT_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_failed;

#define CHECK(cond, name) do {						\
	if (cond) {							\
		printf("PASS %s\n", (name));				\
	} else {							\
		printf("FAIL %s: %s (%s:%d)\n", (name), #cond,		\
		       __FILE__, __LINE__);				\
		unit_failed = 1;					\
	}								\
} while (0)

#define CHECK_STR(got, want, name) do {					\
	const char *g_ = (got), *w_ = (want);				\
	if (g_ && w_ && !strcmp(g_, w_)) {				\
		printf("PASS %s\n", (name));				\
	} else {							\
		printf("FAIL %s: got \"%s\" want \"%s\" (%s:%d)\n",	\
		       (name), g_ ? g_ : "(null)", w_ ? w_ : "(null)",	\
		       __FILE__, __LINE__);				\
		unit_failed = 1;					\
	}								\
} while (0)

#define UNIT_END() return unit_failed

#endif
