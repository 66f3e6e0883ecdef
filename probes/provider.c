// SPDX-License-Identifier: MIT
/*
 * The provider table and the builtins shared by every host provider.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/perf_event.h>
#include <bpf/bpf.h>

#include "probes/provider.h"

/*
 * Order matters only for -l.  uprobe, uretprobe, cuda and gpu are added
 * here by their own files' authors when those files exist.
 */
const struct provider *const providers[] = {
	&provider_begin,
	&provider_end,
	&provider_interval,
	&provider_uprobe,
	&provider_uretprobe,
	&provider_kprobe,
	&provider_kretprobe,
	&provider_tracepoint,
	&provider_rawtracepoint,
	&provider_profile,
	&provider_software,
	&provider_hardware,
	&provider_usdt,
	&provider_cuda,
	&provider_gpu,
	NULL,
};

const char *provider_target_cmd;
const char *provider_agent_lib;
const char *provider_hooked_lib;

/* bpftrace's one- and two-letter provider names */
static const struct {
	const char *alias;
	const struct provider *prov;
} short_names[] = {
	{ "i", &provider_interval },
	{ "u", &provider_uprobe },
	{ "ur", &provider_uretprobe },
	{ "k", &provider_kprobe },
	{ "kr", &provider_kretprobe },
	{ "t", &provider_tracepoint },
	{ "rt", &provider_rawtracepoint },
	{ "p", &provider_profile },
	{ "s", &provider_software },
	{ "h", &provider_hardware },
	{ "U", &provider_usdt },
};

const struct provider *provider_find(const char *name)
{
	const struct provider *const *p;
	size_t i;

	for (i = 0; i < sizeof(short_names) / sizeof(short_names[0]); i++)
		if (!strcmp(short_names[i].alias, name))
			return short_names[i].prov;

	for (p = providers; *p; p++)
		if (!strcmp((*p)->name, name) ||
		    ((*p)->alias && !strcmp((*p)->alias, name)))
			return *p;
	return NULL;
}

int provider_names_add(struct provider_names *ns, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (ns->n + 1 >= ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 64;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	va_start(ap, fmt);
	r = vasprintf(&ns->v[ns->n], fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	ns->v[++ns->n] = NULL;
	return 0;
}

int provider_fail(char *err, size_t errlen, int *arg, int which,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (arg)
		*arg = which;
	return -EINVAL;
}

static struct provider_names probe_ids;

int probe_name_id(const char *name)
{
	for (size_t i = 0; i < probe_ids.n; i++)
		if (!strcmp(probe_ids.v[i], name))
			return (int)i;
	if (probe_ids.n >= INT32_MAX || provider_names_add(&probe_ids, "%s", name))
		return -ENOMEM;
	return (int)probe_ids.n - 1;
}

const char *probe_name_of(uint64_t id)
{
	return id < probe_ids.n ? probe_ids.v[id] : NULL;
}

void provider_names_free(struct provider_names *ns)
{
	while (ns->n)
		free(ns->v[--ns->n]);
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

bool provider_arg_index(const char *name, int *n)
{
	char *end;
	long v;

	if (strncmp(name, "arg", 3) || name[3] < '0' || name[3] > '9')
		return false;
	v = strtol(name + 3, &end, 10);
	if (*end || v > 1 << 20)
		return false;
	*n = (int)v;
	return true;
}

/*
 * Host builtins that need nothing from the attach point: func, argN and
 * retval belong to uprobe-like providers and are answered there.
 */
bool provider_host_builtin(const char *name)
{
	static const char *const names[] = {
		"pid", "tid", "uid", "gid", "comm", "nsecs", "elapsed",
		"cpu", "cpid", "probe", "username", "rand", "curtask",
		"cgroup", "numaid", "ctx", "ustack", "kstack",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

int probe_perf_attach(struct probe *p, int pfd, int prog_fd, const char *what,
		      char *err, size_t errlen)
{
	int lfd, e;

	p->fds[p->nfds++] = pfd;
	p->prog_fd = prog_fd;
	lfd = bpf_link_create(prog_fd, pfd, BPF_PERF_EVENT, NULL);
	if (lfd >= 0) {
		p->fds[p->nfds++] = lfd;
	} else if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog_fd)) {
		/* kernels before 5.15 have no perf links */
		e = errno;
		snprintf(err, errlen, "%s: attaching to the %s: %s", p->name,
			 what, strerror(e));
		return -e;
	}
	if (ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0)) {
		e = errno;
		snprintf(err, errlen, "%s: enabling the %s: %s", p->name, what,
			 strerror(e));
		return -e;
	}
	return 0;
}
