/* SPDX-License-Identifier: MIT */
/*
 * The tracer's side of the in-process agent (gpucode/agent_proto.h):
 * the configuration file, the socket the agent connects to, the memfd
 * segment it writes device map snapshots into, and merging those
 * snapshots into the maps the session prints.  docs/agent-protocol.md.
 *
 * Order of use (-c):
 *	agentctl_open()         before child_spawn(): env strings for the child
 *	agentctl_configure()    once device_lower() has produced the probes
 *	agentctl_set_cb()       in the session, before releasing the child
 *	agentctl_poll()         in the event loop (agentctl_fd() for poll(2))
 *	agentctl_snapshot()     before printing maps (print, exit)
 *	agentctl_merge()        per printed map, after maps_read()
 *	agentctl_detach()       when tracing stops
 *	agentctl_free()
 *
 * Every function but agentctl_open, _env, _configure and _set_cb takes a
 * NULL controller (no device probes, no -c) and then does nothing.
 */
#ifndef GT_AGENTCTL_H
#define GT_AGENTCTL_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler/device.h"
#include "compiler/sema.h"
#include "gpucode/agent_proto.h"
#include "runtime/output.h"

#define AGENTCTL_LIB_ENV	"GPUTRACE_AGENT_LIB"	/* overrides the search */
#define AGENTCTL_LIB_NAME	"libgputrace-agent.so"

struct agentctl_opts {
	bool verbose;		/* -v: every REPORT line, agent verbose */
	const char *agent_lib;	/* NULL: $GPUTRACE_AGENT_LIB, else next to
				 * the gputrace binary (same dir, build/) */
	uint32_t nrings;	/* printf rings per context; 0: 16 */
	uint32_t ring_bytes;	/* bytes each, a power of 2; 0: 256 KiB */
	const char *const *completes;	/* cuda:complete GLOBs, bit order */
	int ncompletes;
	bool complete_queued;	/* a cuda:complete clause reads `queued` */
	const char *timeline;	/* --timeline FILE (absolute), or NULL */
	const char *const *samples;	/* gpu:sample GLOBs, bit order */
	int nsamples;
	uint32_t sample_period;	/* log2 cycles; with samples */
	/* host clauses run by the agent (runtime/hostpath.c): hmaps and
	 * hprogs, and the unit maps they write (nmaps entries) */
	const struct agent_config *host;
	const bool *host_maps;
	int attach_pid;		/* -p: an abstract socket only this process
				 * may use; the configuration and segment
				 * reach it as descriptors (docs/attach.md) */
};

struct agentctl_cb {
	/*
	 * A device printf record whose format id FMT was checked: an
	 * EV_PRINTF event of the unit, and ARGS holds at least its
	 * argument tuple's size.
	 */
	void (*on_printf)(void *arg, uint32_t fmt, const void *args,
			  uint32_t size);
	/*
	 * Another event a host clause sent from the agent: ID is an event
	 * of the unit that hostev_size() accepts, ARGS exactly that size.
	 * It may call agentctl_snapshot() (print, clear, zero).
	 */
	void (*on_event)(void *arg, uint32_t id, const void *args,
			 uint32_t size);
	/* -p: kernel HANDLE (mangled NAME) was first launched since the
	 * attach; its name is what cuda:launch needs (then ACKed) */
	void (*on_khandle)(void *arg, uint64_t handle, const char *name);
	void *arg;
};

struct agentctl;

/*
 * Create the private directory, the listening socket and the segment;
 * find the agent library.  0 and *OUT, or negative errno after a
 * message on stderr.
 */
int agentctl_open(const struct agentctl_opts *o, struct agentctl **out);

/*
 * The strings to pass to child_spawn(): LD_PRELOAD (ours first, then the
 * caller's), GPUTRACE_AGENT_CONFIG, _SOCK, _SEG.  NULL-terminated, owned
 * by AC.
 */
const char *const *agentctl_env(const struct agentctl *ac);

/* The socket's name ("@..." for an abstract one, -p). */
const char *agentctl_sock(const struct agentctl *ac);

/* The agent library AC preloads (absolute path). */
const char *agentctl_lib(const struct agentctl *ac);

/*
 * Where the agent library is: WANT, $GPUTRACE_AGENT_LIB, or next to the
 * gputrace binary.  malloc'd absolute path, or NULL.
 */
char *agentctl_find_lib(const char *want);

/* The cuda:complete GLOBs the next agentctl_configure() writes (N of
 * them, in the order of their bits; they must outlive AC). */
/* Host clauses for the agent (runtime/hostpath.c); kept, not copied. */
void agentctl_set_host(struct agentctl *ac, const struct agent_config *host,
		       const bool *host_maps);
/* CUPTI's latency timestamps on in the agent (`queued`). */
void agentctl_set_complete_queued(struct agentctl *ac, bool on);
void agentctl_set_completes(struct agentctl *ac, const char *const *globs,
			    int n);
/* The same for gpu:sample, with the sampling period (log2 of cycles). */
void agentctl_set_samples(struct agentctl *ac, const char *const *globs,
			  int n, uint32_t period);

/*
 * Build the agent's configuration from U's maps and DS's probes
 * (agentctl_build) and write it where GPUTRACE_AGENT_CONFIG points.  U
 * and DS must outlive AC.  Before the child is released.
 */
int agentctl_configure(struct agentctl *ac, const struct unit *u,
		       const struct device_set *ds);

/*
 * The configuration for U and DS (no file written): one descriptor per
 * unit map (DEVRT_K_NONE for maps no device clause uses), one clause per
 * device probe.  Free with agent_config_free().
 */
int agentctl_build(const struct unit *u, const struct device_set *ds,
		   const struct agentctl_opts *o, struct agent_config *c);

void agentctl_set_cb(struct agentctl *ac, const struct agentctl_cb *cb);

/*
 * A descriptor that is readable when agentctl_poll() has work (new
 * connection, messages): an epoll fd, usable with poll(2).
 */
int agentctl_fd(const struct agentctl *ac);

/*
 * Wait up to TIMEOUT_MS (0: don't wait) for agents and handle what they
 * sent: HELLO, REPORT (shown once as "gputrace: LINE" on stderr), PRINTF
 * (to the callback), BYE (the final snapshot is copied).  Returns the
 * number of messages handled or negative errno.
 */
int agentctl_poll(struct agentctl *ac, int timeout_ms);

/*
 * Ask every live agent for a snapshot and copy it, waiting at most
 * TIMEOUT_MS in all; agents that said BYE keep their final one.  No
 * agent (none came, all gone) is not an error: maps just have no device
 * part.  A late agent is reported and its previous snapshot kept.
 * Reports new map-table drops on stderr.  Returns 0 or negative errno.
 */
int agentctl_snapshot(struct agentctl *ac, int timeout_ms);
/*
 * The same, as the session's last (agentctl_detach follows): the agents
 * instrument no launch from then on and let those made finish their
 * updates first, so that device maps and cuda:launch agree at a -p
 * detach (agent_ctx_settle).
 */
int agentctl_snapshot_last(struct agentctl *ac, int timeout_ms);

/*
 * Add the device part of map MAP_INDEX, as of the last snapshot, to OM
 * (which maps_read() filled with the host part).  Equal keys combine as
 * the aggregation does, new keys are appended.  0 or negative errno.
 */
int agentctl_merge(struct agentctl *ac, int map_index, struct out_map *om);

/*
 * clear(@m) of a map with a device part: from now on merge shows only
 * what changed since the last snapshot (counts, sums, buckets subtract;
 * min, max and plain values show the keys whose value changed).
 */
void agentctl_clear(struct agentctl *ac, int map_index);
/* zero(@m): the same, but keys stay, shown with 0. */
void agentctl_zero(struct agentctl *ac, int map_index);

/* Device printf records lost since the last call (for out_lost()). */
uint64_t agentctl_lost(struct agentctl *ac);

/*
 * At the end: say (stderr, one line each) when no gpu: (or, without
 * those, cuda:complete) probe could fire: no process of the target
 * launched a CUDA kernel, or a clause's GLOB matched no kernel that the
 * agents met.
 */
void agentctl_warn_idle(const struct agentctl *ac);

/* Whether an agent ever said HELLO. */
bool agentctl_connected(const struct agentctl *ac);

/* Tell every live agent to restore the original launches. */
void agentctl_detach(struct agentctl *ac);

/* Close everything, remove the temporary files. */
void agentctl_free(struct agentctl *ac);

#endif
