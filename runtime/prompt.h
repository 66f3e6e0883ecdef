/* SPDX-License-Identifier: MIT */
/*
 * The interactive prompt (docs/prompt.md): clauses typed or loaded are
 * compiled and attached at once beside the running ones, commands look
 * at and change what runs.
 */
#ifndef GT_PROMPT_H
#define GT_PROMPT_H

#include <stdbool.h>

#include "runtime/output.h"

struct prompt_opts {
	struct out *o;
	int pid;		/* -p PID: attached from the start, else 0 */
	bool quiet;
	bool verbose;
};

/* Runs until quit, Ctrl-D or exit(); the exit status. */
int prompt_run(const struct prompt_opts *po);

#endif
