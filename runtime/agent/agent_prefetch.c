// SPDX-License-Identifier: MIT
/*
 * Instrumenting ahead.  A kernel's first instrumented launch JITs it on
 * the launching thread (agent_kernel_inst); a program of many kernels
 * would pay each JIT in turn.  So when one kernel of a module or library
 * has been made in a context, the others there that clauses match are
 * queued to worker threads that instrument them side by side; a launch
 * then waits at most for its own kernel (agent_kernel_inst waits on a
 * kernel being made).  The module's kernels come from the driver
 * (cuModuleEnumerateFunctions, cuLibraryEnumerateKernels: CUDA 12.4),
 * since the CUDA runtime asks for each one only at its first launch.
 *
 * Workers block every signal (the program's handlers stay on its own
 * threads), and an exit handler and detach stop them before the
 * contexts go: queued work is dropped, running jobs are waited for.
 *
 * Before the first worker starts, the driver's PTX compiler is loaded
 * and the exit guarded (agent_jit_pin, agent_jitguard.c): else a
 * worker's compile could load it, and its exit handlers would run before
 * ours could stop the workers.  No compiler found: nothing is made ahead.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

#define MAX_WORKERS 8
#define MAX_SEEN 256		/* (owner, context) pairs enumerated */
/*
 * Kernels of one module made ahead: a module of thousands (a large
 * library's translation unit) must not hold the CPUs for minutes with
 * kernels that may never run; past this, each at its first launch.
 */
#define MAX_AHEAD 64
#define STOP_WAIT_MS 10000	/* a JIT takes up to a few hundred ms */

struct job {
	struct agent_kernel *k;
	CUcontext ctx;
	struct job *next;
};

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pcond;	/* work, or idle; CLOCK_MONOTONIC */
static pthread_once_t pcond_once = PTHREAD_ONCE_INIT;
static struct job *head, **tailp = &head;
static int nworkers, nbusy, nqueued;
static bool stopped, enabled;
static int pinned;		/* 0 not tried, 1 exit guarded, -1 cannot be */
static struct {
	uintptr_t owner;
	CUcontext ctx;
} seen[MAX_SEEN];
static int nseen;

/* Under plock: drop the queued jobs for CTX (NULL: all). */
static void drop_queue(CUcontext ctx)
{
	struct job **pp, *j;

	for (pp = &head; (j = *pp);) {
		if (!ctx || j->ctx == ctx) {
			*pp = j->next;
			free(j);
			nqueued--;
		} else {
			pp = &j->next;
		}
	}
	tailp = pp;
}

static void pcond_init(void)
{
	agent_cond_init_mono(&pcond);
}

/* Under plock: wait up to MS for the running jobs to end. */
static void wait_idle(long ms)
{
	struct timespec until = agent_deadline(ms);

	while (nbusy &&
	       pthread_cond_timedwait(&pcond, &plock, &until) != ETIMEDOUT)
		;
}

static void *worker(void *arg)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&plock);
	for (;;) {
		struct job *j;

		while (!head)
			pthread_cond_wait(&pcond, &plock);
		j = head;
		head = j->next;
		if (!head)
			tailp = &head;
		nqueued--;
		nbusy++;
		pthread_mutex_unlock(&plock);
		agent_kernel_inst(j->k, j->ctx);
		free(j);
		pthread_mutex_lock(&plock);
		nbusy--;
		pthread_cond_broadcast(&pcond);
	}
	return arg;
}

/* Under plock: enough workers for the queue, at most one per CPU. */
static void spawn(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int want = ncpu > 1 ? (int)ncpu - 1 : 1;
	pthread_attr_t at;

	if (want > MAX_WORKERS)
		want = MAX_WORKERS;
	if (want > nqueued + nbusy)
		want = nqueued + nbusy;
	if (!pinned)
		pinned = agent_jit_pin() == 0 ? 1 : -1;
	if (nworkers < want && pinned < 0) {
		agent_debug("not instrumenting ahead: no PTX compiler to load "
			    "before the workers start");
		stopped = true;	/* the queue goes below */
		return;
	}
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	while (nworkers < want) {
		pthread_t t;

		if (pthread_create(&t, &at, worker, NULL))
			break;
		pthread_setname_np(t, "gputrace-jit");
		nworkers++;
	}
	pthread_attr_destroy(&at);
}

/* What one module's enumeration queues: up to MAX_AHEAD jobs in CTX. */
struct ahead {
	CUcontext ctx;
	int queued, over;
};

static void enqueue(struct agent_kernel *k, void *arg)
{
	struct ahead *a = arg;
	struct job *j;

	if (a->queued >= MAX_AHEAD) {
		a->over++;
		return;
	}
	if (!(j = calloc(1, sizeof(*j))))
		return;
	j->k = k;
	j->ctx = a->ctx;
	/* under klock (agent_kernel_each_pending); plock nests inside it */
	pthread_mutex_lock(&plock);
	if (stopped) {
		pthread_mutex_unlock(&plock);
		free(j);
		return;
	}
	*tailp = j;
	tailp = &j->next;
	nqueued++;
	a->queued++;
	pthread_mutex_unlock(&plock);
}

/* Record every kernel of OWNER, so that the matched ones can be queued. */
static void enumerate(uintptr_t owner)
{
	const struct agent_image *im = agent_image_find(owner);
	unsigned n = 0;
	void **h;
	CUresult r;

	if (!im)
		return;
	if (im->library && agent_drv.library_kernel_count &&
	    agent_drv.library_enum_kernels && agent_drv.kernel_get_name)
		r = agent_drv.library_kernel_count(&n, (CUlibrary)owner);
	else if (!im->library && agent_drv.module_func_count &&
		 agent_drv.module_enum_funcs && agent_drv.func_get_name)
		r = agent_drv.module_func_count(&n, (CUmodule)owner);
	else
		return;
	if (r != CUDA_SUCCESS || !n || !(h = calloc(n, sizeof(*h))))
		return;
	if (im->library)
		r = agent_drv.library_enum_kernels((CUkernel *)h, n,
						   (CUlibrary)owner);
	else
		r = agent_drv.module_enum_funcs((CUfunction *)h, n,
						(CUmodule)owner);
	for (unsigned i = 0; r == CUDA_SUCCESS && i < n; i++) {
		const char *name = NULL;

		if (im->library)
			agent_drv.kernel_get_name(&name, (CUkernel)h[i]);
		else
			agent_drv.func_get_name(&name, (CUfunction)h[i]);
		if (name)
			agent_kernel_note((uintptr_t)h[i], im->library, name,
					  owner);
	}
	free(h);
}

/*
 * On unless GPUTRACE_PREFETCH=0, read once at load (getenv on a worker
 * would race with the program's setenv).
 */
void agent_prefetch_init(void)
{
	const char *on = getenv("GPUTRACE_PREFETCH");

	pthread_once(&pcond_once, pcond_init);
	enabled = !on || strcmp(on, "0");
}

void agent_prefetch(const struct agent_kernel *k, CUcontext ctx)
{
	struct ahead a = { .ctx = ctx };
	bool first = true;

	if (!k->owner || !enabled)
		return;
	pthread_mutex_lock(&plock);
	for (int i = 0; i < nseen; i++)
		if (seen[i].owner == k->owner && seen[i].ctx == ctx)
			first = false;
	if (first && nseen < MAX_SEEN) {
		seen[nseen].owner = k->owner;
		seen[nseen].ctx = ctx;
		nseen++;
	} else {
		first = false;	/* done, or too many to remember */
	}
	if (stopped)
		first = false;
	pthread_mutex_unlock(&plock);
	if (!first)
		return;
	enumerate(k->owner);
	agent_kernel_each_pending(k->owner, ctx, enqueue, &a);
	if (a.queued || a.over)
		agent_debug("instrumenting ahead %d more kernels of %s's "
			    "module%s", a.queued, k->pretty,
			    a.over ? ", the others at their first launch" : "");
	pthread_mutex_lock(&plock);
	if (nqueued)
		spawn();
	if (stopped)
		drop_queue(NULL);
	else if (nqueued)
		pthread_cond_broadcast(&pcond);
	pthread_mutex_unlock(&plock);
}

void agent_prefetch_stop(void)
{
	pthread_once(&pcond_once, pcond_init);
	pthread_mutex_lock(&plock);
	stopped = true;
	drop_queue(NULL);
	wait_idle(STOP_WAIT_MS);
	pthread_mutex_unlock(&plock);
}

void agent_prefetch_forget_ctx(CUcontext ctx)
{
	pthread_once(&pcond_once, pcond_init);
	pthread_mutex_lock(&plock);
	drop_queue(ctx);
	/* a worker may be using it: the context is about to go */
	wait_idle(STOP_WAIT_MS);
	for (int i = 0; i < nseen; i++)
		if (seen[i].ctx == ctx)
			seen[i].ctx = NULL;
	pthread_mutex_unlock(&plock);
}

void agent_prefetch_resume(void)
{
	pthread_mutex_lock(&plock);
	stopped = false;
	nseen = 0;
	pthread_mutex_unlock(&plock);
}
/* fork(): no worker here, and the jobs were the parent's kernels. */
void agent_prefetch_forked(void)
{
	pthread_mutex_init(&plock, NULL);
	agent_cond_init_mono(&pcond);
	head = NULL;
	tailp = &head;
	nworkers = 0;
	nbusy = 0;
	nqueued = 0;
	nseen = 0;
	stopped = false;
}

#endif /* GT_AGENT_SO */
