/* SPDX-License-Identifier: MIT */
/*
 * Where the ptrace injector may borrow a thread: not where it may hold a
 * lock that the agent's start takes (runtime/inject_safe.c).
 */
#ifndef GT_INJECT_SAFE_H
#define GT_INJECT_SAFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct inject_range {
	uint64_t lo, hi;
	bool unsafe;
	char name[64];
};

/* The target's executable mappings, read once (and again for new code). */
struct inject_maps {
	struct inject_range *v;
	size_t n, cap;
	bool loaded;
};

/*
 * May our calls run in PID's thread stopped with registers R?  WHERE
 * gets the code it was in (a library's name), for the message when no
 * safe point comes.
 */
bool inject_safe_point(struct inject_maps *m, pid_t pid,
		       const struct user_regs_struct *r, char *where,
		       size_t len);
void inject_maps_free(struct inject_maps *m);

#endif
