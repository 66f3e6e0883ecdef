// SPDX-License-Identifier: MIT
/*
 * Which events the tracer takes from the agent, and their sizes as
 * compiler/codegen.c's gen_call() and check_helper() send them: the
 * record of a host clause run in the agent is the kernel ring's
 * ({u64 id, arguments}), but it comes through the target's memory, so
 * its size is checked against its kind before session_on_event() reads
 * the arguments.
 */
#include "runtime/hostevents.h"

int64_t hostev_size(const struct event_desc *ev)
{
	switch (ev->kind) {
	case EV_PRINTF:
	case EV_PRINT_VAL:
		return ev->args ? ev->args->size : 0;
	case EV_TIME:
	case EV_PRINT_MAP:
	case EV_CLEAR:
	case EV_ZERO:
		return 0;
	case EV_EXIT:		/* the code */
	case EV_HELPER_ERR:	/* the helper's result */
		return 8;
	case EV_JOIN:
	case EV_CAT:
	case EV_SYSTEM:
		break;
	}
	return -1;
}

bool hostev_unit_ok(const struct unit *u)
{
	for (int i = 0; i < u->nevents; i++)
		if (hostev_size(&u->events[i]) < 0)
			return false;
	return true;
}
