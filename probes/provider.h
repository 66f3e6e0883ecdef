/* SPDX-License-Identifier: MIT */
/*
 * Probe providers.  Every provider (BEGIN, END, interval, uprobe, cuda,
 * gpu, ...) is one file in probes/ behind one `struct provider`; the
 * compiler asks it which builtins a clause may use and the runtime asks
 * it to attach.
 */
#ifndef GT_PROVIDER_H
#define GT_PROVIDER_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct provider;

/* One attach point, after the probe list and its wildcards are expanded. */
struct probe {
	const struct provider *prov;
	char *name;		/* the full probe text, as the `probe` builtin gives it */
	char *args[4];		/* the parts after the provider name, split at ':' */
	int nargs;
	/* filled by the provider's parse() */
	uint64_t period_ns;	/* interval */
	/* filled by attach() */
	int prog_fd;
	int nfds;
	int fds[8];		/* perf events / links to close on detach */
};

struct provider {
	const char *name;		/* "BEGIN", "interval", ... */
	const char *alias;		/* "begin", or NULL */
	enum bpf_prog_type prog_type;	/* what its programs are loaded as */
	bool device;			/* gpu:* probes run on the GPU */
	/*
	 * Check the probe's arguments and fill its fields.  On error:
	 * -EINVAL, a message in ERR and *ARG the index of the bad argument
	 * (-1 for the probe as a whole).
	 */
	int (*parse)(struct probe *p, char *err, size_t errlen, int *arg);
	/* Whether builtin NAME may be used in this provider's clauses. */
	bool (*has_builtin)(const struct probe *p, const char *name);
	/* Attach the loaded program PROG_FD; negative errno and ERR on failure. */
	int (*attach)(struct probe *p, int prog_fd, char *err, size_t errlen);
	/* Undo attach(); safe to call twice. */
	void (*detach)(struct probe *p);
	/* BEGIN/END: run the program once, now.  NULL for other providers. */
	int (*fire)(struct probe *p);
};

/* The provider named NAME (or its alias), or NULL. */
const struct provider *provider_find(const char *name);
/* All providers, NULL-terminated, for -l and completion. */
extern const struct provider *const providers[];

/* Builtins every host clause may use (pid, tid, comm, nsecs, ...). */
bool provider_host_builtin(const char *name);

/*
 * The providers themselves, one file each in probes/.  A struct probe
 * must start with prog_fd = -1 and nfds = 0 (attach() sets them).
 */
extern const struct provider provider_begin;	/* begin_end.c */
extern const struct provider provider_end;	/* begin_end.c */
extern const struct provider provider_interval;	/* interval.c */

#endif
