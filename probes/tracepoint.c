// SPDX-License-Identifier: MIT
/*
 * tracepoint:CATEGORY:NAME, with args->FIELD typed from the event's
 * format file in tracefs (offset, size, signedness; char arrays and
 * __data_loc strings are strings, pointers are integers as in bpftrace
 * 0.17).  Attached as a perf tracepoint event (the id from tracefs), one
 * event for every CPU, as bpftrace does.  Without a mounted tracefs the
 * event cannot be named: the error says so and points at rawtracepoint:.
 */
#define _GNU_SOURCE	/* asprintf */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "lang/ast.h"
#include "probes/kfuncs.h"
#include "probes/provider.h"
#include "probes/tracepoint.h"

struct tp_priv {
	uint64_t id;
	struct tp_field *fields;
	int nfields;
};

/*
 * One "field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:G;" line into F
 * (name in the arena).  0, or -EINVAL for another kind of line.
 */
int tp_parse_field(const char *line, struct tp_field *f)
{
	const char *decl = strstr(line, "field:"), *semi, *name, *end;
	unsigned int off, size;
	int sign;

	if (!decl)
		return -EINVAL;
	decl += 6;
	semi = strchr(decl, ';');
	if (!semi || sscanf(semi, "; offset:%u; size:%u; signed:%d;", &off,
			    &size, &sign) != 3) {
		/* tabs between the parts */
		const char *o = strstr(decl, "offset:"), *s = strstr(decl, "size:"),
			   *g = strstr(decl, "signed:");

		if (!semi || !o || !s || !g)
			return -EINVAL;
		off = strtoul(o + 7, NULL, 10);
		size = strtoul(s + 5, NULL, 10);
		sign = atoi(g + 7);
	}
	/* the name is the last word of the declaration, before any [N] */
	end = semi;
	if (end > decl && end[-1] == ']')
		while (end > decl && *end != '[')
			end--;
	name = end;
	while (name > decl && (name[-1] == '_' ||
			       (name[-1] >= 'a' && name[-1] <= 'z') ||
			       (name[-1] >= 'A' && name[-1] <= 'Z') ||
			       (name[-1] >= '0' && name[-1] <= '9')))
		name--;
	if (name == end)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	f->name = ast_strndup(name, end - name);
	f->off = off;
	f->size = size;
	f->sign = sign > 0;
	if (!strncmp(decl, "__data_loc ", 11))
		f->kind = TP_DATALOC;
	else if (*end == '[' && strstr(decl, "char") && strstr(decl, "char") < name)
		f->kind = TP_CHARS;
	else if (size == 1 || size == 2 || size == 4 || size == 8)
		f->kind = TP_INT;
	else
		f->kind = TP_OTHER;
	return 0;
}

/* Read tracefs's events/CAT/NAME/{id,format} into P's private part. */
static int read_event(struct probe *p, const char *tfs, char *err,
		      size_t errlen, int *arg)
{
	struct tp_priv *tp = ast_alloc(sizeof(*tp));
	char path[512], line[1024];
	struct tp_field f;
	int cap = 0;
	FILE *fp;

	memset(tp, 0, sizeof(*tp));
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", tfs, p->args[0],
		 p->args[1]);
	fp = fopen(path, "re");
	if (!fp)
		return provider_fail(err, errlen, arg, -1,
				     "tracepoint not found: %s:%s",
				     p->args[0], p->args[1]);
	if (!fgets(line, sizeof(line), fp)) {
		fclose(fp);
		return provider_fail(err, errlen, arg, -1,
				     "cannot read %s", path);
	}
	fclose(fp);
	tp->id = strtoull(line, NULL, 10);
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", tfs,
		 p->args[0], p->args[1]);
	fp = fopen(path, "re");
	if (!fp)
		return provider_fail(err, errlen, arg, -1,
				     "cannot read %s: %s", path,
				     strerror(errno));
	while (fgets(line, sizeof(line), fp)) {
		if (tp_parse_field(line, &f))
			continue;
		if (tp->nfields == cap) {
			struct tp_field *n;

			cap = cap ? cap * 2 : 16;
			n = ast_alloc(cap * sizeof(*n));
			if (tp->nfields)
				memcpy(n, tp->fields, tp->nfields * sizeof(*n));
			tp->fields = n;
		}
		tp->fields[tp->nfields++] = f;
	}
	fclose(fp);
	p->priv = tp;
	return 0;
}

static int tp_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	const char *tfs;

	if (p->nargs != 2 || !p->args[0][0] || !p->args[1][0])
		return provider_fail(err, errlen, arg, -1,
				     "tracepoint probe type requires 2 arguments (tracepoint:CATEGORY:NAME)");
	tfs = tracefs_dir();
	if (!tfs)
		return provider_fail(err, errlen, arg, -1,
				     "tracepoint %s:%s: %s, or use rawtracepoint:%s",
				     p->args[0], p->args[1], tracefs_why(),
				     p->args[1]);
	return read_event(p, tfs, err, errlen, arg);
}

/* Every CAT:NAME of tracefs's events/ that PAT_CAT and PAT_NAME match. */
int tp_foreach(const char *pat_cat, const char *pat_name,
	       int (*fn)(const char *cat, const char *name, void *arg),
	       void *arg)
{
	const char *tfs = tracefs_dir();
	struct dirent **cats = NULL, **evs;
	char path[512];
	int nc, ne, ret = 0;

	if (!tfs)
		return tracefs_error();
	snprintf(path, sizeof(path), "%s/events", tfs);
	nc = scandir(path, &cats, NULL, alphasort);
	if (nc < 0)
		return -errno;
	for (int i = 0; i < nc; i++) {
		const char *c = cats[i]->d_name;

		if (!ret && c[0] != '.' && !fnmatch(pat_cat, c, 0)) {
			snprintf(path, sizeof(path), "%s/events/%s", tfs, c);
			ne = scandir(path, &evs, NULL, alphasort);
			for (int j = 0; j < ne; j++) {
				const char *e = evs[j]->d_name;

				if (!ret && e[0] != '.' && strcmp(e, "enable") &&
				    strcmp(e, "filter") && !fnmatch(pat_name, e, 0))
					ret = fn(c, e, arg);
				free(evs[j]);
			}
			if (ne >= 0)
				free(evs);
		}
		free(cats[i]);
	}
	free(cats);
	return ret;
}

static int add_name(const char *cat, const char *name, void *arg)
{
	return provider_names_add(arg, "tracepoint:%s:%s", cat, name);
}

static int tp_expand(const struct probe *p, char ***out, char *err,
		     size_t errlen)
{
	struct provider_names ns = { 0 };
	int ret;

	*out = NULL;
	if (p->nargs != 2) {
		snprintf(err, errlen,
			 "tracepoint probe type requires 2 arguments (tracepoint:CATEGORY:NAME)");
		return -EINVAL;
	}
	ret = tp_foreach(p->args[0], p->args[1], add_name, &ns);
	if (ret) {
		provider_names_free(&ns);
		if (ret == -ENOENT || ret == -EACCES)
			snprintf(err, errlen, "%s: %s", p->name, tracefs_why());
		else
			snprintf(err, errlen, "%s: cannot list the tracepoints",
				 p->name);
		return ret;
	}
	*out = ns.v;
	return ns.n;
}

static const struct tp_field *find_field(const struct probe *p,
					 const char *name)
{
	const struct tp_priv *tp = p->priv;

	if (!tp || strncmp(name, "args->", 6))
		return NULL;
	for (int i = 0; i < tp->nfields; i++)
		if (!strcmp(tp->fields[i].name, name + 6))
			return &tp->fields[i];
	return NULL;
}

static bool tp_has_builtin(const struct probe *p, const char *name)
{
	const struct tp_field *f;

	if (provider_host_builtin(name))
		return true;
	f = find_field(p, name);
	return f && f->kind != TP_OTHER;
}

static int tp_builtin_src(const struct probe *p, const char *name,
			  struct builtin_src *src)
{
	const struct tp_field *f = find_field(p, name);

	memset(src, 0, sizeof(*src));
	if (!f || f->kind == TP_OTHER)
		return -ENOENT;
	src->off = f->off;
	src->size = f->size;
	src->sign = f->sign;
	src->kind = f->kind == TP_INT ? BSRC_CTX_INT :
		    f->kind == TP_CHARS ? BSRC_CTX_CHARS : BSRC_CTX_DATALOC;
	return 0;
}

static void tp_detach(struct probe *p)
{
	while (p->nfds > 0)
		close(p->fds[--p->nfds]);
	p->prog_fd = -1;
}

static int tp_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	const struct tp_priv *tp = p->priv;
	struct perf_event_attr attr = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(attr),
		.sample_period = 1,
		.wakeup_events = 1,
		.disabled = 1,
	};
	int fd, e;

	if (!tp) {
		snprintf(err, errlen, "%s: not parsed", p->name);
		return -EINVAL;
	}
	attr.config = tp->id;
	/* the program runs wherever the event fires, whatever the cpu */
	fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "perf_event_open (tracepoint id %llu): %s",
			 (unsigned long long)tp->id, strerror(e));
		return -e;
	}
	e = probe_perf_attach(p, fd, prog_fd, "tracepoint", err, errlen);
	if (e)
		tp_detach(p);
	return e;
}

const struct provider provider_tracepoint = {
	.name = "tracepoint",
	.prog_type = BPF_PROG_TYPE_TRACEPOINT,
	.parse = tp_parse,
	.has_builtin = tp_has_builtin,
	.builtin_src = tp_builtin_src,
	.expand = tp_expand,
	.pid_filter = true,
	.attach = tp_attach,
	.detach = tp_detach,
};
