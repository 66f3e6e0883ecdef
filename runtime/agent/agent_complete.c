// SPDX-License-Identifier: MIT
/*
 * cuda:complete: every kernel run, timed on the GPU, handed to the
 * tracer off the application's launch path (docs/agent.md, "Kernel
 * completions").
 *
 * CUPTI's activity API records each kernel's start and end in buffers
 * it fills and hands back asynchronously: launches of every form, kernel
 * nodes of graphs and SASS-only library kernels alike, with no event and
 * no synchronization on the application's streams, and nothing of ours
 * in its graphs.  For each record the agent calls gputrace_complete(),
 * an empty exported function the tracer puts a uprobe on; its argument
 * is a struct agent_complete_rec.  Buffers come back when they fill, when
 * the agent's thread flushes them (every 100 ms) and at exit, after the
 * contexts are synchronized.
 *
 * libcupti is opened at run time, like libcuda: from the CUDA install the
 * target uses, else the usual places.  Without it, or with a CUPTI older
 * than the one we were built against, cuda:complete is reported off.
 * --timeline shares these buffers (agent_timeline.c): it adds the kinds
 * it draws and gets every record.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_version.h>

#include "gpucode/cupti_open.h"
#include "gpucode/kname.h"
#include "runtime/agent/agent_priv.h"

/*
 * Activity buffers: CUPTI asks for one in the thread whose record needs
 * it, the launching thread, and clears it there unless told the buffers
 * come zeroed (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER).  So a
 * buffer handed back is cleared where it is handed back (CUPTI's thread
 * or the agent's, after its records are read) and kept for the next
 * request: after the first few, a request takes a warm, zeroed buffer
 * from the pool, with no page to fault in and nothing to clear.  4 MiB
 * hold about 16,000 kernel records.
 */
#define BUF_BYTES	(4u << 20)
#define POOL_MAX	8
#define CACHE_SLOTS	4096	/* kernel names; more are looked up again */

static struct {
	CUptiResult (*get_version)(uint32_t *);
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*disable)(CUpti_ActivityKind);
	CUptiResult (*latency)(uint8_t);
	CUptiResult (*callbacks)(CUpti_BuffersCallbackRequestFunc,
				 CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*flush)(uint32_t);
	CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
	void *cb_name;		/* cuptiGetCallbackName, for the timeline */
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
				 void *);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
	CUptiResult (*set_attr)(CUpti_ActivityAttribute, size_t *, void *);
} cupti;

static uint8_t *pool[POOL_MAX];
static int npool;
static bool zeroed;		/* CUPTI takes our buffers as zeroed */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* What --timeline draws besides the kernels. */
static const CUpti_ActivityKind timeline_kinds[] = {
	CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_RUNTIME,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMORY2,
};
#define NTIMELINE_KINDS	(sizeof(timeline_kinds) / sizeof(timeline_kinds[0]))

static CUpti_SubscriberHandle sub;	/* held while records flow */
static int subscribed;

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;		/* CUPTI opened, callbacks registered */
static int on;			/* records flow */
static uint64_t dropped;
static int inherited;		/* set up by the parent of a fork() child */

/* kernel names seen in records: CUPTI shares one name pointer per kernel */
struct kslot {
	const char *name;
	uint64_t key, match;
};
static struct kslot cache[CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* The tracer's uprobe fires here, once per kernel run. */
__attribute__((noinline, used, visibility("default")))
void gputrace_complete(const struct agent_complete_rec *r)
{
	__asm__ volatile("" : : "r"(r) : "memory");
}

void *agent_cupti_open(void)
{
	return cupti_open_lib();
}

/* Bit i: GLOBS[i] matches MANGLED (or its base name); N <= 64. */
uint64_t agent_glob_bits(const char *mangled, char *const *globs, int n)
{
	char *d = agent_demangle(mangled), *base;
	uint64_t bits = 0;

	base = d ? agent_base_name(d) : agent_simple_name(mangled);
	for (int i = 0; i < n && i < 64; i++) {
		const char *g = globs[i];

		if (!fnmatch(g, mangled, 0) || (base && !fnmatch(g, base, 0)))
			bits |= 1ull << i;
	}
	free(d);
	free(base);
	return bits;
}

/* The key and clause bits of the kernel named NAME (mangled). */
static void kernel_of(const char *name, uint64_t *key, uint64_t *match)
{
	size_t i = (size_t)(((uintptr_t)name >> 4) * 0x9e3779b97f4a7c15ull >>
			    52) & (CACHE_SLOTS - 1);
	struct kslot *s = &cache[i];

	pthread_mutex_lock(&cache_lock);
	if (s->name != name) {
		s->name = name;
		s->key = kname_hash(name);
		s->match = agent_glob_bits(name, agent.cfg.completes,
					   agent.cfg.ncompletes);
		/* the tracer prints the key by this name */
		if (s->match)
			agent_send(AGENT_MSG_KNAME, 0, name, strlen(name));
	}
	*key = s->key;
	*match = s->match;
	pthread_mutex_unlock(&cache_lock);
}

static void CUPTIAPI buf_request(uint8_t **buf, size_t *size, size_t *max)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&pool_lock);
	if (npool)
		b = pool[--npool];
	pthread_mutex_unlock(&pool_lock);
	if (!b)		/* fresh pages read as zeros */
		b = calloc(1, BUF_BYTES);
	*buf = b;
	*size = b ? BUF_BYTES : 0;
	*max = 0;
}

/* BUF back to the pool, cleared whole (CUPTI documents what it writes
 * only up to VALID), or freed. */
static void buf_keep(uint8_t *buf, size_t size)
{
	if (zeroed && size == BUF_BYTES) {
		memset(buf, 0, size);
		pthread_mutex_lock(&pool_lock);
		if (npool < POOL_MAX) {
			pool[npool++] = buf;
			buf = NULL;
		}
		pthread_mutex_unlock(&pool_lock);
	}
	free(buf);
}

/* Two warm buffers before the first record, and CUPTI told they come
 * zeroed; without the attribute CUPTI clears them itself. */
static void pool_start(void)
{
	uint8_t one = 1;
	size_t len = sizeof(one);

	zeroed = cupti.set_attr &&
		 cupti.set_attr(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
				&len, &one) == CUPTI_SUCCESS;
	agent_debug("cuda:complete: %u KiB activity buffers%s", BUF_BYTES >> 10,
		    zeroed ? ", handed out zeroed from a pool" :
		    ": CUPTI refused the zeroed-buffer attribute, it clears them");
	pthread_mutex_lock(&pool_lock);
	while (zeroed && npool < 2) {
		uint8_t *b = malloc(BUF_BYTES);

		if (!b)
			break;
		memset(b, 0, BUF_BYTES);	/* faulted in here, once */
		pool[npool++] = b;
	}
	pthread_mutex_unlock(&pool_lock);
}

static void one(const CUpti_ActivityKernel10 *k)
{
	struct agent_complete_rec r = { 0 };

	if (!k->name || !on || !agent.cfg.ncompletes)
		return;
	kernel_of(k->name, &r.kernel, &r.match);
	if (!r.match)
		return;
	r.duration = k->end > k->start ? k->end - k->start : 0;
	/* queued: not recorded for graph kernels (0) */
	r.queued = k->queued && k->start > k->queued ? k->start - k->queued : 0;
	r.stream = k->streamId;
	r.grid[0] = (uint32_t)k->gridX;
	r.grid[1] = (uint32_t)k->gridY;
	r.grid[2] = (uint32_t)k->gridZ;
	r.block[0] = (uint32_t)k->blockX;
	r.block[1] = (uint32_t)k->blockY;
	r.block[2] = (uint32_t)k->blockZ;
	r.gpu = k->deviceId;
	r.name = k->name;
	gputrace_complete(&r);
}

static void CUPTIAPI buf_done(CUcontext ctx, uint32_t stream, uint8_t *buf,
			      size_t size, size_t valid)
{
	CUpti_Activity *a = NULL;
	size_t n = 0;

	while (valid && cupti.next(buf, valid, &a) == CUPTI_SUCCESS) {
		if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			one((const CUpti_ActivityKernel10 *)a);
		agent_timeline_record(a);
	}
	agent_timeline_sync();
	if (cupti.dropped && cupti.dropped(ctx, stream, &n) == CUPTI_SUCCESS &&
	    n)
		__atomic_add_fetch(&dropped, n, __ATOMIC_RELAXED);
	buf_keep(buf, size);
}

/* Kernel records, and the timeline's kinds when it is on; 0 or 1. */
static int enable_kinds(void)
{
	if (cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) !=
	    CUPTI_SUCCESS)
		return 1;
	if (agent_timeline_on())
		for (size_t i = 0; i < NTIMELINE_KINDS; i++)
			if (cupti.enable(timeline_kinds[i]) != CUPTI_SUCCESS)
				agent_report("--timeline: CUPTI refused "
					     "activity kind %d: not drawn",
					     (int)timeline_kinds[i]);
	return 0;
}

static bool wanted(void)
{
	return agent.cfg.ncompletes || agent.cfg.timeline;
}

static void no_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
			const void *data)
{
}

/*
 * CUPTI has one subscriber per process: torch.profiler (Kineto) and
 * Nsight subscribe, and their activity buffers are registered like ours,
 * which would replace theirs.  We subscribe first; where another client
 * holds CUPTI, it is left alone (issue 36).  False: held by another.
 */
static bool hold_cupti(void)
{
	CUptiResult r;

	if (!cupti.subscribe || subscribed)
		return true;	/* a CUPTI without it: nothing to ask */
	agent_in_hook++;
	r = cupti.subscribe(&sub, no_callback, NULL);
	agent_in_hook--;
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		agent_report("cuda:complete: another CUPTI client holds this "
			     "process (torch.profiler, Nsight?): left alone, no "
			     "kernel is timed");
		return false;
	}
	subscribed = r == CUPTI_SUCCESS;
	return true;
}

static void release_cupti(void)
{
	if (!subscribed)
		return;
	agent_in_hook++;
	cupti.unsubscribe(sub);
	agent_in_hook--;
	subscribed = 0;
}

static void start(void)
{
	uint32_t ver = 0;
	void *h;

	if (!wanted())
		return;
	agent_in_hook++;	/* CUPTI's own driver calls are not the app's */
	h = agent_cupti_open();
	agent_in_hook--;
	if (!h) {
		agent_report("cuda:complete: no CUPTI library (libcupti.so) "
			     "in this process's CUDA install: no kernel is timed");
		return;
	}
#define SYM(f, n) (*(void **)&cupti.f = dlsym(h, n))
	if (!SYM(get_version, "cuptiGetVersion") ||
	    !SYM(enable, "cuptiActivityEnable") ||
	    !SYM(disable, "cuptiActivityDisable") ||
	    !SYM(callbacks, "cuptiActivityRegisterCallbacks") ||
	    !SYM(next, "cuptiActivityGetNextRecord") ||
	    !SYM(flush, "cuptiActivityFlushAll")) {
		agent_report("cuda:complete: the CUPTI library lacks the "
			     "activity API: no kernel is timed");
		return;
	}
	SYM(latency, "cuptiActivityEnableLatencyTimestamps");
	SYM(dropped, "cuptiActivityGetNumDroppedRecords");
	SYM(cb_name, "cuptiGetCallbackName");
	SYM(set_attr, "cuptiActivitySetAttribute");
	if (!SYM(subscribe, "cuptiSubscribe") ||
	    !SYM(unsubscribe, "cuptiUnsubscribe"))
		cupti.subscribe = NULL;
#undef SYM
	/* records come in the layout of the CUPTI we were built with */
	if (cupti.get_version(&ver) != CUPTI_SUCCESS ||
	    ver < CUPTI_API_VERSION) {
		agent_report("cuda:complete: CUPTI API version %u, %u or later "
			     "needed: no kernel is timed", ver,
			     (unsigned)CUPTI_API_VERSION);
		return;
	}
	if (!hold_cupti())
		return;
	if (agent.cfg.timeline)
		agent_timeline_open(cupti.cb_name);
	agent_in_hook++;
	pool_start();
	ver = cupti.callbacks(buf_request, buf_done) != CUPTI_SUCCESS ||
	      enable_kinds();
	agent_in_hook--;
	if (ver) {
		agent_report("cuda:complete: CUPTI refused kernel activity "
			     "records (is another profiler attached?)");
		release_cupti();
		return;
	}
	/* `queued`: the timestamps cost every launch, so only for a
	 * clause that reads them (--timeline draws no queue time) */
	if (cupti.latency && agent.cfg.complete_queued)
		cupti.latency(1);
	loaded = 1;
	__atomic_store_n(&on, 1, __ATOMIC_RELEASE);
	agent_debug("cuda:complete: CUPTI, kernel records on");
}

/*
 * --timeline: CUPTI from the program's first look-up of a driver entry
 * point (the CUDA runtime makes them before its first allocation), so
 * that the allocations and copies before the first launch are drawn.
 * CUPTI is made to be set up that early (before cuInit) and during it.
 * A clause that reads `queued` starts it there too: CUPTI's latency
 * timestamps are to be turned on before CUDA is initialised.
 */
void agent_timeline_early(void)
{
	if ((agent.cfg.timeline || agent.cfg.complete_queued) &&
	    agent.active && !agent_in_hook &&
	    !__atomic_load_n(&on, __ATOMIC_ACQUIRE))
		agent_complete_start();
}

/* Once per tracing session (-p attaches again after a detach). */
void agent_complete_start(void)
{
	if (__atomic_load_n(&on, __ATOMIC_ACQUIRE) || !wanted() || inherited)
		return;
	pthread_mutex_lock(&start_lock);
	if (__atomic_load_n(&on, __ATOMIC_ACQUIRE)) {
		;
	} else if (!loaded) {
		start();
	} else if (hold_cupti()) {
		/* -p again: another client may have registered its buffers
		 * since, and would get our records */
		if (agent.cfg.timeline)
			agent_timeline_open(cupti.cb_name);
		agent_in_hook++;
		if (cupti.callbacks(buf_request, buf_done) == CUPTI_SUCCESS &&
		    !enable_kinds())
			__atomic_store_n(&on, 1, __ATOMIC_RELEASE);
		else
			release_cupti();
		agent_in_hook--;
	}
	pthread_mutex_unlock(&start_lock);
}

void agent_complete_flush(bool final)
{
	if (!__atomic_load_n(&on, __ATOMIC_ACQUIRE))
		return;
	cupti.flush(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
	if (final) {
		uint64_t d = __atomic_load_n(&dropped, __ATOMIC_RELAXED);

		if (d)
			agent_report("cuda:complete: %llu kernel records lost "
				     "(CUPTI buffers full)",
				     (unsigned long long)d);
		agent_timeline_close();
	}
}

void agent_complete_stop(void)
{
	if (!__atomic_load_n(&on, __ATOMIC_ACQUIRE))
		return;
	cupti.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	for (size_t i = 0; i < NTIMELINE_KINDS && agent_timeline_on(); i++)
		cupti.disable(timeline_kinds[i]);
	cupti.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	__atomic_store_n(&on, 0, __ATOMIC_RELEASE);
	agent_timeline_close();
	release_cupti();	/* after a -p detach, others may subscribe */
}
/* fork(): the same for kernel records (agent_sample_forked). */
void agent_complete_forked(void)
{
	pthread_mutex_init(&start_lock, NULL);
	pthread_mutex_init(&cache_lock, NULL);
	if (loaded || on)
		inherited = 1;
	on = 0;
	subscribed = 0;
	dropped = 0;
}

#endif /* GT_AGENT_SO */
