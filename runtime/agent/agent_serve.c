// SPDX-License-Identifier: MIT
/*
 * The agent's thread: answers the tracer (snapshot, detach), drains the
 * printf rings every 20 ms, and notices the tracer going away.  It blocks
 * every signal so the program's signal handling is untouched.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

#define DRAIN_MS 20
#define COMPLETE_MS 100	/* cuda:complete records and gpu:sample's
			 * samples reach the tracer */

static pthread_mutex_t serve_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ack_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ack_cond = PTHREAD_COND_INITIALIZER;
static uint64_t ack_seq, tell_seq;
static pthread_t thread;
static int started, stopping;
static int wake_fd = -1;	/* agent_serve_stop ends the thread's poll */

static void on_message(void)
{
	union {
		struct agent_msg m;
		uint8_t b[4096];
	} u;
	ssize_t n = recv(agent.sock, &u, sizeof(u), MSG_DONTWAIT);
	int err;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < (ssize_t)sizeof(u.m)) {
		/* closed or broken: the tracer is gone */
		agent_detach("the tracer closed the connection");
		agent_ctx_stop_all();
		agent_sock_close();
		return;
	}
	switch (u.m.type) {
	case AGENT_MSG_SNAPSHOT_LAST:
		agent_detach("the session ends");
		agent_ctx_settle();
		/* fall through */
	case AGENT_MSG_SNAPSHOT:
		/* kernels completed so far reach cuda:complete before the
		 * maps are printed (the last ones before a -p detach) */
		agent_complete_flush(false);
		agent_sample_flush();
		/* and host clauses' events before it (an exit() the tracer
		 * saw in the kernel's ring comes after them) */
		agent_host_drain();
		err = agent_ctx_snapshot(u.m.seq, false);
		if (!err)
			agent.snap_seq = u.m.seq;
		/* nothing written: no region, so the tracer does not wait
		 * for this snapshot in the segment */
		if (err == -EBUSY || err == -ENOSPC)
			agent_send(AGENT_MSG_SNAPSHOT_DONE, u.m.seq, NULL, 0);
		else
			agent_send_done(AGENT_MSG_SNAPSHOT_DONE, u.m.seq);
		break;
	case AGENT_MSG_KHANDLE_ACK:
		pthread_mutex_lock(&ack_lock);
		if (u.m.seq > ack_seq)
			ack_seq = u.m.seq;
		pthread_cond_broadcast(&ack_cond);
		pthread_mutex_unlock(&ack_lock);
		break;
	case AGENT_MSG_DETACH:
		agent_detach("the tracer detached");
		agent_ctx_stop_all();
		break;
	default:
		agent_debug("unknown message %u from the tracer", u.m.type);
	}
}

static void *serve(void *arg)
{
	uint64_t last = agent_now_ms(), lastc = last;

	while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
		struct pollfd p[2] = {
			{ .fd = agent.sock, .events = POLLIN },
			{ .fd = wake_fd, .events = POLLIN },
		};
		uint64_t t;

		/* an attached session ended (-p): the thread goes, a new
		 * attach starts another */
		if (agent.attached && agent.detached && agent.sock < 0) {
			pthread_mutex_lock(&serve_lock);
			if (!stopping) {
				pthread_detach(pthread_self());
				__atomic_store_n(&started, 0, __ATOMIC_RELEASE);
				pthread_mutex_unlock(&serve_lock);
				return NULL;
			}
			pthread_mutex_unlock(&serve_lock);
		}

		/* negative fds are skipped */
		if (poll(p, 2, DRAIN_MS) > 0 && p[0].revents)
			on_message();
		t = agent_now_ms();
		if (t - last >= DRAIN_MS) {
			agent_ctx_drain();
			agent_host_drain();
			last = t;
		}
		if (t - lastc >= COMPLETE_MS) {
			agent_complete_flush(false);
			agent_sample_flush();
			lastc = t;
		}
	}
	return NULL;
}

/*
 * -p: a handle first launched since the attach.  cuda:launch's programs
 * read its name from a map the hidden probes fill at cuModuleGetFunction
 * time, which came before the attach: the tracer fills it now, and this
 * launch waits for that (once per handle; at most 200 ms) so that it is
 * counted with its name.
 */
void agent_tell_handle(struct agent_kernel *k)
{
	uint8_t buf[8 + 4096];
	size_t n = strlen(k->mangled);
	struct timespec dl;
	uint64_t seq = 0;
	int zero = 0;
	bool mine = __atomic_compare_exchange_n(&k->told, &zero, 1, false,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE);

	if (mine) {
		if (n > sizeof(buf) - 8)
			n = sizeof(buf) - 8;
		memcpy(buf, &k->handle, 8);
		memcpy(buf + 8, k->mangled, n);
		seq = __atomic_add_fetch(&tell_seq, 1, __ATOMIC_RELAXED);
		if (agent_send(AGENT_MSG_KHANDLE, seq, buf, 8 + n)) {
			__atomic_store_n(&k->told, 2, __ATOMIC_RELEASE);
			return;
		}
	}
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += 200 * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	/* other threads launching it wait for the same ACK */
	pthread_mutex_lock(&ack_lock);
	while (!agent.detached &&
	       (mine ? ack_seq < seq :
		__atomic_load_n(&k->told, __ATOMIC_ACQUIRE) != 2) &&
	       pthread_cond_timedwait(&ack_cond, &ack_lock, &dl) == 0)
		;
	if (mine) {
		__atomic_store_n(&k->told, 2, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&ack_cond);
	}
	pthread_mutex_unlock(&ack_lock);
}

void agent_serve_start(void)
{
	sigset_t all, old;

	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&serve_lock);
	if (!started && !stopping) {
		if (wake_fd < 0)
			wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (pthread_create(&thread, NULL, serve, NULL) == 0) {
			/* its name in ps, gdb and fake CUPTI's checks */
			pthread_setname_np(thread, "gputrace-agent");
			__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
		} else
			agent_report("cannot start the agent's thread: no "
				     "snapshots or printf");
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_mutex_unlock(&serve_lock);
}

/*
 * The thread ends and is joined (unless we are it).  stopping is set
 * under serve_lock: from then on the thread no longer detaches itself.
 */
static void end_thread(void)
{
	pthread_mutex_lock(&serve_lock);
	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	/* not a poll's worth (DRAIN_MS) of waiting */
	if (wake_fd >= 0 && write(wake_fd, &(uint64_t){ 1 }, 8) < 0)
		agent_debug("waking the agent's thread: %s", strerror(errno));
	pthread_mutex_unlock(&serve_lock);
	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE) &&
	    !pthread_equal(thread, pthread_self())) {
		pthread_join(thread, NULL);
		started = 0;
	}
}

void agent_serve_stop(void)
{
	end_thread();
	/* answer what the tracer asked before the program ended */
	for (;;) {
		struct pollfd p = { .fd = agent.sock, .events = POLLIN };

		if (agent.sock < 0 || poll(&p, 1, 0) <= 0)
			break;
		on_message();
	}
}

/*
 * A new attach (-p): the previous session's thread, if it has not yet
 * seen its tracer go (a busy or starved thread), ends before that
 * session's socket is closed under it; else it could take the new
 * session for the old one's end, or still be leaving when agent_begin
 * looks for a thread, and the new session would have none.  Then a new
 * thread may start (agent_begin).
 */
void agent_serve_join(void)
{
	uint64_t v;

	if (!__atomic_load_n(&started, __ATOMIC_ACQUIRE) ||
	    pthread_equal(thread, pthread_self()))
		return;
	end_thread();
	if (read(wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		agent_debug("the agent's wake-up: %s", strerror(errno));
	__atomic_store_n(&stopping, 0, __ATOMIC_RELEASE);
}

/* fork(): no thread here; the eventfd is the parent's. */
void agent_serve_forked(void)
{
	pthread_mutex_init(&serve_lock, NULL);
	pthread_mutex_init(&ack_lock, NULL);
	pthread_cond_init(&ack_cond, NULL);
	started = 0;
	stopping = 0;
	if (wake_fd >= 0)
		close(wake_fd);
	wake_fd = -1;
	ack_seq = 0;
	tell_seq = 0;
}

#endif /* GT_AGENT_SO */
