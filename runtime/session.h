/* SPDX-License-Identifier: MIT */
/*
 * Running a compiled program: load, attach, BEGIN, the event loop that
 * serves printf/print/clear/exit events, detach, END, the exit dump.
 */
#ifndef GT_SESSION_H
#define GT_SESSION_H

#include <stdbool.h>

#include "compiler/codegen.h"
#include "runtime/output.h"

struct agentctl;
struct child;

struct session_opts {
	bool quiet;
	bool verbose;
	int pid;		/* -p: exit when it exits */
	struct child *child;	/* -c: released after attach, exit when it exits */
	struct agentctl *agent;	/* device probes through the agent, or NULL */
	/* -p with the agent: called once the probes are attached (they see
	 * the first launch the agent instruments); nonzero: give up */
	int (*attach_agent)(void *arg);
	void *attach_arg;
};

/* Returns the program's exit status (exit(N)), or 1 on error. */
int session_run(struct unit *u, struct gt_object *obj, struct out *o,
		const struct session_opts *opts);

#endif
