/* SPDX-License-Identifier: MIT */
/*
 * Semantic checks and type inference.  Produces the compilation unit: the
 * typed tree, its maps, the events that clauses send to user space
 * (printf, print, clear, ...), and the probes each clause attaches to.
 */
#ifndef GT_SEMA_H
#define GT_SEMA_H

#include <stdint.h>
#include <stdio.h>

#include "lang/ast.h"
#include "compiler/types.h"

struct probe;

struct map_sym {
	char *name;
	struct loc loc;
	bool key_known;
	struct type *key;	/* tuple of the key parts, NULL: no key */
	struct type *val;	/* NULL until assigned */
	int64_t lmin, lmax, lstep;	/* lhist */
	bool host, device;	/* written by host / device clauses */
	bool per_kernel;	/* device @m[kernel] = count()/hist() only
				 * (kmaps.c): a slot per kernel */
	int index;
	struct map_sym *next;
};

struct var_sym {
	char *name;
	struct type *type;
	int slot;		/* stack offset, set by codegen */
	struct var_sym *next;
};

enum ev_kind {
	EV_PRINTF = 1,
	EV_TIME,
	EV_PRINT_MAP,
	EV_PRINT_VAL,
	EV_CLEAR,
	EV_ZERO,
	EV_EXIT,
	EV_JOIN,	/* join(): the strings read in the probe */
	EV_CAT,		/* cat(fmt, ...): the file's contents */
	EV_SYSTEM,	/* system(fmt, ...): run by the tracer */
	EV_HELPER_ERR,	/* -k: a helper failed; fmt: its name, loc */
};

/* Something a probe sends to the tracer through the ring buffer. */
struct event_desc {
	enum ev_kind kind;
	const char *fmt;	/* printf, time, cat, system; join: delimiter */
	struct type *args;	/* tuple: printf arguments, print value, exit code */
	struct map_sym *map;	/* print, clear, zero */
	uint64_t top, div;	/* print(@m, top, div) */
	struct loc loc;		/* EV_HELPER_ERR: the call */
};

struct clause_info {
	struct probe **probes;
	int nprobes, cap;
	bool device;
	struct var_sym *vars;
};

struct unit {
	struct program *prog;
	struct map_sym *maps;
	int nmaps;
	struct event_desc *events;	/* malloc'd, see unit_free */
	int nevents;
	struct clause_info *clauses;	/* one per clause */
	int nprobes;
	char **argv;			/* positional parameters $1.. */
	int argc;
	int target_pid;			/* -p PID, 0 for none */
	struct type *structs;		/* C struct definitions */
	const char **tfmts;		/* strftime() formats, by id */
	int ntfmts;
};

struct sema_opts {
	char **argv;
	int argc;
	int target_pid;
	bool unsafe;		/* --unsafe: system() and signal() */
};

/* Check PROG; 0 or -EINVAL after reporting every error through diag. */
int sema_check(struct program *prog, const struct sema_opts *opts,
	       struct unit **out);
void unit_free(struct unit *u);
/* Append an event (the code generator's -k checks); its id. */
int unit_add_event(struct unit *u, struct event_desc ev);

/* Set map_sym.per_kernel (compiler/kmaps.c); sema_check calls it. */
void sema_mark_kernel_maps(struct unit *u);
/* NULL-terminated: builtins (arg0..arg9 aside) and functions. */
extern const char *const sema_builtin_names[];
extern const char *const sema_function_names[];
/* -d types */
void sema_dump(FILE *f, const struct unit *u);

#endif
