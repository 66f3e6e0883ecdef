/* SPDX-License-Identifier: MIT */
/*
 * Running a compiled program: load, attach, BEGIN, the event loop that
 * serves printf/print/clear/exit events, detach, END, the exit dump.
 */
#ifndef GT_SESSION_H
#define GT_SESSION_H

#include <stdbool.h>
#include <stdint.h>

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
	/* -p with cuda: clauses alone (docs/hostpath.md): the agent goes in
	 * before any probe is attached; when it cannot, agent_failed(ARG)
	 * gives its programs to the kernel (nonzero: give up) */
	bool agent_early;
	int (*agent_failed)(void *arg);
	const char *metrics;	/* --metrics ADDR:PORT, or NULL */
	bool metrics_any;	/* --metrics-any: 0.0.0.0 and :: allowed */
};

/*
 * One loaded program and what its events need; the prompt keeps one per
 * set of clauses it compiled (runtime/prompt_prog.c).
 */
struct session {
	struct unit *u;
	struct gt_object *obj;
	struct out *o;
	struct agentctl *ac;	/* NULL without device probes */
	bool exiting;		/* exit() was seen */
	int exit_code;
	uint64_t lost_seen;
	uint64_t metrics_snap_ms;	/* the last device snapshot a scrape took */
	int printed;		/* the last event printed map N - 1, 0: not */
};

/* The ring buffer callback: CTX is a struct session. */
int session_on_event(void *ctx, void *data, size_t size);
/* Map IDX of s->obj into *OM, host and device parts merged (as print()
 * reads it); maps_read()'s result.  Free with maps_out_free(). */
int session_read_map(struct session *s, int idx, struct out_map *om);
/* The maps print() and the exit dump show, by name: malloc'd, *N long. */
struct map_sym **session_sorted_maps(struct session *s, int *n);
/* --metrics: every map as a Prometheus text page (metrics_page_fn). */
char *session_metrics_page(void *arg, size_t *len);
/* print(@m) of map IDX of s->obj, host and device parts merged. */
void session_print_map(struct session *s, int idx, uint32_t top, uint32_t div);
/* Every map by name (the exit dump when AT_EXIT). */
void session_print_all(struct session *s, bool at_exit);
/* S's device part comes from AC: its printf records and new kernel
 * handles are decoded by S (the prompt's device clauses). */
void session_use_agent(struct session *s, struct agentctl *ac);
/* "Lost N events" for what was lost since the last call. */
void session_report_lost(struct session *s);

/* Returns the program's exit status (exit(N)), or 1 on error. */
int session_run(struct unit *u, struct gt_object *obj, struct out *o,
		const struct session_opts *opts);

#endif
