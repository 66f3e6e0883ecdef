/* SPDX-License-Identifier: MIT */
/*
 * -c CMD: the child is started held (it waits on a pipe before exec), so
 * that every probe is attached before its first instruction runs.
 */
#ifndef GT_CHILD_H
#define GT_CHILD_H

#include <sys/types.h>

struct child {
	pid_t pid;
	int release_fd;		/* write end: closing it lets the child exec */
	int err_fd;		/* read end: the child's exec errno, or EOF */
};

/* Fork CMD (split like a shell would, no command substitution), held. */
int child_spawn(const char *cmd, const char *const *env_add, struct child *c);
/* Let the child exec: 0, or the exec's negative errno. */
int child_release(struct child *c);
/* Kill a child that was never released (compile or attach failed). */
void child_kill(struct child *c);

#endif
