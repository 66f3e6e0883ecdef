// SPDX-License-Identifier: MIT
/*
 * rawtracepoint:NAME (rt:NAME): a raw tracepoint program, which gets the
 * tracepoint's own arguments (arg0..argN, as u64) before any event
 * record is made.  It needs no tracefs: the tracepoints and their
 * argument counts come from vmlinux BTF (the btf_trace_NAME typedefs the
 * kernel makes for BPF), so it is the kernel-event probe for machines
 * without tracefs.  bpftrace 0.17 has no such provider; later bpftrace
 * versions spell it the same way.
 */
#define _GNU_SOURCE	/* asprintf */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "probes/kfuncs.h"
#include "probes/provider.h"

#define TRACE_PREFIX	"btf_trace_"

/* The argument count of raw tracepoint NAME, or negative errno. */
int rawtp_nargs(const char *name)
{
	const struct btf *btf = kfuncs_btf();
	const struct btf_type *t;
	char tname[256];
	int id;

	if (!btf)
		return -ENOENT;
	snprintf(tname, sizeof(tname), TRACE_PREFIX "%s", name);
	id = btf__find_by_name_kind(btf, tname, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	/* typedef -> pointer -> func proto (void *__data, args...) */
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -ENOENT;
	return btf_vlen(t) - 1;
}

/* Call FN for every raw tracepoint whose name matches PATTERN. */
int rawtp_foreach(const char *pattern, int (*fn)(const char *name, void *arg),
		  void *arg)
{
	const struct btf *btf = kfuncs_btf();
	size_t plen = strlen(TRACE_PREFIX);
	int n, ret = 0;

	if (!btf)
		return -ENOENT;
	n = btf__type_cnt(btf);
	for (int id = 1; id < n && !ret; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name;

		if (!btf_is_typedef(t))
			continue;
		name = btf__name_by_offset(btf, t->name_off);
		if (name && !strncmp(name, TRACE_PREFIX, plen) &&
		    !fnmatch(pattern, name + plen, 0))
			ret = fn(name + plen, arg);
	}
	return ret;
}

static int rt_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	int n;

	if (p->nargs != 1 || !p->args[0][0]) {
		snprintf(err, errlen,
			 "rawtracepoint probe type requires 1 argument (rawtracepoint:NAME)");
		*arg = -1;
		return -EINVAL;
	}
	n = rawtp_nargs(p->args[0]);
	if (n < 0) {
		snprintf(err, errlen, kfuncs_btf() ?
			 "raw tracepoint not found: %s" :
			 "raw tracepoint %s: the kernel has no BTF (/sys/kernel/btf/vmlinux)",
			 p->args[0]);
		*arg = 0;
		return -EINVAL;
	}
	p->func = p->args[0];
	p->offset = n;		/* the argument count */
	return 0;
}

static int add_name(const char *name, void *arg)
{
	return provider_names_add(arg, "rawtracepoint:%s", name);
}

static int rt_expand(const struct probe *p, char ***out, char *err,
		     size_t errlen)
{
	struct provider_names ns = { 0 };
	int ret;

	*out = NULL;
	if (p->nargs != 1) {
		snprintf(err, errlen,
			 "rawtracepoint probe type requires 1 argument (rawtracepoint:NAME)");
		return -EINVAL;
	}
	ret = rawtp_foreach(p->args[0], add_name, &ns);
	if (ret) {
		provider_names_free(&ns);
		snprintf(err, errlen, "%s: cannot list the raw tracepoints (no BTF?)",
			 p->name);
		return ret;
	}
	*out = ns.v;
	return ns.n;
}

static bool rt_has_builtin(const struct probe *p, const char *name)
{
	int n;

	if (provider_host_builtin(name))
		return true;
	return provider_arg_index(name, &n) && n < (long)p->offset;
}

static int rt_builtin_src(const struct probe *p, const char *name,
			  struct builtin_src *src)
{
	memset(src, 0, sizeof(*src));
	if (!rt_has_builtin(p, name) || provider_host_builtin(name))
		return -ENOENT;
	src->kind = BSRC_CTX_U64;
	src->off = 8 * atoi(name + 3);
	return 0;
}

static void rt_detach(struct probe *p)
{
	while (p->nfds > 0)
		close(p->fds[--p->nfds]);
	p->prog_fd = -1;
}

static int rt_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	int fd, e;

	if (!p->func) {
		snprintf(err, errlen, "%s: not parsed", p->name);
		return -EINVAL;
	}
	fd = bpf_raw_tracepoint_open(p->func, prog_fd);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "bpf_raw_tracepoint_open: %s", strerror(e));
		return -e;
	}
	p->prog_fd = prog_fd;
	p->fds[p->nfds++] = fd;
	return 0;
}

const struct provider provider_rawtracepoint = {
	.name = "rawtracepoint",
	.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
	.parse = rt_parse,
	.has_builtin = rt_has_builtin,
	.builtin_src = rt_builtin_src,
	.expand = rt_expand,
	.pid_filter = true,
	.attach = rt_attach,
	.detach = rt_detach,
};
