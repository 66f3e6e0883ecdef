// SPDX-License-Identifier: MIT
/*
 * -l for the kernel's probes and usdt: the concrete probes a pattern
 * like 'kprobe:vfs_*', 'tracepoint:sched:*', 'rawtracepoint:*',
 * 'software:*' or 'usdt:BIN:*' stands for, one a line, sorted.
 */
#define _GNU_SOURCE	/* asprintf */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/elf_syms.h"
#include "probes/kfuncs.h"
#include "probes/provider.h"
#include "probes/tracepoint.h"
#include "probes/usdt_notes.h"
#include "runtime/list.h"

int rawtp_foreach(const char *pattern, int (*fn)(const char *name, void *arg),
		  void *arg);

struct lister {
	const char *pattern;	/* with the provider's full name */
	const char *filter;	/* and this too, when set */
	bool verbose;		/* -lv: tracepoint fields */
	FILE *out;
};

static int list_provider(struct lister *l, const char *pattern, int pid);

static bool line(struct lister *l, const char *text)
{
	if (fnmatch(l->pattern, text, 0) ||
	    (l->filter && fnmatch(l->filter, text, 0)))
		return false;
	fprintf(l->out, "%s\n", text);
	return true;
}

/* -lv: the event's fields as its format file declares them, the common_
 * ones left out, as bpftrace prints them ("    const char * filename"). */
static void tp_fields(FILE *out, const char *cat, const char *name)
{
	char path[512], buf[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/events/%s/%s/format", tracefs_dir(),
		 cat, name);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(buf, sizeof(buf), f)) {
		char *d = strstr(buf, "field:"), *end;

		if (!d || !(end = strchr(d, ';')))
			continue;
		d += 6;
		*end = 0;
		/* the name is the last word, before any [N] */
		end = d + strcspn(d, "[");
		while (end > d && end[-1] == ' ')
			end--;
		while (end > d && end[-1] != ' ' && end[-1] != '*')
			end--;
		if (strncmp(end, "common_", 7))
			fprintf(out, "    %s\n", d);
	}
	fclose(f);
}

static int tp_line(const char *cat, const char *name, void *arg)
{
	struct lister *l = arg;
	char buf[512];

	snprintf(buf, sizeof(buf), "tracepoint:%s:%s", cat, name);
	if (line(l, buf) && l->verbose)
		tp_fields(l->out, cat, name);
	return 0;
}

static int rt_line(const char *name, void *arg)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "rawtracepoint:%s", name);
	line(arg, buf);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* usdt:BIN[:...]: the probes of BIN, each provider:name once, sorted. */
static int list_usdt(struct lister *l, const char *rest, int pid)
{
	char bin[PATH_MAX], path[PATH_MAX], shown[PATH_MAX], err[512], **v;
	struct usdt_sites s;
	size_t n = 0;

	snprintf(bin, sizeof(bin), "%s", rest);
	bin[strcspn(bin, ":")] = 0;
	if (syms_resolve_shown(bin, pid, path, sizeof(path), shown, sizeof(shown),
			       err, sizeof(err)) ||
	    usdt_read(path, &s, err, sizeof(err))) {
		fprintf(stderr, "gputrace: %s\n", err);
		return 1;
	}
	v = calloc(s.n + 1, sizeof(*v));
	for (size_t i = 0; v && i < s.n; i++)
		if (asprintf(&v[n], "usdt:%s:%s:%s", shown,
			     s.v[i].provider, s.v[i].name) >= 0)
			n++;
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (!i || strcmp(v[i], v[i - 1]))
			line(l, v[i]);
	}
	while (n)
		free(v[--n]);
	free(v);
	usdt_sites_free(&s);
	return 0;
}

void list_kernel_all(const char *pattern, bool verbose, FILE *out)
{
	static const char *const provs[] = {
		"software:*", "hardware:*", "tracepoint:*", "rawtracepoint:*",
		"kprobe:*",
	};
	struct lister l = { .filter = pattern, .verbose = verbose, .out = out };

	for (size_t i = 0; i < sizeof(provs) / sizeof(provs[0]); i++)
		list_provider(&l, provs[i], 0);
}

int list_kernel_probes(const char *pattern, int pid, bool verbose, FILE *out)
{
	struct lister l = { .out = out, .verbose = verbose };

	return list_provider(&l, pattern, pid);
}

/* L's probes for PATTERN of one kernel provider; -1: not one. */
static int list_provider(struct lister *lp, const char *pattern, int pid)
{
	static const char *const sw[] = {
		"alignment-faults", "bpf-output", "context-switches", "cpu-clock",
		"cpu-migrations", "dummy", "emulation-faults", "major-faults",
		"minor-faults", "page-faults", "task-clock",
	};
	static const char *const hw[] = {
		"backend-stalls", "branch-instructions", "branch-misses",
		"bus-cycles", "cache-misses", "cache-references", "cpu-cycles",
		"frontend-stalls", "instructions", "ref-cycles",
	};
	const struct provider *prov;
	struct lister l = *lp;
	char name[32], *full;
	const char *colon = strchr(pattern, ':');
	size_t n;

	if (!colon || colon - pattern >= (long)sizeof(name))
		return -1;
	memcpy(name, pattern, colon - pattern);
	name[colon - pattern] = 0;
	prov = provider_find(name);
	if (!prov || (prov != &provider_kprobe && prov != &provider_kretprobe &&
		      prov != &provider_tracepoint && prov != &provider_usdt &&
		      prov != &provider_rawtracepoint &&
		      prov != &provider_software && prov != &provider_hardware))
		return -1;
	/* an alias lists under the full name, as probes are named */
	if (asprintf(&full, "%s%s", prov->name, colon) < 0)
		return 1;
	l.pattern = full;
	if (prov == &provider_kprobe || prov == &provider_kretprobe) {
		const char *const *v = kfuncs_list(&n);
		char buf[512];

		for (size_t i = 0; i < n; i++) {
			snprintf(buf, sizeof(buf), "%s:%s", prov->name, v[i]);
			line(&l, buf);
		}
	} else if (prov == &provider_tracepoint) {
		int rc = tp_foreach("*", "*", tp_line, &l);

		if (rc == -ENOENT || rc == -EACCES)
			fprintf(stderr, "gputrace: %s\n", tracefs_why());
	} else if (prov == &provider_rawtracepoint) {
		rawtp_foreach("*", rt_line, &l);
	} else if (prov == &provider_usdt) {
		int ret = list_usdt(&l, colon + 1, pid);

		free(full);
		return ret;
	} else {
		const char *const *v = prov == &provider_software ? sw : hw;
		size_t k = prov == &provider_software ? sizeof(sw) / sizeof(sw[0]) :
			   sizeof(hw) / sizeof(hw[0]);
		char buf[128];

		for (size_t i = 0; i < k; i++) {
			snprintf(buf, sizeof(buf), "%s:%s:", prov->name, v[i]);
			line(&l, buf);
		}
	}
	free(full);
	return 0;
}
