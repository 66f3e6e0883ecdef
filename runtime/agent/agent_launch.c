// SPDX-License-Identifier: MIT
/*
 * Launches: every hooked launch comes here.  A function no clause
 * matches costs one hash look-up and goes to the real driver untouched;
 * a matched one is replaced by its instrumented copy with the original
 * arguments plus one by-value struct agent_launch_param, same stream,
 * grid, block and shared memory.  No driver call is added to a launch.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "runtime/agent/agent_priv.h"

static uint64_t launch_seq;

static AGENT_HOT CUresult call_real(const struct agent_launch *l,
				    CUfunction f, void **params, void **extra)
{
	switch (l->form) {
	case AGENT_L_EX:
		return (l->ptsz ? agent_drv.launch_ex_ptsz :
			agent_drv.launch_ex)(l->config, f, params, extra);
	case AGENT_L_COOP:
		return (l->ptsz ? agent_drv.launch_coop_ptsz :
			agent_drv.launch_coop)(f, l->gx, l->gy, l->gz, l->bx,
					       l->by, l->bz, l->shmem,
					       l->stream, params);
	default:
		return (l->ptsz ? agent_drv.launch_ptsz : agent_drv.launch)(
			f, l->gx, l->gy, l->gz, l->bx, l->by, l->bz, l->shmem,
			l->stream, params, extra);
	}
}

/* The context the launch runs in: its stream's, else the current one. */
static CUcontext launch_ctx(CUstream s)
{
	CUcontext c = NULL;

	if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD &&
	    agent_drv.stream_get_ctx &&
	    agent_drv.stream_get_ctx(s, &c) == CUDA_SUCCESS && c)
		return c;
	if (agent_drv.ctx_get_current(&c) != CUDA_SUCCESS)
		return NULL;
	return c;
}

void agent_param_fill(struct agent_launch_param *p,
		      const struct agent_kernel *k, const struct agent_inst *in)
{
	struct timespec ts;

	p->ctx = (uint64_t)in->actx->d_ctx;
	p->launch = __atomic_add_fetch(&launch_seq, 1, __ATOMIC_RELAXED);
	/*
	 * On the GPU's clock, so gtime - launch_ns is never negative; read
	 * only for probes that use it (the clock costs tens of ns here).
	 */
	p->launch_ns = 0;
	if (in->launch_ns) {
		clock_gettime(CLOCK_REALTIME, &ts);
		p->launch_ns = (uint64_t)ts.tv_sec * 1000000000ull +
			       (uint64_t)ts.tv_nsec +
			       (uint64_t)in->actx->clock_off;
	}
	p->kernel = (uint64_t)(k->id < 0 ? 0 : k->id);
	memcpy(p->hot, in->hot, sizeof(p->hot));
}

void **agent_params_append(void **params, int n, void *p, void **small,
			   size_t nsmall)
{
	void **out = small;

	if ((size_t)n + 1 > nsmall) {
		out = malloc(((size_t)n + 1) * sizeof(*out));
		if (!out)
			return NULL;
	}
	if (n)
		memcpy(out, params, (size_t)n * sizeof(*out));
	out[n] = p;
	return out;
}

static CUresult launch_inst(const struct agent_launch *l,
			    const struct agent_kernel *k,
			    const struct agent_inst *in)
{
	struct agent_launch_param p;
	void *small[32], **params, *xout[5];
	uint64_t xbuf[512];
	size_t xsize;
	CUresult r;
	int e;

	agent_param_fill(&p, k, in);
	if (l->extra) {
		if (l->params)	/* invalid: let the driver say so */
			return call_real(l, l->f, l->params, l->extra);
		e = agent_extra_build(l->extra, &p, in->ctx_off, xbuf,
				      sizeof(xbuf), &xsize, xout);
		if (e < 0) {
			agent_report_once("not instrumented at this launch: %s: "
					  "unsupported `extra` launch form",
					  k->pretty);
			return call_real(l, l->f, NULL, l->extra);
		}
		return call_real(l, in->fn, NULL, xout);
	}
	if (in->nparams > 0 && !l->params)
		return call_real(l, l->f, l->params, NULL);
	params = agent_params_append(l->params, in->nparams, &p, small,
				     sizeof(small) / sizeof(small[0]));
	if (!params)
		return call_real(l, l->f, l->params, NULL);
	r = call_real(l, in->fn, params, NULL);
	if (params != small)
		free(params);
	return r;
}

/* -p: cuda:launch's uprobes are here (AGENT_SEEN_PREFIX). */
#define SEEN(name) __attribute__((visibility("default"), noinline, used)) \
	void gputrace_seen_##name
#define LARGS CUfunction f, unsigned gx, unsigned gy, unsigned gz, \
	unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s
SEEN(cuLaunchKernel)(LARGS, void **p, void **x) { __asm__ volatile(""); }
SEEN(cuLaunchKernel_ptsz)(LARGS, void **p, void **x) { __asm__ volatile(""); }
SEEN(cuLaunchCooperativeKernel)(LARGS, void **p) { __asm__ volatile(""); }
SEEN(cuLaunchCooperativeKernel_ptsz)(LARGS, void **p)
{
	__asm__ volatile("");
}
SEEN(cuLaunchKernelEx)(const CUlaunchConfig *c, CUfunction f, void **p,
		       void **x)
{
	__asm__ volatile("");
}
SEEN(cuLaunchKernelEx_ptsz)(const CUlaunchConfig *c, CUfunction f,
			    void **p, void **x)
{
	__asm__ volatile("");
}

static void seen(const struct agent_launch *l)
{
	switch (l->form) {
	case AGENT_L_EX:
		(l->ptsz ? gputrace_seen_cuLaunchKernelEx_ptsz :
		 gputrace_seen_cuLaunchKernelEx)(l->config, l->f, l->params,
						 l->extra);
		break;
	case AGENT_L_COOP:
		(l->ptsz ? gputrace_seen_cuLaunchCooperativeKernel_ptsz :
		 gputrace_seen_cuLaunchCooperativeKernel)(
			l->f, l->gx, l->gy, l->gz, l->bx, l->by, l->bz,
			l->shmem, l->stream, l->params);
		break;
	default:
		(l->ptsz ? gputrace_seen_cuLaunchKernel_ptsz :
		 gputrace_seen_cuLaunchKernel)(l->f, l->gx, l->gy, l->gz, l->bx,
					       l->by, l->bz, l->shmem,
					       l->stream, l->params, l->extra);
	}
}

/*
 * -v, once per copy: the blocks an SM holds of K's original and of its
 * copy at this launch's block size and dynamic shared memory, so that
 * a kernel that lost occupancy to its probes is named (the register cap
 * of agent_kernel.c should keep them equal).  A CUkernel handle may be
 * passed as the function, as to a launch.
 */
static void occupancy_tell(const struct agent_launch *l,
			   const struct agent_kernel *k, struct agent_inst *in)
{
	unsigned threads = l->bx * l->by * l->bz;
	int a = 0, b = 0;

	if (!agent.cfg.verbose || !agent_drv.occupancy ||
	    __atomic_exchange_n(&in->occ_told, 1, __ATOMIC_RELAXED))
		return;
	if (agent_drv.occupancy(&a, l->f, (int)threads, l->shmem) ||
	    agent_drv.occupancy(&b, in->fn, (int)threads, l->shmem))
		return;
	agent_debug("%s: occupancy %d -> %d blocks per SM (%u threads, %u "
		    "bytes of dynamic shared memory)%s", k->pretty, a, b,
		    threads, l->shmem, b < a ? ": lost to the probes" : "");
}

AGENT_HOT CUresult agent_launch(const struct agent_launch *l)
{
	/* the thread's state, looked up once: each access of a variable
	 * of a shared object's TLS is a __tls_get_addr call, and the asm
	 * below keeps the compiler from computing it again at each use */
	struct agent_thread *th = &agent_self;
	int *hook;
	struct agent_kernel *k;
	struct agent_inst *in;
	CUcontext ctx;
	CUresult r;
	uint32_t sess;
	uint64_t t0;

	__asm__("" : "+r"(th));
	hook = &th->in_hook;
	if (!agent.active || *hook || agent.detached)
		return call_real(l, l->f, l->params, l->extra);
	t0 = agent.prof ? __rdtsc() : 0;
	sess = __atomic_load_n(&agent.session, __ATOMIC_ACQUIRE);
	agent_call_seen(AGENT_C_LAUNCH);
	agent_saw_cuda();
	agent_sample_here();	/* gpu:sample: on in each context */
	if (agent.cfg.nhprogs)
		agent_host_launch(l, th);	/* where cuda:launch's uprobe fired */
	/* no device clause (host clauses, cuda:complete, gpu:sample): no
	 * copy to launch, no handle to look up */
	if (!agent.cfg.nclauses && !agent.attached) {
		uint64_t t1 = agent.prof ? __rdtsc() : 0;

		(*hook)++;
		r = call_real(l, l->f, l->params, l->extra);
		(*hook)--;
		if (agent.prof)
			agent_prof_add(t1 - t0, __rdtsc() - t1);
		return r;
	}
	k = agent_kernel_get((uintptr_t)l->f);
	if (agent.attached) {
		if (k && __atomic_load_n(&k->told, __ATOMIC_ACQUIRE) != 2)
			agent_tell_handle(k);
		seen(l);
	}
	/* a hooked export calling a hooked internal entry (-p) passes
	 * straight through the second wrapper */
	(*hook)++;
	if (!k || !agent_kernel_matched(k)) {
		r = call_real(l, l->f, l->params, l->extra);
		(*hook)--;
		return r;
	}
	(*hook)--;
	ctx = launch_ctx(l->stream);
	in = ctx ? agent_kernel_inst(k, ctx) : NULL;
	(*hook)++;
	/* a first launch (a scan, a JIT) outlived its session: its device
	 * state is gone, or goes at the next attach */
	if (!in || !in->fn || agent.detached ||
	    __atomic_load_n(&agent.session, __ATOMIC_ACQUIRE) != sess) {
		r = call_real(l, l->f, l->params, l->extra);
		(*hook)--;
		return r;
	}
	agent_inst_fit_smem(k, in, l->shmem);
	occupancy_tell(l, k, in);
	r = launch_inst(l, k, in);
	(*hook)--;
	return r;
}
/* fork(): launches are numbered per process. */
void agent_launch_forked(void)
{
	launch_seq = 0;
}

#endif /* GT_AGENT_SO */
