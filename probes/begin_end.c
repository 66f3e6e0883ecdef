// SPDX-License-Identifier: MIT
/*
 * BEGIN and END.  bpftrace fires these through a uprobe on a function of
 * its own; we load them as raw tracepoint programs and run them once with
 * BPF_PROG_TEST_RUN, which executes the program synchronously in the
 * calling task: pid, tid and comm are the tracer's, as in bpftrace, and
 * nothing is attached in the kernel.  Raw tracepoint programs get the
 * whole tracing helper set (current pid/comm, ktime, cpu, maps, ring
 * buffers, probe_read) and accept a test run without a context buffer of
 * a fixed layout.
 */
#include <errno.h>
#include <stdio.h>

#include <bpf/bpf.h>

#include "probes/provider.h"

static int be_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	if (p->nargs == 0)
		return 0;
	snprintf(err, errlen, "%s probe type requires 0 arguments",
		 p->prov->name);
	*arg = 0;
	return -EINVAL;
}

static bool be_has_builtin(const struct probe *p, const char *name)
{
	/* run by hand through BPF_PROG_TEST_RUN: no context of interest */
	return provider_host_builtin(name) && strcmp(name, "ctx");
}

/* Nothing to attach: remember the program for fire(). */
static int be_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	p->prog_fd = prog_fd;
	return 0;
}

/* The object owns the program fd; just forget it. */
static void be_detach(struct probe *p)
{
	p->prog_fd = -1;
}

static int be_fire(struct probe *p)
{
	/* A raw tracepoint context is up to 12 u64 arguments; all zero. */
	uint64_t ctx[12] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.ctx_in = ctx,
		.ctx_size_in = sizeof(ctx),
	);

	if (p->prog_fd < 0)
		return -EBADF;
	if (bpf_prog_test_run_opts(p->prog_fd, &opts))
		return -errno;
	return 0;
}

const struct provider provider_begin = {
	.name = "BEGIN",
	.alias = "begin",
	.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
	.parse = be_parse,
	.has_builtin = be_has_builtin,
	.attach = be_attach,
	.detach = be_detach,
	.fire = be_fire,
};

const struct provider provider_end = {
	.name = "END",
	.alias = "end",
	.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
	.parse = be_parse,
	.has_builtin = be_has_builtin,
	.attach = be_attach,
	.detach = be_detach,
	.fire = be_fire,
};
