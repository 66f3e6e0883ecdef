// SPDX-License-Identifier: MIT
/*
 * gpu:kernel:GLOB[:entry|:exit], gpu:warp:GLOB[:entry|:exit] and
 * gpu:mem:GLOB[:load|:store|:shared]: device probes.  Their clauses are compiled to device eBPF, verified, lowered
 * to PTX and spliced into the matching kernels by the agent; nothing is
 * attached in the kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"
#include "lang/ast.h"
#include "probes/gpu_kernels.h"
#include "probes/provider.h"

/* gpu:mem's last part: the instructions it runs at */
static int mem_point(const char *w, unsigned *mem)
{
	if (!strcmp(w, "load"))
		*mem = PTX_MEM_LOAD;
	else if (!strcmp(w, "store"))
		*mem = PTX_MEM_STORE;
	else if (!strcmp(w, "shared"))
		*mem = PTX_MEM_SHARED;
	else
		return -EINVAL;
	return 0;
}

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
		snprintf(err, errlen, "gpu probes are gpu:kernel:GLOB or gpu:warp:GLOB, with :entry or :exit, or gpu:mem:GLOB");
		return -EINVAL;
	}
	rest++;
	p->mem = 0;
	if (!strncmp(rest, "kernel:", 7)) {
		p->warp = false;
		glob = rest + 7;
	} else if (!strncmp(rest, "warp:", 5)) {
		p->warp = true;
		glob = rest + 5;
	} else if (!strncmp(rest, "mem:", 4)) {
		/* once per warp at each memory instruction */
		p->warp = true;
		p->mem = PTX_MEM_LOAD | PTX_MEM_STORE;
		glob = rest + 4;
	} else {
		*arg = 0;
		snprintf(err, errlen, "unknown gpu probe type '%s' (kernel, warp or mem)",
			 p->nargs ? p->args[0] : "");
		return -EINVAL;
	}
	len = strlen(glob);
	last = strrchr(glob, ':');
	p->retprobe = false;
	if (last && (last == glob || last[-1] != ':') && p->mem) {
		if (mem_point(last + 1, &p->mem)) {
			*arg = p->nargs - 1;
			snprintf(err, errlen, "gpu:mem point must be load, store or shared, not '%s'",
				 last + 1);
			return -EINVAL;
		}
		len = last - glob;
	} else if (last && (last == glob || last[-1] != ':')) {
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

	static const char *const mem[] = {
		"addr", "size", "store", "sectors", "insn", "line",
	};

	if (!strcmp(name, "duration"))
		return p->retprobe;
	if (!strcmp(name, "conflicts"))
		return p->mem == PTX_MEM_SHARED;
	for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++)
		if (!strcmp(mem[i], name))
			return p->mem != 0;
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
