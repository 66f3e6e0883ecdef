// SPDX-License-Identifier: MIT
/*
 * gpu:kernel:GLOB[:entry|:exit] and gpu:warp:GLOB[:entry|:exit]: device
 * probes.  Their clauses are compiled to device eBPF, verified, lowered
 * to PTX and spliced into the matching kernels by the agent; nothing is
 * attached in the kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "probes/gpu_kernels.h"
#include "probes/provider.h"

/* With -c: what the program's kernels that GLOB matches tell */
struct gpu_priv {
	int nparams;		/* the most any matched kernel has; -1: unknown */
	const char *kernel;	/* one that has that many */
};

static void read_target(struct probe *p)
{
	struct gpu_priv *g = ast_alloc(sizeof(*g));
	const struct gpu_kernel *k;
	int n;

	g->nparams = -1;
	p->priv = g;
	k = gpu_kernels_of(provider_target_cmd, false, &n);
	for (int i = 0; i < n; i++) {
		if (k[i].nparams > g->nparams && gpu_kernel_match(p->func, &k[i])) {
			g->nparams = k[i].nparams;
			g->kernel = k[i].base ? k[i].base : k[i].name;
		}
	}
}

/* The GLOB may hold "::" (C++ names), so the text is split here. */
static int gpu_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	const char *rest = strchr(p->name, ':');
	const char *glob, *last, *why;
	size_t len;
	int bad;

	*arg = -1;
	if (!rest) {
		snprintf(err, errlen, "gpu probes are gpu:kernel:GLOB or gpu:warp:GLOB, with :entry or :exit");
		return -EINVAL;
	}
	rest++;
	if (!strncmp(rest, "kernel:", 7)) {
		p->warp = false;
		glob = rest + 7;
	} else if (!strncmp(rest, "warp:", 5)) {
		p->warp = true;
		glob = rest + 5;
	} else {
		*arg = 0;
		snprintf(err, errlen, "unknown gpu probe type '%s' (kernel or warp)",
			 p->nargs ? p->args[0] : "");
		return -EINVAL;
	}
	len = strlen(glob);
	last = strrchr(glob, ':');
	p->retprobe = false;
	if (last && (last == glob || last[-1] != ':')) {
		if (!strcmp(last, ":exit"))
			p->retprobe = true;
		else if (strcmp(last, ":entry")) {
			*arg = p->nargs - 1;
			snprintf(err, errlen, "gpu probe point must be entry or exit, not '%s'",
				 last + 1);
			return -EINVAL;
		}
		len = last - glob;
	}
	if (!len) {
		*arg = 1;
		snprintf(err, errlen, "gpu probe needs a kernel name or glob");
		return -EINVAL;
	}
	p->func = ast_strndup(glob, len);	/* lives as long as the program */
	if ((bad = gpu_glob_check(p->func, &why)) >= 0) {
		*arg = 1;
		snprintf(err, errlen, "invalid kernel glob '%s': %s", p->func,
			 why);
		return -EINVAL;
	}
	read_target(p);
	return 0;
}

static bool gpu_has_builtin(const struct probe *p, const char *name)
{
	static const char *const names[] = {
		"smid", "nsmid", "warpid", "laneid", "blockIdx.x", "blockIdx.y",
		"blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
		"blockDim.x", "blockDim.y", "blockDim.z", "gridDim.x",
		"gridDim.y", "gridDim.z", "gtime", "clock", "kernel", "launch",
		"launch_ns", "gpu", "pid", "probe",
	};

	if (!strcmp(name, "duration"))
		return p->retprobe;
	if (!strcmp(name, "lanes"))
		return p->warp;
	if (!strncmp(name, "arg", 3) && name[3] >= '0' && name[3] <= '9') {
		const struct gpu_priv *g = p->priv;

		/* the kernel has no such parameter: its PTX would read 0 */
		return !g || g->nparams < 0 || atoi(name + 3) < g->nparams;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

static const char *gpu_builtin_why(const struct probe *p, const char *name,
				   char *buf, size_t len)
{
	const struct gpu_priv *g = p->priv;

	if (strncmp(name, "arg", 3) || !g || g->nparams < 0)
		return NULL;
	if (!g->nparams)
		snprintf(buf, len, "%s: kernel %s has no parameters", name,
			 g->kernel);
	else
		snprintf(buf, len, "%s: kernel %s has %d parameter%s (arg0 to arg%d)",
			 name, g->kernel, g->nparams, g->nparams > 1 ? "s" : "",
			 g->nparams - 1);
	return buf;
}

static int gpu_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	snprintf(err, errlen, "device probes are installed by the in-process agent: give the target with -c CMD or -p PID");
	return -EOPNOTSUPP;
}

const struct provider provider_gpu = {
	.name = "gpu",
	.device = true,
	.parse = gpu_parse,
	.has_builtin = gpu_has_builtin,
	.builtin_why = gpu_builtin_why,
	.attach = gpu_attach,
};
