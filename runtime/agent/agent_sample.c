// SPDX-License-Identifier: MIT
/*
 * gpu:sample: CUPTI's PC sampling (cupti_pcsampling.h), continuous mode,
 * in every context the target launches in (docs/gpu-sample.md).
 *
 * PC sampling is per context: it is turned on at the first launch the
 * agent sees in a context (on the launching thread, once; the launch
 * then runs sampled).  CUPTI's own threads move the hardware's samples
 * into its scratch buffer; the agent's thread takes them with
 * cuptiPCSamplingGetData() every COMPLETE_MS (agent_serve.c; never a
 * synchronisation of the application's streams: the API does none), at
 * each snapshot and at exit, and calls gputrace_sample(rec, stall) once
 * per (kernel, PC, stall reason) with the samples counted since the
 * last take; the tracer's uprobe is there.  Memory is bounded
 * (gpucode/cupti_pcs.h): two parsed-data buffers of 2048 PCs per
 * context, a 2 MiB scratch buffer and a 64 MiB hardware buffer (CUPTI's
 * default is 512 MiB); samples the hardware drops are counted and
 * reported at exit.
 *
 * Refusals are one line each and the target runs on unsampled: no
 * CUPTI, a GPU or driver without PC sampling, no profiling permission,
 * another client holding PC sampling or the profiler (torch.profiler,
 * Nsight).
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/cupti_pcs.h"
#include "gpucode/kname.h"
#include "runtime/agent/agent_priv.h"

#define MAX_CTX		32
#define MAX_TAKES	64		/* per context and flush */
#define CACHE_SLOTS	4096		/* kernel names */
#define STALL_PREFIX	"smsp__pcsamp_warps_issue_stalled_"
#define SAMP_PREFIX	"smsp__pcsamp_"

static struct cupti_pcs pcs;

struct sctx {
	CUcontext ctx;
	int on;			/* 1 sampling; -1 refused or gone */
	uint32_t gpu;
	size_t nstall;
	uint32_t *index;	/* CUPTI's stall indexes */
	char **names;		/* and their names, prefix cut */
	CUpti_PCSamplingData cfg, take;	/* CUPTI's at disable; ours */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * A detach's stop, asked of the application's next launch (stop_req
 * 1, then 2 when done): cuptiPCSamplingDisable from the agent's thread
 * while the application was inside the driver hung both (issue 33).
 */
static pthread_cond_t stop_cond = PTHREAD_COND_INITIALIZER;
static int stop_req;
#define STOP_WAIT_MS	2000
static int loaded;		/* 1 symbols found, -1 no CUPTI */
static struct sctx ctxs[MAX_CTX];
static int nctx;
static unsigned gen = 1;	/* bumped at stop: contexts are met again */
static __thread CUcontext last_ctx;
static __thread unsigned last_gen;
static uint64_t dropped, total, nonuser;

/* kernel names seen in records, by their hash */
struct kslot {
	uint64_t key, match;
	bool used;
};
static struct kslot cache[CACHE_SLOTS];

/* The tracer's uprobe fires here, once per (kernel, PC, stall reason). */
__attribute__((noinline, used, visibility("default")))
void gputrace_sample(const struct agent_sample_rec *r, const char *stall)
{
	__asm__ volatile("" : : "r"(r), "r"(stall) : "memory");
}

static const char *why(CUptiResult r)
{
	const char *s = NULL;

	if (pcs.result_string && pcs.result_string(r, &s) == CUPTI_SUCCESS &&
	    s)
		return s;
	return "CUPTI error";
}

void agent_sample_load(void)
{
	void *h;

	if (!agent.cfg.nsamples || loaded)
		return;
	pthread_mutex_lock(&lock);
	if (loaded) {
		pthread_mutex_unlock(&lock);
		return;
	}
	loaded = -1;
	agent_cond_init_mono(&stop_cond);
	agent_in_hook++;	/* CUPTI's own driver calls are not the app's */
	h = agent_cupti_open();
	agent_in_hook--;
	if (!h) {
		agent_report("gpu:sample: no CUPTI library (libcupti.so) in "
			     "this process's CUDA install: no PC samples");
	} else if (cupti_pcs_load(h, &pcs)) {
		agent_report("gpu:sample: the CUPTI library lacks the PC "
			     "sampling API (CUDA 11.3 or later): no PC samples");
	} else {
		loaded = 1;
	}
	pthread_mutex_unlock(&lock);
}

/* The one line that says why CTX is not sampled. */
static void refused(const struct sctx *c, const char *what, CUptiResult r)
{
	switch (r) {
	case CUPTI_ERROR_NOT_SUPPORTED:
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
		agent_report_once("gpu:sample: GPU %u or its driver has no PC "
				  "sampling (%s): its kernels run unsampled",
				  c->gpu, why(r));
		break;
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
		agent_report_once("gpu:sample: no permission to profile GPU %u "
				  "(%s; the driver's "
				  "NVreg_RestrictProfilingToAdminUsers): its "
				  "kernels run unsampled", c->gpu, why(r));
		break;
	default:
		agent_report_once("gpu:sample: CUPTI refused %s on GPU %u (%s): "
				  "another profiler (torch.profiler, Nsight "
				  "Systems or Compute, a second gputrace) may "
				  "hold it; its kernels run unsampled",
				  what, c->gpu, why(r));
	}
}

static void ctx_free(struct sctx *c)
{
	cupti_pcs_stalls_free(c->nstall, c->index, c->names);
	c->names = NULL;
	c->index = NULL;
	cupti_pcs_data_free(&c->cfg);
	cupti_pcs_data_free(&c->take);
}

/* CUPTI's stall reasons for C, their names without the metric prefix. */
static CUptiResult stall_names(struct sctx *c)
{
	CUptiResult r = cupti_pcs_stalls(&pcs, c->ctx, &c->nstall, &c->index,
					 &c->names);

	if (r != CUPTI_SUCCESS)
		return r;
	for (size_t i = 0; i < c->nstall; i++) {
		char *n = c->names[i];
		size_t cut = !strncmp(n, STALL_PREFIX, strlen(STALL_PREFIX)) ?
			     strlen(STALL_PREFIX) :
			     !strncmp(n, SAMP_PREFIX, strlen(SAMP_PREFIX)) ?
			     strlen(SAMP_PREFIX) : 0;

		n[CUPTI_STALL_REASON_STRING_SIZE - 1] = 0;
		memmove(n, n + cut, strlen(n + cut) + 1);
	}
	return CUPTI_SUCCESS;
}

/* PC sampling on in C (lock held, agent_in_hook raised). */
static void enable(struct sctx *c)
{
	CUpti_PCSamplingEnableParams ep = {
		.size = CUpti_PCSamplingEnableParamsSize, .ctx = c->ctx,
	};
	CUpti_PCSamplingDisableParams dp = {
		.size = CUpti_PCSamplingDisableParamsSize, .ctx = c->ctx,
	};
	CUdevice dev = 0;
	CUptiResult r;

	c->on = -1;
	if (agent_drv.ctx_push && agent_drv.ctx_pop &&
	    agent_drv.ctx_push(c->ctx) == CUDA_SUCCESS) {
		CUcontext old;

		if (agent_drv.ctx_get_device(&dev) == CUDA_SUCCESS)
			c->gpu = (uint32_t)dev;
		agent_drv.ctx_pop(&old);
	}
	r = pcs.enable(&ep);
	if (r != CUPTI_SUCCESS) {
		refused(c, "PC sampling", r);
		return;
	}
	r = stall_names(c);
	if (r == CUPTI_SUCCESS &&
	    (cupti_pcs_data_alloc(&c->cfg, CUPTI_PCS_PCS, c->nstall) ||
	     cupti_pcs_data_alloc(&c->take, CUPTI_PCS_PCS, c->nstall)))
		r = CUPTI_ERROR_OUT_OF_MEMORY;
	if (r == CUPTI_SUCCESS)
		r = cupti_pcs_configure(&pcs, c->ctx, agent.cfg.sample_period,
					c->nstall, c->index, &c->cfg);
	if (r != CUPTI_SUCCESS) {
		refused(c, "the PC sampling configuration", r);
		pcs.disable(&dp);
		ctx_free(c);
		return;
	}
	c->on = 1;
	agent_debug("gpu:sample: PC sampling on GPU %u, every 2^%u "
		    "cycles, %zu stall reasons", c->gpu,
		    agent.cfg.sample_period, c->nstall);
}

/* CTX's slot, a free one (a destroyed context's) or a new one; NULL. */
static struct sctx *slot_of(CUcontext ctx)
{
	struct sctx *free_slot = NULL;

	for (int i = 0; i < nctx; i++) {
		if (ctxs[i].ctx == ctx)
			return &ctxs[i];
		if (!ctxs[i].ctx && !free_slot)
			free_slot = &ctxs[i];
	}
	if (!free_slot && nctx < MAX_CTX)
		free_slot = &ctxs[nctx++];
	if (free_slot) {
		memset(free_slot, 0, sizeof(*free_slot));
		free_slot->ctx = ctx;
	}
	return free_slot;
}

void agent_sample_ctx(CUcontext ctx)
{
	unsigned g = __atomic_load_n(&gen, __ATOMIC_ACQUIRE);
	struct sctx *c;

	if (!ctx || (ctx == last_ctx && g == last_gen) || loaded != 1 ||
	    agent.detached)
		return;
	pthread_mutex_lock(&lock);
	c = slot_of(ctx);
	if (!c) {
		agent_report_once("gpu:sample: more than %d contexts: the "
				  "others run unsampled", MAX_CTX);
	} else if (!c->on) {	/* else on, or refused for good */
		agent_in_hook++;
		enable(c);
		agent_in_hook--;
	}
	last_ctx = ctx;
	last_gen = g;
	pthread_mutex_unlock(&lock);
}

AGENT_HOT void agent_sample_current(void)
{
	CUcontext cur = NULL;

	switch (__atomic_load_n(&stop_req, __ATOMIC_ACQUIRE)) {
	case 1:
		agent_sample_stop();
		pthread_mutex_lock(&lock);
		__atomic_store_n(&stop_req, 2, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&stop_cond);
		pthread_mutex_unlock(&lock);
		return;
	case 2:		/* stopped: not on again before the detach */
		return;
	}
	if (!agent_tracing())
		return;
	/* a module loaded before the first launch: CUPTI then comes
	 * before the exit handler as well (see agent_sample_load) */
	if (!loaded)
		agent_sample_load();
	/* a launch's stream belongs to the current context */
	if (agent_drv.ctx_get_current &&
	    agent_drv.ctx_get_current(&cur) == CUDA_SUCCESS)
		agent_sample_ctx(cur);
}

/* The key and clause bits of the kernel named NAME (mangled). */
static void kernel_of(const char *name, uint64_t *key, uint64_t *match)
{
	uint64_t h = kname_hash(name);
	struct kslot *s = &cache[(h * 0x9e3779b97f4a7c15ull >> 52) &
				 (CACHE_SLOTS - 1)];

	if (!s->used || s->key != h) {
		s->used = true;
		s->key = h;
		s->match = agent_glob_bits(name, agent.cfg.samples,
					   agent.cfg.nsamples);
		/* the tracer prints the key by this name */
		if (s->match)
			agent_send(AGENT_MSG_KNAME, 0, name, strlen(name));
	}
	*key = s->key;
	*match = s->match;
}

static const char *stall_name(const struct sctx *c, uint32_t idx)
{
	for (size_t i = 0; i < c->nstall; i++)
		if (c->index[i] == idx)
			return c->names[i];
	return "unknown";
}

/*
 * CUPTI lists each stall reason twice: X counts every sample of a warp
 * stalled on X, X_not_issued the subset taken when the scheduler issued
 * nothing.  Passing both would count a not-issued sample twice (on the
 * H100 a memory-bound kernel had 1.9 samples per sampling period and SM,
 * an FMA-bound one 1.0), so `samples` summed over records is the number
 * of samples taken only with the subset left out.
 */
static bool subset_reason(const char *name)
{
	static const char sfx[] = "_not_issued";
	size_t n = strlen(name);

	return n >= sizeof(sfx) - 1 && !strcmp(name + n - (sizeof(sfx) - 1), sfx);
}

/* Every (PC, stall reason) of D with samples, to the tracer. */
static void deliver(const struct sctx *c, const CUpti_PCSamplingData *d)
{
	size_t n = d->totalNumPcs < CUPTI_PCS_PCS ? d->totalNumPcs :
		   CUPTI_PCS_PCS;

	for (size_t i = 0; i < n; i++) {
		const CUpti_PCSamplingPCData *pc = &d->pPcData[i];
		struct agent_sample_rec r = { 0 };
		size_t ns = pc->stallReasonCount < c->nstall ?
			    pc->stallReasonCount : c->nstall;

		if (!pc->functionName)
			continue;
		kernel_of(pc->functionName, &r.kernel, &r.match);
		if (!r.match)
			continue;
		r.pc = pc->pcOffset;
		r.gpu = c->gpu;
		r.name = pc->functionName;
		for (size_t j = 0; j < ns; j++) {
			if (!pc->stallReason[j].samples)
				continue;
			const char *st;

			r.samples = pc->stallReason[j].samples;
			r.stall = pc->stallReason[j].pcSamplingStallReasonIndex;
			st = stall_name(c, r.stall);
			if (!subset_reason(st))
				gputrace_sample(&r, st);
		}
	}
	dropped += d->droppedSamples;
	total += d->totalSamples;
	nonuser += d->nonUsrKernelsTotalSamples;
}

/* Take what CUPTI holds for C, CUPTI_PCS_PCS PCs a piece (lock held). */
static void take(struct sctx *c)
{
	CUpti_PCSamplingGetDataParams p = {
		.size = CUpti_PCSamplingGetDataParamsSize, .ctx = c->ctx,
		.pcSamplingData = &c->take,
	};
	static bool told;

	for (int t = 0; t < MAX_TAKES; t++) {
		CUptiResult r;

		c->take.totalNumPcs = c->take.remainingNumPcs = 0;
		c->take.totalSamples = c->take.droppedSamples = 0;
		c->take.nonUsrKernelsTotalSamples = 0;
		r = pcs.get_data(&p);
		if (r == CUPTI_ERROR_OUT_OF_MEMORY && !told) {
			told = true;
			agent_report("gpu:sample: CUPTI's hardware buffer "
				     "filled: samples were lost (a longer "
				     "period, gpu:sample:GLOB:N, costs fewer)");
		}
		if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY) {
			if (r != CUPTI_ERROR_INVALID_OPERATION)
				agent_debug("gpu:sample: GPU %u: %s", c->gpu,
					    why(r));
			return;
		}
		deliver(c, &c->take);
		if (!c->take.remainingNumPcs)
			return;
	}
}

void agent_sample_flush(void)
{
	if (loaded != 1)
		return;
	pthread_mutex_lock(&lock);
	agent_in_hook++;
	for (int i = 0; i < nctx; i++)
		if (ctxs[i].on == 1)
			take(&ctxs[i]);
	agent_in_hook--;
	pthread_mutex_unlock(&lock);
}

/* Sampling off in C: what is left, then what CUPTI kept (lock held). */
static void finish(struct sctx *c)
{
	CUpti_PCSamplingDisableParams dp = {
		.size = CUpti_PCSamplingDisableParamsSize, .ctx = c->ctx,
	};
	CUcontext old;
	bool pushed;

	if (c->on == 1) {
		/* as when it was enabled (the application's launch): the
		 * context current, also on the agent's thread (a -p detach) */
		pushed = agent_drv.ctx_push && agent_drv.ctx_pop &&
			 agent_drv.ctx_push(c->ctx) == CUDA_SUCCESS;
		take(c);
		/* the rest goes to the configuration's buffer */
		c->cfg.totalNumPcs = 0;
		if (pcs.disable(&dp) == CUPTI_SUCCESS)
			deliver(c, &c->cfg);
		else
			agent_debug("gpu:sample: GPU %u: disabling PC sampling "
				    "failed", c->gpu);
		if (pushed)
			agent_drv.ctx_pop(&old);
	}
	ctx_free(c);
	c->on = -1;	/* a destroyed context's handle may come back */
	c->ctx = NULL;
}

void agent_sample_retire(CUcontext ctx, int dev)
{
	if (loaded != 1)
		return;
	pthread_mutex_lock(&lock);
	agent_in_hook++;
	for (int i = 0; i < nctx; i++)
		if (ctxs[i].ctx && (ctx ? ctxs[i].ctx == ctx :
				    ctxs[i].gpu == (uint32_t)dev))
			finish(&ctxs[i]);
	agent_in_hook--;
	__atomic_add_fetch(&gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
}

/*
 * The stop of a detach, made by the application's thread at its next
 * launch, waited for (bounded): an application that launches nothing
 * meanwhile is not inside a launch, and agent_sample_stop() after the
 * hooks are gone stops it from the agent's thread.  Called while the
 * launch hooks still run; sampling stays off until the next attach.
 */
void agent_sample_stop_async(void)
{
	struct timespec dl = agent_deadline(STOP_WAIT_MS);
	bool on = false;

	if (loaded != 1)
		return;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < nctx; i++)
		on |= ctxs[i].on == 1;
	if (on) {
		/* read by launch hooks without the lock */
		__atomic_store_n(&stop_req, 1, __ATOMIC_RELEASE);
		while (stop_req == 1 &&
		       pthread_cond_timedwait(&stop_cond, &lock, &dl) == 0)
			;
	}
	if (stop_req == 1)
		agent_debug("gpu:sample: no launch in %d ms: PC sampling "
			    "stopped from the agent's thread", STOP_WAIT_MS);
	pthread_mutex_unlock(&lock);
}

void agent_sample_attach(void)
{
	/* a new tracer knows no kernel name yet, and its GLOBs may differ:
	 * each kernel's name is sent again and matched again */
	pthread_mutex_lock(&lock);
	memset(cache, 0, sizeof(cache));
	pthread_mutex_unlock(&lock);
	__atomic_store_n(&stop_req, 0, __ATOMIC_RELEASE);
}

void agent_sample_stop(void)
{
	if (loaded != 1)
		return;
	pthread_mutex_lock(&lock);
	agent_in_hook++;
	for (int i = 0; i < nctx; i++)
		finish(&ctxs[i]);
	nctx = 0;
	agent_in_hook--;
	__atomic_add_fetch(&gen, 1, __ATOMIC_RELEASE);
	if (dropped)
		agent_report("gpu:sample: %llu of %llu samples dropped by the "
			     "hardware (a longer period costs fewer)",
			     (unsigned long long)dropped,
			     (unsigned long long)total);
	dropped = total = 0;
	pthread_mutex_unlock(&lock);
}
/* fork(): CUPTI set up by the parent is not usable here (neither is
 * CUDA); a child whose parent never loaded it loads its own. */
void agent_sample_forked(void)
{
	pthread_mutex_init(&lock, NULL);
	agent_cond_init_mono(&stop_cond);
	stop_req = 0;
	if (loaded == 1)
		loaded = -1;
	nctx = 0;
	gen++;
	dropped = 0;
	total = 0;
	nonuser = 0;
}

#endif /* GT_AGENT_SO */
