/* SPDX-License-Identifier: MIT */
/*
 * Events a host clause may send from the agent (docs/hostpath.md): which
 * kinds the tracer accepts from the target, and the size a record of
 * each must have before it is trusted.
 */
#ifndef GT_HOSTEVENTS_H
#define GT_HOSTEVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler/sema.h"

/*
 * The argument bytes (after the id) that codegen sends for EV, or -1
 * for a kind the tracer never takes from the target: join() (the ring's
 * reserve), cat() and system() (a file read and a command run by the
 * tracer, with arguments a target could forge).
 */
int64_t hostev_size(const struct event_desc *ev);
/* Whether every event of U may come from the agent. */
bool hostev_unit_ok(const struct unit *u);

#endif
