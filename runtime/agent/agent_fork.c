// SPDX-License-Identifier: MIT
/*
 * A child made by fork() without exec (docs/agent.md, "Several processes
 * of one command"): Python's multiprocessing with the 'fork' start
 * method, a server forking workers.  The agent's memory came along, but
 * none of its threads, its locks may be held by threads that are not
 * here, and its contexts, modules and CUPTI session are the parent's
 * (CUDA cannot be used in a child of a process that initialised it: a
 * child that uses CUDA initialised it itself).
 *
 * So right after fork the child drops all of that (agent_*_forked: no
 * allocation, no driver or CUPTI call) and stays quiet: a child that
 * never calls the driver costs a reopened segment descriptor.  Its first
 * driver call (a hook: agent_tracing(), a dlsym or cuGetProcAddress of a
 * cu* name) starts a session of its own, as an exec'd child's
 * constructor does: its connection to the tracer and HELLO with its pid,
 * a region of the segment when it has maps, its thread, its host
 * clauses' maps.  The parent's state is untouched (nothing here runs in
 * it).  Not with -p: the tracer accepts the target alone there.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

volatile int agent_fork_pending;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

void agent_fork_note_sock(const char *path)
{
	snprintf(sock_path, sizeof(sock_path), "%s", path);
}

void agent_fork_child(void)
{
	/* the parent's session, or a child's still to start (a child that
	 * forks before its first driver call) */
	bool follow = (agent.active || agent_fork_pending) &&
		      !agent.attached && !agent.detached;

	agent.active = false;
	agent_fork_pending = 0;
	pthread_mutex_init(&wake_lock, NULL);
	agent_main_forked();
	agent_seg_forked(follow);
	agent_serve_forked();
	agent_prefetch_forked();
	agent_kernel_forked();
	agent_ctx_forked();
	agent_image_forked();
	agent_alloc_forked();
	agent_launch_forked();
	agent_host_forked();
	agent_jit_forked();
	agent_jitguard_forked();
	agent_ptxcache_forked();
	agent_ptxmemo_forked();
	agent_complete_forked();
	agent_sample_forked();
	agent_timeline_forked();
	agent.snap_seq = 0;
	if (follow)
		agent_fork_pending = 1;
}

void agent_fork_wake(void)
{
	int r;

	pthread_mutex_lock(&wake_lock);
	if (!agent_fork_pending) {
		pthread_mutex_unlock(&wake_lock);	/* another thread did */
		return;
	}
	agent.pid = getpid();
	if (sock_path[0]) {
		r = agent_connect_tracer(sock_path);
		if (r < 0) {
			fprintf(stderr, "gputrace-agent[%d]: cannot connect to "
				"the tracer at %s: %s; not tracing\n",
				(int)agent.pid, sock_path, strerror(-r));
			agent_fork_pending = 0;
			pthread_mutex_unlock(&wake_lock);
			return;
		}
		agent.sock = agent_fd_high(r);
	}
	agent_kernel_reset();
	agent_host_reset();
	agent_main_woke();
	agent_begin("follows forked");
	__atomic_store_n(&agent_fork_pending, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&wake_lock);
}
#endif /* GT_AGENT_SO */
