/* SPDX-License-Identifier: MIT */
/*
 * The prompt's state, shared by its files: prompt.c (terminal and
 * loop), prompt_cmd.c (commands), prompt_prog.c (clauses: compile,
 * attach, remove, the shared maps), prompt_complete.c (completion).
 */
#ifndef GT_PROMPT_PRIV_H
#define GT_PROMPT_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler/codegen.h"
#include "compiler/device.h"
#include "gpucode/agent_proto.h"
#include "lang/diag.h"
#include "runtime/output.h"
#include "runtime/session.h"

struct ring_buffer;

/* One clause typed or loaded. */
struct pr_clause {
	int id;			/* what `probes` shows and `remove` takes */
	bool active;
	bool prints;		/* printf, print or time: Ctrl-C stops it */
	bool scoped;		/* tied to the target: `detach` removes it */
	char *text;		/* its own text, compiled again with later ones */
};

/*
 * Clauses compiled and loaded together (one line, or one `load`): their
 * own unit, object and ring buffer.  The object holds every earlier
 * active clause too (compiled again for the map types) but loads only
 * the new clauses' programs.  Never freed before the session ends: its
 * maps may be the shared ones.
 */
struct pr_gen {
	struct source src;
	char *all;		/* the compiled text: earlier clauses, then ours */
	struct unit *u;
	struct gt_object obj;
	bool have_obj;
	int first;		/* index of our first clause in u's program */
	int ncl;
	struct pr_clause *cl;
	int *owner;		/* per program: our clause, -1 extras, -2 not ours */
	bool *loaded;		/* per program */
	bool *attached;		/* per program */
	struct session s;	/* decodes the events of our ring buffer */
	bool device;		/* our clauses have gpu: probes */
	struct device_set ds;	/* their PTX, for the agent */
	bool have_ds;
	struct agentctl *ac;	/* the agent in the target, for them */
	struct agent_config hcfg;	/* our cuda: clauses it runs */
	bool *host_maps;	/* per map: written by those */
	bool ac_done;		/* detached: its last snapshot stays */
	struct pr_gen *next;
};

/* A user map, shared by name: every object gets a copy of its fd. */
struct pr_map {
	char *name;
	struct pr_gen *g;	/* whose object's index and layout decode it */
	int idx;
	bool written;		/* by some clause: printed */
};

struct prompt {
	struct out *o;
	int pid;		/* attached target, 0 for none */
	bool quiet, verbose;
	uint64_t start_ns;	/* for `elapsed` */
	struct pr_gen *gens, **tail;
	int next_id;
	struct ring_buffer *rb;
	struct pr_map *maps;
	int nmaps;
	char **words;		/* completion: the target's probes */
	int nwords;
	bool done;		/* quit, Ctrl-D or exit() */
	struct pr_gen *dev;	/* whose gpu: clauses the agent runs now */
};

/* prompt_prog.c */
int pr_add(struct prompt *p, const char *name, const char *text);
int pr_remove(struct prompt *p, int id);
void pr_list(struct prompt *p);
void pr_detach(struct prompt *p);
int pr_stop_printing(struct prompt *p);
/* The agent's descriptor while gpu: clauses run, else -1; its work. */
int pr_agent_fd(struct prompt *p);
void pr_agent_poll(struct prompt *p);
int pr_poll(struct prompt *p);
bool pr_exiting(struct prompt *p, int *code);
struct pr_map *pr_map_find(struct prompt *p, const char *name);
void pr_print_map(struct prompt *p, struct pr_map *m);
void pr_print_all(struct prompt *p, bool at_exit);
int pr_clear(struct prompt *p, struct pr_map *m);
int pr_end(struct prompt *p);
int pr_ring_fd(struct prompt *p);

/* prompt_cmd.c: a line that is a command (0 when it is not one) */
bool pr_is_command(const char *line);
void pr_command(struct prompt *p, const char *line);
int pr_attach(struct prompt *p, int pid);

/* prompt.c: around output printed while the prompt line shows */
void pr_out_begin(void);
void pr_out_end(void);
/* whether Ctrl-C was pressed since the last call */
bool pr_interrupted(void);

/* prompt_complete.c */
void pr_complete_init(struct prompt *p);
void pr_words_load(struct prompt *p);
void pr_words_free(struct prompt *p);

#endif
