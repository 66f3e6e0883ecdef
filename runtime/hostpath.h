/* SPDX-License-Identifier: MIT */
/*
 * cuda: clauses run in the agent, in the target's thread, instead of as
 * kernel uprobes (docs/hostpath.md).  With -c (and -p where the agent is
 * injected), unless GPUTRACE_CUDA_UPROBES=1.
 */
#ifndef GT_HOSTPATH_H
#define GT_HOSTPATH_H

#include <stdbool.h>

#include "compiler/program.h"
#include "compiler/sema.h"
#include "gpucode/agent_proto.h"

#define HOSTPATH_ENV_UPROBES	"GPUTRACE_CUDA_UPROBES"

struct program;

/* GPUTRACE_CUDA_UPROBES is set (and not 0): every clause on the kernel. */
bool hostpath_off(void);
/*
 * PROG's clauses from index FROM on have gpu: or cuda:complete probes,
 * which only the agent in the target serves.
 */
bool hostpath_needs_agent(const struct program *prog, int from);
/*
 * PROG has clauses that may run in the agent (cuda:launch), none of its
 * cuda: clauses takes a stack, and GPUTRACE_CUDA_UPROBES is not set
 * (VERBOSE: then says so).
 */
bool hostpath_wanted(const struct program *prog, bool verbose);
/*
 * Pick the clause programs of OBJ that run in the agent (probe->in_agent
 * set; -v says which clause runs where), and fill HC's nhmaps, hmaps,
 * nhprogs, hprogs (freed with agent_config_free), HOST_MAPS[i] for the
 * unit maps they write (U->nmaps entries).  The number picked, or
 * -ENOMEM.
 */
int hostpath_select(struct gt_object *obj, const struct unit *u,
		    bool verbose, struct agent_config *hc, bool *host_maps);

/*
 * -p PID without gpu: or cuda:complete probes: inject the agent for
 * PROG's cuda: clauses?  Yes when hostpath_wanted() and the injection
 * may be tried (inject_why(); VERBOSE: else says why not).
 */
bool hostpath_attach_wanted(const struct program *prog, int pid,
			    bool verbose);
/*
 * The agent could not be injected (-p): the programs it was to run, and
 * the savers left to it, are loaded for the kernel after all, and every
 * probe on its library LIB goes back to the driver.  0, or -errno with
 * ERR.
 */
struct gt_object;
int hostpath_fallback(struct gt_object *obj, const char *lib, char *err,
		      size_t errlen);

#endif
