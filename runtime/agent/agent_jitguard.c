// SPDX-License-Identifier: MIT
/*
 * No compile of ours may be running when the driver's PTX compiler is
 * torn down at exit.  libcuda loads the compiler
 * (libnvidia-ptxjitcompiler.so.1) at the process's first compile that
 * misses its JIT cache, and the compiler registers exit handlers as it
 * loads; handlers run last registered first.  When that load came after
 * agent_exit was registered (the program's own module from the cache,
 * ours not), the compiler's handlers ran first and freed its state under
 * a compile still running on another thread: the target aborted in
 * free() (a prefetch worker's, on the H200).
 *
 * So before our first compile the compiler is loaded on purpose
 * (agent_jit_pin: about 2 ms on the H200), and an exit handler of ours,
 * guard_exit, registered after its handlers: it stops the prefetch
 * workers and waits for every compile under way, and from then on
 * agent_jit refuses to start one (the original kernel runs).  Where the
 * compiler cannot be loaded ahead, guard_exit is registered after the
 * first compile that finds it loaded, which leaves that compile
 * unguarded.  The compiler is held open, so that libcuda cannot unload
 * it and register its handlers again later.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

#define JIT_LIB "libnvidia-ptxjitcompiler.so.1"
#define EXIT_WAIT_S 60		/* past it, the compiler goes under one */

static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gcond;	/* a compile ended; CLOCK_MONOTONIC */
static pthread_once_t ponce = PTHREAD_ONCE_INIT;
static int inflight;
static bool exiting, guarded;

static void guard_exit(void)
{
	struct timespec until;

	if (agent.pid != getpid())
		return;		/* a forked child: none of ours here */
	agent_prefetch_stop();
	until = agent_deadline(EXIT_WAIT_S * 1000L);
	pthread_mutex_lock(&glock);
	exiting = true;
	while (inflight &&
	       pthread_cond_timedwait(&gcond, &glock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&glock);
}

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *slash = strrchr(info->dlpi_name, '/');

	(void)size;
	if (!strcmp(slash ? slash + 1 : info->dlpi_name, JIT_LIB)) {
		snprintf(arg, 4096, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* Under glock: hold the compiler, loaded now, and register guard_exit. */
static void guard(void *h)
{
	if (!guarded && h && atexit(guard_exit) == 0) {
		guarded = true;
		agent_debug("exit waits for compiles: %s is loaded", JIT_LIB);
	}
}

int agent_jit_enter(void)
{
	int r = 0;

	agent_jit_pin();
	pthread_mutex_lock(&glock);
	if (exiting)
		r = -ESHUTDOWN;
	else
		inflight++;
	pthread_mutex_unlock(&glock);
	return r;
}

void agent_jit_leave(void)
{
	char path[4096];
	bool check;

	pthread_mutex_lock(&glock);
	inflight--;
	pthread_cond_broadcast(&gcond);
	check = !guarded;
	pthread_mutex_unlock(&glock);
	/* a walk of the loaded objects (no file search) until it is there */
	if (!check || !dl_iterate_phdr(find_lib, path))
		return;
	pthread_mutex_lock(&glock);
	guard(dlopen(path, RTLD_NOW | RTLD_NOLOAD));
	pthread_mutex_unlock(&glock);
}

/*
 * Load the compiler libcuda would (the one beside it: a
 * forward-compatibility libcuda has its own; else by name), and guard
 * the exit.
 */
static void pin(void)
{
	void *h = dlopen(JIT_LIB, RTLD_NOW | RTLD_NOLOAD);
	Dl_info di;

	agent_cond_init_mono(&gcond);	/* pin runs before any compile */
	if (!h && agent_drv.ctx_push &&
	    dladdr(*(void **)&agent_drv.ctx_push, &di) && di.dli_fname) {
		const char *slash = strrchr(di.dli_fname, '/');
		char path[4096];

		if (slash && snprintf(path, sizeof(path), "%.*s/%s",
				      (int)(slash - di.dli_fname),
				      di.dli_fname, JIT_LIB) <
		    (int)sizeof(path))
			h = dlopen(path, RTLD_NOW);
	}
	if (!h)
		h = dlopen(JIT_LIB, RTLD_NOW);
	pthread_mutex_lock(&glock);
	guard(h);
	pthread_mutex_unlock(&glock);
	if (!h)
		agent_debug("cannot load %s ahead of a compile", JIT_LIB);
}

/* Once per process.  0, or -ENOENT when the exit is not guarded yet. */
int agent_jit_pin(void)
{
	bool ok;

	pthread_once(&ponce, pin);
	pthread_mutex_lock(&glock);
	ok = guarded;
	pthread_mutex_unlock(&glock);
	return ok ? 0 : -ENOENT;
}
/* fork(): the parent's compiles are not running here. */
void agent_jitguard_forked(void)
{
	pthread_mutex_init(&glock, NULL);
	agent_cond_init_mono(&gcond);
	inflight = 0;
	exiting = false;
}

#endif /* GT_AGENT_SO */
