// SPDX-License-Identifier: MIT
/*
 * cuda:launch[:GLOB], cuda:malloc, cuda:free, cuda:memcpy, cuda:sync,
 * cuda:graph: uprobes on the CUDA driver's entry points (libcuda.so.1);
 * cuda:complete[:GLOB]: a uprobe on the agent's gputrace_complete(),
 * which it calls once per kernel run with the run's record.
 *
 * Each event stands for several entry points (cuLaunchKernel, its _ptsz,
 * Ex and cooperative forms...) whose arguments sit in different places,
 * so expand() makes one probe per entry point that the driver exports,
 * as "cuda:EVENT@FUNC[:GLOB]"; parse() gives the probe back its user
 * name ("cuda:EVENT[:GLOB]") for the `probe` builtin.  Kernel names,
 * entry-time values and GLOB matching use hidden programs and maps that
 * extras() adds once per object (cuda_progs.c, cuda_names.c).
 * docs/cuda-provider.md has the details.
 */
#define _GNU_SOURCE	/* asprintf */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <asm/ptrace.h>

#include <bpf/bpf.h>

#include "compiler/program.h"
#include "gpucode/kname.h"
#include "lang/ast.h"
#include "probes/cuda_priv.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "gpucode/agent_proto.h"
#include "runtime/knames.h"

#define R(f)	((int)offsetof(struct pt_regs, f))

/* Driver entry points, by event; event NULL: hidden probes only. */
const struct cuda_entry cuda_entries[] = {
	{ "launch", "cuLaunchKernel", CL_LAUNCH, NULL },
	{ "launch", "cuLaunchKernel_ptsz", CL_LAUNCH, NULL },
	{ "launch", "cuLaunchCooperativeKernel", CL_LAUNCH, NULL },
	{ "launch", "cuLaunchCooperativeKernel_ptsz", CL_LAUNCH, NULL },
	{ "launch", "cuLaunchKernelEx", CL_LAUNCH_EX, NULL },
	{ "launch", "cuLaunchKernelEx_ptsz", CL_LAUNCH_EX, NULL },
	{ "malloc", "cuMemAlloc_v2", CL_MALLOC, NULL },
	{ "malloc", "cuMemAllocAsync", CL_MALLOC, NULL },
	{ "malloc", "cuMemAllocAsync_ptsz", CL_MALLOC, NULL },
	{ "malloc", "cuMemAllocFromPoolAsync", CL_MALLOC, NULL },
	{ "malloc", "cuMemAllocFromPoolAsync_ptsz", CL_MALLOC, NULL },
	{ "malloc", "cuMemAllocManaged", CL_MALLOC, NULL },
	{ "malloc", "cuMemAllocHost_v2", CL_MALLOC, NULL },
	{ "malloc", "cuMemHostAlloc", CL_MALLOC, NULL },
	{ "malloc", "cuMemAllocPitch_v2", CL_PITCH, NULL },
	{ "free", "cuMemFree_v2", CL_FREE, NULL },
	{ "free", "cuMemFreeAsync", CL_FREE, NULL },
	{ "free", "cuMemFreeAsync_ptsz", CL_FREE, NULL },
	{ "free", "cuMemFreeHost", CL_FREE, NULL },
	{ "memcpy", "cuMemcpyHtoD_v2", CL_MEMCPY, "HtoD" },
	{ "memcpy", "cuMemcpyHtoD_v2_ptds", CL_MEMCPY, "HtoD" },
	{ "memcpy", "cuMemcpyHtoDAsync_v2", CL_MEMCPY, "HtoD" },
	{ "memcpy", "cuMemcpyHtoDAsync_v2_ptsz", CL_MEMCPY, "HtoD" },
	{ "memcpy", "cuMemcpyDtoH_v2", CL_MEMCPY, "DtoH" },
	{ "memcpy", "cuMemcpyDtoH_v2_ptds", CL_MEMCPY, "DtoH" },
	{ "memcpy", "cuMemcpyDtoHAsync_v2", CL_MEMCPY, "DtoH" },
	{ "memcpy", "cuMemcpyDtoHAsync_v2_ptsz", CL_MEMCPY, "DtoH" },
	{ "memcpy", "cuMemcpyDtoD_v2", CL_MEMCPY, "DtoD" },
	{ "memcpy", "cuMemcpyDtoD_v2_ptds", CL_MEMCPY, "DtoD" },
	{ "memcpy", "cuMemcpyDtoDAsync_v2", CL_MEMCPY, "DtoD" },
	{ "memcpy", "cuMemcpyDtoDAsync_v2_ptsz", CL_MEMCPY, "DtoD" },
	{ "memcpy", "cuMemcpy", CL_MEMCPY, "any" },
	{ "memcpy", "cuMemcpy_ptds", CL_MEMCPY, "any" },
	{ "memcpy", "cuMemcpyAsync", CL_MEMCPY, "any" },
	{ "memcpy", "cuMemcpyAsync_ptsz", CL_MEMCPY, "any" },
	{ "sync", "cuCtxSynchronize", CL_SYNC, NULL },
	{ "sync", "cuCtxSynchronize_v2", CL_SYNC, NULL },
	{ "sync", "cuStreamSynchronize", CL_SYNC, NULL },
	{ "sync", "cuStreamSynchronize_ptsz", CL_SYNC, NULL },
	{ "sync", "cuEventSynchronize", CL_SYNC, NULL },
	{ "graph", "cuGraphLaunch", CL_GRAPH, NULL },
	{ "graph", "cuGraphLaunch_ptsz", CL_GRAPH, NULL },
	/* in the agent, not the driver: every kernel run, timed */
	{ "complete", AGENT_COMPLETE_SYM, CL_COMPLETE, NULL },
};
const size_t cuda_nentries = sizeof(cuda_entries) / sizeof(cuda_entries[0]);

static const char *const events[] = {
	"launch", "malloc", "free", "memcpy", "sync", "graph", "complete",
};
#define NEVENTS (sizeof(events) / sizeof(events[0]))

/* The hidden probes that name kernel handles (entry, then return). */
static const struct {
	const char *func;
	enum cuda_hidden entry;
} namers[] = {
	{ "cuModuleGetFunction", CH_NAME_ENTRY },
	{ "cuLibraryGetKernel", CH_NAME_ENTRY },
	{ "cuKernelGetFunction", CH_KERNEL_ENTRY },
};

/* The part after "cuda:EVENT:" (the GLOB, which may hold "::"), or NULL. */
static const char *glob_text(const char *name)
{
	const char *s = strchr(name, ':');

	s = s ? strchr(s + 1, ':') : NULL;
	return s ? s + 1 : NULL;
}

/* The driver for P and its symbols; the path into PATH. */
static int load_driver(const struct probe *p, char *path, size_t len,
		       const struct syms **s, char *err, size_t errlen)
{
	int ret = cuda_find_driver(p->target_pid, path, len, err, errlen);

	return ret ? ret : syms_load(path, s, err, errlen);
}

static const struct syms_func *driver_func(const struct syms *s,
					   const char *name)
{
	bool ambiguous;

	return syms_lookup(s, name, &ambiguous);
}

static int cu_expand(const struct probe *p, char ***out, char *err,
		     size_t errlen)
{
	const char *glob = glob_text(p->name), *at;
	char evglob[64], func[128] = "", path[PATH_MAX], **v;
	const struct syms *s;
	size_t i, n = 0;
	bool known = false;
	int ret;

	*out = NULL;
	if (p->nargs < 1 || !p->args[0][0])
		return provider_fail(err, errlen, NULL, 0,
				     "cuda probes are cuda:launch[:GLOB], cuda:malloc, cuda:free, cuda:memcpy, cuda:sync, cuda:graph, cuda:complete[:GLOB]");
	at = strchr(p->args[0], '@');
	snprintf(evglob, sizeof(evglob), "%.*s",
		 (int)(at ? at - p->args[0] : (long)strlen(p->args[0])),
		 p->args[0]);
	if (at)
		snprintf(func, sizeof(func), "%s", at + 1);
	for (i = 0; i < NEVENTS; i++)
		if (!fnmatch(evglob, events[i], 0))
			known = true;
	if (!known)
		return provider_fail(err, errlen, NULL, 0,
				     "unknown cuda probe '%s' (launch, malloc, free, memcpy, sync, graph, complete)",
				     evglob);
	if (glob && !*glob)
		return provider_fail(err, errlen, NULL, 0,
				     "cuda:%s: empty kernel name GLOB",
				     evglob);
	/* cuda:complete alone needs no driver: its probe is in the agent */
	s = NULL;
	for (i = 0; i < NEVENTS; i++)
		if (!fnmatch(evglob, events[i], 0) &&
		    strcmp(events[i], "complete")) {
			ret = load_driver(p, path, sizeof(path), &s, err,
					  errlen);
			if (ret)
				return ret;
			break;
		}
	v = calloc(cuda_nentries + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < cuda_nentries; i++) {
		const struct cuda_entry *e = &cuda_entries[i];

		if (fnmatch(evglob, e->event, 0) ||
		    (func[0] && fnmatch(func, e->func, 0)))
			continue;
		if (glob && e->lay != CL_LAUNCH && e->lay != CL_LAUNCH_EX &&
		    e->lay != CL_COMPLETE) {
			free(v);
			return provider_fail(err, errlen, NULL, 0,
					     "only cuda:launch and cuda:complete take a kernel name (cuda:%s has none)",
					     e->event);
		}
		if (e->lay != CL_COMPLETE && !driver_func(s, e->func))
			continue;	/* an older driver */
		if (asprintf(&v[n], "cuda:%s@%s%s%s", e->event, e->func,
			     glob ? ":" : "", glob ? glob : "") < 0) {
			while (n)
				free(v[--n]);
			free(v);
			return -ENOMEM;
		}
		n++;
	}
	*out = v;
	return n;
}

static const struct cuda_entry *find_entry(const char *event, size_t elen,
					   const char *func)
{
	for (size_t i = 0; i < cuda_nentries; i++)
		if (strlen(cuda_entries[i].event) == elen &&
		    !strncmp(cuda_entries[i].event, event, elen) &&
		    !strcmp(cuda_entries[i].func, func))
			return &cuda_entries[i];
	return NULL;
}

/* Give P its user name ("cuda:EVENT[:GLOB]"), for `probe`. */
static void user_name(struct probe *p, const struct cuda_entry *e,
		      const char *glob)
{
	char name[256];

	snprintf(name, sizeof(name), "cuda:%s%s%s", e->event, glob ? ":" : "",
		 glob ? glob : "");
	p->name = ast_strndup(name, strlen(name));
}

static struct cuda_priv *new_priv(struct probe *p, const struct cuda_entry *e,
				  const char *glob)
{
	struct cuda_priv *pv = ast_alloc(sizeof(*pv));

	memset(pv, 0, sizeof(*pv));
	pv->ent = e;
	pv->glob = glob ? ast_strndup(glob, strlen(glob)) : NULL;
	pv->bit = -1;
	p->priv = pv;
	return pv;
}

/*
 * cuda:complete[:GLOB]: the agent times every kernel run and calls
 * gputrace_complete() with its record; the uprobe goes there.  The agent
 * matches GLOB (it demangles) and sets the clause's bit in the record.
 */
static int complete_parse(struct probe *p, const struct cuda_entry *e,
			  const char *glob, char *err, size_t errlen, int *arg)
{
	const struct syms_func *f;
	const struct syms *s;

	*arg = -1;
	if (!provider_agent_lib && provider_target_cmd)
		return provider_fail(err, errlen, NULL, 0,
				     "cuda:complete: cannot find gputrace's agent library (libgputrace-agent.so next to the gputrace binary, or $GPUTRACE_AGENT_LIB)");
	if (!provider_agent_lib)
		return provider_fail(err, errlen, NULL, 0,
				     "cuda:complete needs -c CMD or -p PID: kernels are timed by gputrace's agent inside the target");
	if (syms_load(provider_agent_lib, &s, err, errlen))
		return -EINVAL;
	f = driver_func(s, AGENT_COMPLETE_SYM);
	if (!f)
		return provider_fail(err, errlen, NULL, 0,
				     "%s has no %s", provider_agent_lib,
				     AGENT_COMPLETE_SYM);
	new_priv(p, e, glob);
	p->path = ast_strndup(provider_agent_lib, strlen(provider_agent_lib));
	p->func = (char *)e->func;
	p->offset = f->offset;
	user_name(p, e, glob);
	return 0;
}

/*
 * -p: FUNC is patched by the agent's inline hooks: the agent's wrapper
 * (same name and arguments) gets the uprobe.  Its file offset, else 0.
 */
static uint64_t hooked_offset(const char *func)
{
	const struct syms_func *f;
	const struct syms *s;
	char err[256], seen[128];

	if (!provider_hooked_lib ||
	    syms_load(provider_hooked_lib, &s, err, sizeof(err)))
		return 0;
	/* launches: where the agent has told the tracer the kernel's name */
	snprintf(seen, sizeof(seen), "%s%s", AGENT_SEEN_PREFIX, func);
	f = driver_func(s, seen);
	if (!f)
		f = driver_func(s, func);
	return f ? f->offset : 0;
}

/* The state of OBJ's cuda probes, or NULL when it has none. */
static struct cuda_shared *obj_shared(const struct gt_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++) {
		const struct probe *q = obj->progs[i].probe;
		const struct cuda_priv *pv = q ? q->priv : NULL;

		if (q && q->prov == &provider_cuda && pv && pv->sh)
			return pv->sh;
	}
	return NULL;
}

int cuda_name_handle(struct gt_object *obj, uint64_t handle,
		     const char *name)
{
	const struct cuda_shared *sh = obj_shared(obj);
	uint8_t val[CUDA_NAMES_VALUE], kn[KNAME_MAX];
	uint64_t bits, h = kname_hash(name);
	char *base;
	int fd;

	if (!sh || sh->names_map < 0)
		return 0;	/* no cuda:launch */
	fd = obj->maps[sh->names_map].fd;
	memset(val, 0, sizeof(val));
	kname_key(val, CUDA_NAME_LEN, name);
	base = syms_demangle(name, true);
	bits = cuda_glob_bits(sh, name, base);
	free(base);
	if (!strncmp(name, KNAME_AGENT_PREFIX, strlen(KNAME_AGENT_PREFIX)))
		bits |= 1ull << CUDA_BIT_AGENT;
	memcpy(val + CUDA_NAME_LEN, &bits, 8);
	if (bpf_map_update_elem(fd, &handle, val, BPF_ANY))
		return -errno;
	/* and the name of its key, for printing */
	memset(kn, 0, sizeof(kn));
	snprintf((char *)kn, sizeof(kn), "%s", name);
	if (sh->knames_map >= 0)
		bpf_map_update_elem(obj->maps[sh->knames_map].fd, &h, kn,
				    BPF_ANY);
	return 0;
}

static int cu_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	const char *at = p->nargs ? strchr(p->args[0], '@') : NULL;
	const char *glob = glob_text(p->name);
	const struct cuda_entry *e;
	const struct syms_func *f;
	const struct syms *s;
	char path[PATH_MAX];
	int ret;

	*arg = 0;
	if (!at)	/* expand() makes every cuda probe */
		return provider_fail(err, errlen, NULL, 0,
				     "cuda probes need the provider's expansion (expand_all in compiler/sema.c)");
	e = find_entry(p->args[0], at - p->args[0], at + 1);
	if (!e)
		return provider_fail(err, errlen, NULL, 0,
				     "unknown cuda probe '%s'", p->args[0]);
	if (e->lay == CL_COMPLETE)
		return complete_parse(p, e, glob, err, errlen, arg);
	if (glob && e->lay != CL_LAUNCH && e->lay != CL_LAUNCH_EX)
		return provider_fail(err, errlen, NULL, 0,
				     "only cuda:launch takes a kernel name");
	if (glob && p->target_pid <= 0 && !provider_target_cmd)
		return provider_fail(err, errlen, NULL, 0,
				     "cuda:launch:GLOB needs -p PID or -c CMD: kernel names are matched against the target's fatbins");
	*arg = -1;
	ret = load_driver(p, path, sizeof(path), &s, err, errlen);
	if (ret)
		return -EINVAL;
	f = driver_func(s, e->func);
	if (!f)
		return provider_fail(err, errlen, NULL, 0,
				     "%s has no %s", path, e->func);
	new_priv(p, e, glob);
	p->path = ast_strndup(path, strlen(path));
	p->func = (char *)e->func;
	p->offset = f->offset;
	if (hooked_offset(e->func)) {
		p->path = ast_strndup(provider_hooked_lib,
				      strlen(provider_hooked_lib));
		p->offset = hooked_offset(e->func);
	}
	p->retprobe = e->lay == CL_MALLOC || e->lay == CL_PITCH ||
		      e->lay == CL_SYNC;
	user_name(p, e, glob);
	return 0;
}

static const struct cuda_entry *entry_of(const struct probe *p)
{
	const struct cuda_priv *pv = p->priv;

	return pv ? pv->ent : NULL;
}

#define CREC(f)	((int)offsetof(struct agent_complete_rec, f))
/* cuda:complete's builtins: fields of the record gputrace_complete gets */
static const struct {
	const char *name;
	int off;
	bool u32;
} complete[] = {
	{ "kernel", CREC(kernel), false }, { "duration", CREC(duration), false },
	{ "queued", CREC(queued), false }, { "stream", CREC(stream), false },
	{ "gridDim.x", CREC(grid[0]), true }, { "gridDim.y", CREC(grid[1]), true },
	{ "gridDim.z", CREC(grid[2]), true },
	{ "blockDim.x", CREC(block[0]), true },
	{ "blockDim.y", CREC(block[1]), true },
	{ "blockDim.z", CREC(block[2]), true }, { "gpu", CREC(gpu), true },
};

static bool cu_has_builtin(const struct probe *p, const char *name)
{
	static const char *const launch[] = {
		"kernel", "gridDim.x", "gridDim.y", "gridDim.z", "blockDim.x",
		"blockDim.y", "blockDim.z", "shmem", "stream",
	};
	const struct cuda_entry *e = entry_of(p);

	if (provider_host_builtin(name) || !strcmp(name, "func"))
		return true;
	if (!e)
		return false;
	switch (e->lay) {
	case CL_LAUNCH:
	case CL_LAUNCH_EX:
		for (size_t i = 0; i < sizeof(launch) / sizeof(launch[0]); i++)
			if (!strcmp(name, launch[i]))
				return true;
		return false;
	case CL_MALLOC:
	case CL_PITCH:
		return !strcmp(name, "size") || !strcmp(name, "retval");
	case CL_FREE:
		return !strcmp(name, "arg0");
	case CL_MEMCPY:
		return !strcmp(name, "size") || !strcmp(name, "kind");
	case CL_SYNC:
		return !strcmp(name, "duration") || !strcmp(name, "retval");
	case CL_GRAPH:
		return !strcmp(name, "stream");
	case CL_COMPLETE:
		for (size_t i = 0; i < sizeof(complete) / sizeof(complete[0]);
		     i++)
			if (!strcmp(name, complete[i].name))
				return true;
		return false;
	}
	return false;
}

/* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra) */
static int launch_src(const char *name, struct builtin_src *src)
{
	static const struct { const char *name; int reg, stack; } a[] = {
		{ "gridDim.x", R(rsi), 0 }, { "gridDim.y", R(rdx), 0 },
		{ "gridDim.z", R(rcx), 0 }, { "blockDim.x", R(r8), 0 },
		{ "blockDim.y", R(r9), 0 },
		/* arg N >= 6 at sp + 8 * (N - 5) at entry */
		{ "blockDim.z", 0, 8 }, { "shmem", 0, 16 }, { "stream", 0, 24 },
	};

	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
		if (strcmp(name, a[i].name))
			continue;
		if (a[i].stack) {
			src->kind = BSRC_USTACK_U64;
			src->off = a[i].stack;
			src->sp_off = R(rsp);
		} else {
			src->kind = BSRC_CTX_U64;
			src->off = a[i].reg;
		}
		src->u32 = strcmp(name, "stream") != 0;
		return 0;
	}
	return -ENOENT;
}

/* cuLaunchKernelEx(const CUlaunchConfig *config, f, ...): see cuda.h */
static int launch_ex_src(const char *name, struct builtin_src *src)
{
	static const char *const fields[] = {
		"gridDim.x", "gridDim.y", "gridDim.z", "blockDim.x",
		"blockDim.y", "blockDim.z", "shmem",
	};

	src->off = R(rdi);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(name, fields[i])) {
			src->kind = BSRC_PTR_U32;
			src->ptr_off = 4 * i;
			return 0;
		}
	if (!strcmp(name, "stream")) {
		src->kind = BSRC_PTR_U64;
		src->ptr_off = 32;	/* CUstream hStream, after 7 u32 */
		return 0;
	}
	return -ENOENT;
}

static int cu_builtin_src(const struct probe *p, const char *name,
			  struct builtin_src *src)
{
	const struct cuda_priv *pv = p->priv;
	const struct cuda_entry *e = entry_of(p);

	memset(src, 0, sizeof(*src));
	if (!e)
		return -ENOENT;
	if (!strcmp(name, "func")) {
		src->kind = BSRC_STR;
		src->str = e->func;
		return 0;
	}
	switch (e->lay) {
	case CL_LAUNCH:
	case CL_LAUNCH_EX:
		if (!strcmp(name, "kernel")) {
			src->kind = BSRC_MAP_STR;
			src->map = pv->sh ? pv->sh->names_map : -1;
			src->off = e->lay == CL_LAUNCH ? R(rdi) : R(rsi);
			src->str = "unknown";
			return src->map < 0 ? -ENOENT : 0;
		}
		return e->lay == CL_LAUNCH ? launch_src(name, src) :
					     launch_ex_src(name, src);
	case CL_MALLOC:
	case CL_PITCH:
	case CL_SYNC:
		if (!strcmp(name, "retval")) {
			src->kind = BSRC_CTX_U64;
			src->off = R(rax);
			src->u32 = true;	/* CUresult */
			return 0;
		}
		if (strcmp(name, e->lay == CL_SYNC ? "duration" : "size"))
			return -ENOENT;
		src->kind = BSRC_MAP_U64;
		src->map = pv->sh ? pv->sh->calls_map : -1;
		src->off = R(rsp);
		src->since = e->lay == CL_SYNC;
		return src->map < 0 ? -ENOENT : 0;
	case CL_FREE:
		if (strcmp(name, "arg0"))
			return -ENOENT;
		src->kind = BSRC_CTX_U64;
		src->off = R(rdi);
		return 0;
	case CL_MEMCPY:
		if (!strcmp(name, "kind")) {
			src->kind = BSRC_STR;
			src->str = e->kind;
			return 0;
		}
		if (strcmp(name, "size"))
			return -ENOENT;
		src->kind = BSRC_CTX_U64;
		src->off = R(rdx);
		return 0;
	case CL_GRAPH:
		if (strcmp(name, "stream"))
			return -ENOENT;
		src->kind = BSRC_CTX_U64;
		src->off = R(rsi);
		return 0;
	case CL_COMPLETE:
		for (size_t i = 0; i < sizeof(complete) / sizeof(complete[0]);
		     i++) {
			if (strcmp(name, complete[i].name))
				continue;
			/* CUPTI's latency timestamps cost each launch:
			 * only for clauses that read them */
			if (!strcmp(name, "queued") && pv->sh)
				pv->sh->cqueued = true;
			src->off = R(rdi);
			src->ptr_off = complete[i].off;
			src->kind = !strcmp(name, "kernel") ? BSRC_PTR_KEY :
				    complete[i].u32 ? BSRC_PTR_U32 :
				    BSRC_PTR_U64;
			return 0;
		}
		return -ENOENT;
	}
	return -ENOENT;
}

static int cu_filter(const struct probe *p, struct probe_filter *f)
{
	const struct cuda_priv *pv = p->priv;
	const struct cuda_entry *e = entry_of(p);

	if (!e || !pv->sh)
		return 0;
	switch (e->lay) {
	case CL_LAUNCH:
	case CL_LAUNCH_EX:
		/* never the agent's own kernels; with a GLOB, only kernels
		 * whose name matched it */
		f->map = pv->sh->names_map;
		f->off = e->lay == CL_LAUNCH ? R(rdi) : R(rsi);
		f->val_off = CUDA_BITS_OFF;
		f->bit = pv->glob ? pv->bit : -1;
		f->skip = CUDA_BIT_AGENT;
		return f->map < 0 ? 0 : 1;
	case CL_COMPLETE:
		/* only records whose kernel the clause's GLOB matched */
		f->user = true;
		f->off = R(rdi);
		f->val_off = CREC(match);
		f->bit = pv->bit;
		return 1;
	case CL_MALLOC:
	case CL_PITCH:
	case CL_SYNC:
		/* only returns whose entry was seen */
		f->map = pv->sh->calls_map;
		f->off = R(rsp);
		f->val_off = 8;
		f->bit = 0;
		return 1;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------- extras -- */

static int add_map(struct gt_object *obj, const char *name, int ksz, int vsz,
		   int n)
{
	struct gt_map_def d = {
		.type = GT_MT_HASH, .key_size = ksz, .value_size = vsz,
		.max_entries = n, .fd = -1,
	};

	snprintf(d.name, sizeof(d.name), "%s", name);
	return gt_object_add_map(obj, &d);
}

/* The state of OBJ's cuda probes, made by the first one. */
static struct cuda_shared *shared_of(struct gt_object *obj, struct probe *p)
{
	struct cuda_shared *sh;

	for (int i = 0; i < obj->nprogs; i++) {
		const struct probe *q = obj->progs[i].probe;
		const struct cuda_priv *pv = q ? q->priv : NULL;

		if (q && q->prov == &provider_cuda && pv && pv->sh)
			return pv->sh;
	}
	sh = ast_alloc(sizeof(*sh));
	memset(sh, 0, sizeof(*sh));
	sh->obj = obj;
	sh->names_map = sh->match_map = sh->pend_map = sh->calls_map = -1;
	sh->knames_map = sh->scratch_map = -1;
	return sh;
}

/* A hidden probe on FUNC of the driver running program WHAT. */
static int add_hidden(struct cuda_shared *sh, const struct probe *p,
		      const char *func, bool ret, enum cuda_hidden what,
		      char *err, size_t errlen)
{
	struct gt_bpf_prog prog = { .fd = -1 };
	const struct syms_func *f;
	const struct syms *s;
	struct cuda_priv *pv;
	struct probe *h;
	char name[128];
	int e;

	e = syms_load(sh->driver, &s, err, errlen);
	if (e)
		return e;
	f = driver_func(s, func);
	if (!f)
		return 0;	/* not in this driver version */
	h = ast_alloc(sizeof(*h));
	pv = ast_alloc(sizeof(*pv));
	memset(h, 0, sizeof(*h));
	memset(pv, 0, sizeof(*pv));
	pv->hidden = true;
	pv->what = what;
	pv->sh = sh;
	pv->bit = -1;
	snprintf(name, sizeof(name), "cuda:.%s:%s", ret ? "ret" : "entry", func);
	h->prov = &provider_cuda;
	h->name = ast_strndup(name, strlen(name));
	h->target_pid = p->target_pid;
	h->path = ast_strndup(sh->driver, strlen(sh->driver));
	h->func = (char *)func;
	h->offset = f->offset;
	if (hooked_offset(func)) {
		h->path = ast_strndup(provider_hooked_lib,
				      strlen(provider_hooked_lib));
		h->offset = hooked_offset(func);
	}
	h->retprobe = ret;
	h->priv = pv;
	h->prog_fd = -1;
	prog.probe = h;
	e = cuda_prog_build(what, sh, &prog.insns, &prog.ninsns);
	if (!e && gt_object_add_prog(sh->obj, &prog) < 0) {
		free(prog.insns);
		e = -ENOMEM;
	}
	return e;
}

static int add_namers(struct cuda_shared *sh, const struct probe *p,
		      char *err, size_t errlen)
{
	struct gt_object *obj = sh->obj;
	int e = 0;

	sh->names_map = add_map(obj, ".cuda_names", 8, CUDA_NAMES_VALUE, 16384);
	sh->match_map = add_map(obj, ".cuda_match", 8, 8, 1);
	sh->pend_map = add_map(obj, ".cuda_pend", 8, 24, 4096);
	sh->knames_map = add_map(obj, ".cuda_knames", 8, KNAME_MAX, 16384);
	sh->scratch_map = add_map(obj, ".cuda_scratch", 4, KNAME_MAX, 1);
	if (sh->names_map < 0 || sh->match_map < 0 || sh->pend_map < 0 ||
	    sh->knames_map < 0 || sh->scratch_map < 0)
		return -ENOMEM;
	/* names are met once per module: allocate as they come */
	obj->maps[sh->knames_map].map_flags = BPF_F_NO_PREALLOC;
	obj->maps[sh->scratch_map].type = GT_MT_PERCPU_ARRAY;
	for (size_t i = 0; !e && i < sizeof(namers) / sizeof(namers[0]); i++) {
		e = add_hidden(sh, p, namers[i].func, false, namers[i].entry,
			       err, errlen);
		if (!e)
			e = add_hidden(sh, p, namers[i].func, true, CH_NAME_RET,
				       err, errlen);
	}
	return e;
}

static int glob_bit(struct cuda_shared *sh, struct cuda_priv *pv,
		    const struct probe *p, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < sh->nglobs; i++)
		if (!strcmp(sh->globs[i], pv->glob))
			break;
	if (i == sh->nglobs) {
		if (i == CUDA_MAX_GLOBS)
			return provider_fail(err, errlen, NULL, 0,
					     "more than %d different kernel name GLOBs",
					     CUDA_MAX_GLOBS);
		sh->globs[sh->nglobs++] = pv->glob;
	}
	pv->bit = i;
	/* the fatbins are read once we know a namer reads .cuda_match
	 * (cuda_match_prepare): with the agent, none does */
	if (p->target_pid <= 0 && !provider_target_cmd)
		return provider_fail(err, errlen, NULL, 0,
				     "a kernel name GLOB needs -p PID or -c CMD: names are matched against the target's fatbins");
	sh->pid = p->target_pid;
	return 0;
}

/* The bit of a cuda:complete probe's GLOB in the record's match bits. */
static int complete_bit(struct cuda_shared *sh, struct cuda_priv *pv,
			char *err, size_t errlen)
{
	const char *g = pv->glob ? pv->glob : "*";
	int i;

	for (i = 0; i < sh->ncglobs; i++)
		if (!strcmp(sh->cglobs[i], g))
			break;
	if (i == sh->ncglobs) {
		if (i == CUDA_MAX_GLOBS)
			return provider_fail(err, errlen, NULL, 0,
					     "more than %d different cuda:complete GLOBs",
					     CUDA_MAX_GLOBS);
		sh->cglobs[sh->ncglobs++] = g;
	}
	pv->bit = i;
	return 0;
}

static int cu_extras(struct probe *p, void *o, char *err, size_t errlen)
{
	struct gt_object *obj = o;
	struct cuda_priv *pv = p->priv;
	const struct cuda_entry *e = pv->ent;
	struct cuda_shared *sh = shared_of(obj, p);
	size_t idx = e - cuda_entries;
	int ret = 0;

	pv->sh = sh;
	if (!sh->driver[0] && e->lay != CL_COMPLETE &&
	    cuda_find_driver(p->target_pid, sh->driver, sizeof(sh->driver),
			     err, errlen))
		return -EINVAL;
	switch (e->lay) {
	case CL_LAUNCH:
	case CL_LAUNCH_EX:
		if (sh->names_map < 0)
			ret = add_namers(sh, p, err, errlen);
		if (!ret && pv->glob)
			ret = glob_bit(sh, pv, p, err, errlen);
		return ret;
	case CL_MALLOC:
	case CL_PITCH:
	case CL_SYNC:
		if (sh->calls_map < 0) {
			sh->calls_map = add_map(obj, ".cuda_calls", 8,
						CUDA_CALLS_VALUE, 16384);
			if (sh->calls_map < 0)
				return -ENOMEM;
		}
		if (sh->savers & (1ull << idx))
			return 0;
		sh->savers |= 1ull << idx;
		return add_hidden(sh, p, e->func, false,
				  e->lay == CL_SYNC ? CH_SAVE_TIME :
				  e->lay == CL_PITCH ? CH_SAVE_PITCH :
				  CH_SAVE_ARG1, err, errlen);
	case CL_COMPLETE:
		return complete_bit(sh, pv, err, errlen);
	default:
		return 0;
	}
}

bool cuda_complete_queued(const struct gt_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++) {
		const struct probe *q = obj->progs[i].probe;
		const struct cuda_priv *pv = q ? q->priv : NULL;

		if (q && q->prov == &provider_cuda && pv && pv->sh)
			return pv->sh->cqueued;
	}
	return false;
}

int cuda_complete_globs(const struct gt_object *obj, const char *const **globs)
{
	for (int i = 0; i < obj->nprogs; i++) {
		const struct probe *q = obj->progs[i].probe;
		const struct cuda_priv *pv = q ? q->priv : NULL;

		if (q && q->prov == &provider_cuda && pv && pv->sh) {
			*globs = pv->sh->cglobs;
			return pv->sh->ncglobs;
		}
	}
	*globs = NULL;
	return 0;
}

/* ------------------------------------------------------------- attach -- */

/* Whether a hidden namer that reads .cuda_match is to be loaded. */
static bool match_read(const struct gt_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++) {
		const struct probe *q = obj->progs[i].probe;
		const struct cuda_priv *pv = q ? q->priv : NULL;

		if (q && q->prov == &provider_cuda && pv && pv->hidden &&
		    pv->what == CH_NAME_RET && !q->in_agent)
			return true;
	}
	return false;
}

int cuda_match_prepare(struct gt_object *obj, char *err, size_t errlen)
{
	struct cuda_shared *sh = obj_shared(obj);
	struct gt_map_def *m;
	uint32_t n = 0;
	int e;

	if (!sh || sh->match_map < 0 || !sh->nglobs || sh->scanned ||
	    !match_read(obj))
		return 0;
	e = cuda_scan_kernels(sh, sh->pid, err, errlen);
	if (e)
		return e;
	/* only the kernels some GLOB matches go in */
	for (size_t i = 0; i < sh->nkernels; i++)
		n += !!cuda_glob_bits(sh, sh->kernels[i].name,
				      sh->kernels[i].base);
	m = &obj->maps[sh->match_map];
	m->max_entries = n ? n : 1;
	if (m->fd >= 0) {	/* loaded at size 1: made again at its size */
		close(m->fd);
		m->fd = -1;
	}
	return 0;
}

/* The match table: each fatbin kernel that a GLOB matches, with its bits. */
static int fill_match(struct cuda_shared *sh, char *err, size_t errlen)
{
	int fd = sh->obj->maps[sh->match_map].fd;

	sh->filled = true;
	for (size_t i = 0; i < sh->nkernels; i++) {
		const struct cuda_kernel *k = &sh->kernels[i];
		uint64_t bits = cuda_glob_bits(sh, k->name, k->base), old;
		uint64_t key = kname_hash(k->name);

		if (!bits)
			continue;
		/* a hash collision: a match for either */
		if (!bpf_map_lookup_elem(fd, &key, &old))
			bits |= old;
		if (bpf_map_update_elem(fd, &key, &bits, BPF_ANY)) {
			snprintf(err, errlen, "filling the kernel name table: %s",
				 strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static int cu_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	struct cuda_priv *pv = p->priv;
	struct cuda_shared *sh = pv ? pv->sh : NULL;

	if (sh && sh->match_map >= 0 && !sh->filled) {
		int e = fill_match(sh, err, errlen);

		if (e)
			return e;
		knames_set_map(sh->obj->maps[sh->knames_map].fd);
	}
	return uprobe_attach(p, prog_fd, err, errlen);
}

const struct provider provider_cuda = {
	.name = "cuda",
	.prog_type = BPF_PROG_TYPE_KPROBE,
	.parse = cu_parse,
	.has_builtin = cu_has_builtin,
	.builtin_src = cu_builtin_src,
	.expand = cu_expand,
	.expand_all = true,
	.extras = cu_extras,
	.filter = cu_filter,
	.pid_filter = false,
	.attach = cu_attach,
	.detach = uprobe_detach,
};
