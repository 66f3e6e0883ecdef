// SPDX-License-Identifier: MIT
/*
 * The agent's life cycle: the constructor reads the configuration,
 * connects to the tracer and maps the shared segment; the exit handler
 * takes the final snapshot and says goodbye.  Also the report channel
 * (tracer socket, or stderr when standalone).  Nothing here may crash
 * the target: every failure is logged once and the agent passes through.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

#define BYE_ACK_MS 2000	/* the tracer copies a region in microseconds */

struct agent_state agent __attribute__((aligned(64))) = {
	.sock = -1, .seg_fd = -1, .seg_region = -1,
};

static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *once_seen;	/* hashes of the lines reported once */
static size_t once_n, once_cap;
static int exit_registered, exit_done, bye_sent;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Before the socket exists (or when it broke): stderr, prefixed. */
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gputrace-agent[%d]: %s\n", (int)getpid(), buf);
}

int agent_send(uint32_t type, uint64_t seq, const void *payload, size_t len)
{
	struct agent_msg h = { .type = type, .len = (uint32_t)len, .seq = seq };
	struct iovec iov[2] = {
		{ &h, sizeof(h) }, { (void *)payload, len },
	};
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	int ret = 0;

	pthread_mutex_lock(&send_lock);
	if (agent.sock < 0) {
		ret = -ENOTCONN;
	} else if (sendmsg(agent.sock, &m, MSG_NOSIGNAL) < 0) {
		ret = -errno;
		/* the tracer is gone: restore the original launches */
		if (ret == -EPIPE || ret == -ECONNRESET || ret == -ENOTCONN) {
			close(agent.sock);
			agent.sock = -1;
			agent.detached = 1;
		}
	}
	pthread_mutex_unlock(&send_lock);
	return ret;
}

void agent_sock_close(void)
{
	pthread_mutex_lock(&send_lock);
	if (agent.sock >= 0)
		close(agent.sock);
	agent.sock = -1;
	pthread_mutex_unlock(&send_lock);
}

static void vreport(const char *fmt, va_list ap)
{
	char buf[1024];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	/* once the tracer is gone, reports have nowhere to go */
	if (agent.standalone)
		fprintf(stderr, "gputrace-agent: %s\n", buf);
	else
		agent_send(AGENT_MSG_REPORT, 0, buf, (size_t)n);
}

void agent_report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

void agent_debug(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!agent.cfg.verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* "info" lines: the tracer shows them with -v only */
	agent_report("info: %s", buf);
}

void agent_report_once(const char *fmt, ...)
{
	char buf[1024];
	uint64_t h = 0xcbf29ce484222325ull;
	va_list ap;
	bool seen = false;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (const char *p = buf; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	pthread_mutex_lock(&once_lock);
	for (size_t i = 0; i < once_n && !seen; i++)
		seen = once_seen[i] == h;
	if (!seen && once_n == once_cap) {
		size_t cap = once_cap ? once_cap * 2 : 64;
		uint64_t *v = realloc(once_seen, cap * sizeof(*v));

		if (v) {
			once_seen = v;
			once_cap = cap;
		}
	}
	if (!seen && once_n < once_cap)
		once_seen[once_n++] = h;
	pthread_mutex_unlock(&once_lock);
	if (!seen)
		agent_report("%s", buf);
}

bool agent_seg_claim(void)
{
	if (agent.seg)
		return true;
	if (!agent_seg_usable())
		return false;
	/* one process per region: a lock of our own description (the
	 * program closing another descriptor of the segment keeps it) */
	for (int r = 0; r < agent.seg_regions; r++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_start = r, .l_len = 1 };
		void *p;

		if (fcntl(agent.seg_fd, F_OFD_SETLK, &fl) < 0)
			continue;
		/* only our region is mapped (the segment is 8 GiB sparse) */
		p = mmap(NULL, AGENT_SEG_BYTES, PROT_READ | PROT_WRITE,
			 MAP_SHARED, agent.seg_fd, (off_t)r * AGENT_SEG_BYTES);
		if (p == MAP_FAILED) {
			agent_report_once("cannot map the map segment: %s; "
					  "device maps are not collected",
					  strerror(errno));
			fl.l_type = F_UNLCK;	/* the region stays free */
			fcntl(agent.seg_fd, F_OFD_SETLK, &fl);
			return false;
		}
		/* a forked child's copy would keep the description, and so
		 * the region's lock, after we are gone */
		madvise(p, AGENT_SEG_BYTES, MADV_DONTFORK);
		agent.seg_region = r;
		agent.seg = p;
		agent.seg_len = AGENT_SEG_BYTES;
		return true;
	}
	agent_report_once("pid %d: every region of the map segment belongs to "
			  "another process of this session; its device maps "
			  "are not collected", (int)getpid());
	return false;
}

int agent_send_done(uint32_t type, uint64_t seq)
{
	uint32_t r = (uint32_t)agent.seg_region;

	return agent.seg_region < 0 ? agent_send(type, seq, NULL, 0) :
	       agent_send(type, seq, &r, sizeof(r));
}

void agent_detach(const char *why)
{
	if (agent.detached)
		return;
	/* while the launch hooks still run: the application's thread
	 * turns PC sampling off */
	agent_sample_stop_async();
	agent.detached = 1;
	agent_prefetch_stop();
	agent_inline_disarm();
	agent_complete_stop();
	agent_sample_stop();
	agent_debug("detached (%s): original launches from now on", why);
}

/*
 * After a BYE naming our region: the tracer copies it when it reads the
 * BYE, and the region is free for another process once we are gone (our
 * lock goes with us), so we wait (bounded) for its ACK; else a process
 * forked next could overwrite it first.  The agent's thread is stopped.
 */
static void wait_bye_ack(uint64_t seq)
{
	struct timespec dl = agent_deadline(BYE_ACK_MS), now;
	struct agent_msg m;

	while (agent.sock >= 0) {
		struct pollfd p = { .fd = agent.sock, .events = POLLIN };
		long ms;
		int n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (dl.tv_sec - now.tv_sec) * 1000 +
		     (dl.tv_nsec - now.tv_nsec) / 1000000;
		if (ms <= 0)
			break;
		n = poll(&p, 1, (int)ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (recv(agent.sock, &m, sizeof(m), MSG_DONTWAIT) <
		    (ssize_t)sizeof(m))
			break;		/* the tracer is gone */
		if (m.type == AGENT_MSG_BYE_ACK && m.seq == seq)
			return;
	}
	agent_debug("the tracer did not confirm our last snapshot");
}

static void send_bye(void)
{
	if (bye_sent)
		return;
	bye_sent = 1;
	if (agent_send_done(AGENT_MSG_BYE, agent.snap_seq) == 0 &&
	    agent.seg_region >= 0)
		wait_bye_ack(agent.snap_seq);
}

/*
 * atexit, registered at the first launch: the CUDA runtime registers its
 * teardown when it initialises, which is before any launch reaches the
 * driver, and handlers run in reverse order, so this one runs first,
 * while the contexts still exist.
 */
static void agent_exit(void)
{
	if (exit_done || agent.pid != getpid())
		return;
	exit_done = 1;
	agent_calls_report();
	agent_prefetch_stop();	/* no JIT while the contexts go */
	agent_serve_stop();
	if (agent.active) {
		uint64_t seq = agent.snap_seq + 1;

		agent_capture_relax();	/* the process is ending */
		/* the program may exit with kernels still running */
		agent_ctx_sync_all();
		agent_complete_flush(true);
		agent_sample_stop();
		agent_host_drain();	/* host clauses' last events */
		if (agent_ctx_snapshot(seq, true) == 0)
			agent.snap_seq = seq;
		agent_ctx_drain();
		agent_ctx_report_reads();
		if (agent.standalone)
			agent_ctx_print_maps();
	}
	send_bye();
}

void agent_saw_cuda_once(void)
{
	pthread_mutex_lock(&once_lock);
	/*
	 * CUPTI before agent_exit: a library registers its exit handlers as
	 * it loads, and handlers run last registered first, so CUPTI's run
	 * after agent_exit's final flush (agent_prefetch.c tells how the
	 * PTX compiler's ran first).
	 */
	if (!agent.cuda_told && agent.active) {
		agent_complete_start();
		agent_sample_load();
	}
	if (!exit_registered && agent.active) {
		atexit(agent_exit);
		exit_registered = 1;
	}
	if (!agent.cuda_told && agent.active) {
		__atomic_store_n(&agent.cuda_told, 1, __ATOMIC_RELEASE);
		/* from now on a missing BYE may lose device maps */
		agent_send(AGENT_MSG_CUDA, 0, NULL, 0);
	}
	pthread_mutex_unlock(&once_lock);
}

static void (*real_exit)(int);	/* the next _exit, found at load */

/*
 * _exit skips atexit: Python's multiprocessing children (os._exit) and
 * servers' workers leave that way, so a process that used CUDA takes
 * its final snapshot here.  Not in a vfork() child (another pid), nor
 * from inside our own hooks (a signal handler: our locks may be held),
 * nor in a process without CUDA: then nothing but the exit.
 */
__attribute__((visibility("default"), noreturn)) void gt_exit_(int)
	__asm__("_exit");
void gt_exit_(int status)
{
	if (agent.active && !agent_in_hook &&
	    __atomic_load_n(&agent.cuda_told, __ATOMIC_ACQUIRE) &&
	    agent.pid == getpid())
		agent_exit();
	if (real_exit)
		real_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

/* PATH, or with a leading '@' an abstract name (-p: no file the target
 * would need permission to). */
int agent_connect_tracer(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	int fd;

	if (n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = 0;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				(path[0] == '@' ? n : n + 1))) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int agent_segment_fd(int fd)
{
	struct stat st;
	uint64_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	/* whole regions only, mapped once claimed */
	if ((uint64_t)st.st_size < AGENT_SEG_BYTES)
		return -EINVAL;
	n = (uint64_t)st.st_size / AGENT_SEG_BYTES;
	agent.seg_regions = n > AGENT_SEG_REGIONS ? AGENT_SEG_REGIONS : (int)n;
	agent.seg_fd = fd;
	return 0;
}

/*
 * In a fork() child (agent_fork.c): the parent's connection, reports and
 * exit duties are not ours; a session of our own may start at the
 * first driver call (agent_main_woke).
 */
void agent_main_forked(void)
{
	pthread_mutex_init(&send_lock, NULL);
	pthread_mutex_init(&once_lock, NULL);
	/* our copy of the parent's socket: the parent keeps its own */
	if (agent.sock >= 0)
		close(agent.sock);
	agent.sock = -1;
	once_n = 0;
	agent.cuda_told = 0;
	exit_done = 1;
	bye_sent = 1;
}

void agent_main_woke(void)
{
	exit_done = 0;
	bye_sent = 0;
}

/*
 * Tracing from here (the constructor, a fork() child at its first
 * driver call, gputrace_attach): host maps, HELLO with our pid, the
 * serving thread.
 */
void agent_begin(const char *how)
{
	uint32_t pid = (uint32_t)agent.pid;

	agent_host_init();
	agent.active = true;
	agent_send(AGENT_MSG_HELLO, 0, &pid, sizeof(pid));
	if (agent.sock >= 0)
		agent_serve_start();
	agent_debug("agent %s pid %d (%d clauses, %d maps)", how,
		    (int)agent.pid, agent.cfg.nclauses, agent.cfg.nmaps);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_handler(void)
{
	pthread_atfork(NULL, NULL, agent_fork_child);
}

void agent_fork_handler_once(void)
{
	pthread_once(&fork_once, fork_handler);
}

/*
 * A new attach after a detach (-p): the previous session's socket,
 * segment and reports are gone; the exit handler stays registered.
 */
void agent_session_reset(void)
{
	agent_sock_close();
	if (agent.seg)
		munmap(agent.seg, agent.seg_len);
	if (agent.seg_fd >= 0)
		close(agent.seg_fd);	/* and its region's lock */
	agent.seg = NULL;
	agent.seg_fd = -1;
	agent.seg_region = -1;
	agent.snap_seq = 0;
	agent_prefetch_resume();
	pthread_mutex_lock(&once_lock);
	once_n = 0;
	__atomic_store_n(&agent.cuda_told, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&once_lock);
	exit_done = 0;
	bye_sent = 0;
	/* the old configuration stays allocated: a launch that raced the
	 * detach may still read it */
	memset(&agent.cfg, 0, sizeof(agent.cfg));
}

__attribute__((constructor)) static void agent_init(void)
{
	const char *cfg = getenv(AGENT_ENV_CONFIG);
	const char *sock = getenv(AGENT_ENV_SOCK);
	const char *seg = getenv(AGENT_ENV_SEG);
	int r;

	agent.pid = getpid();
	agent_prefetch_init();
	agent_nvrtc_init();
	if (!cfg || !*cfg)
		return;		/* not started by gputrace: pass through */
	real_exit = (void (*)(int))agent_real_dlsym(RTLD_NEXT, "_exit");
	r = agent_config_read(cfg, &agent.cfg);
	if (r < 0) {
		say("cannot read the configuration %s: %s; not tracing", cfg,
		    strerror(-r));
		return;
	}
	agent_prof_init();
	if (sock && *sock) {
		r = agent_connect_tracer(sock);
		if (r < 0) {
			say("cannot connect to the tracer at %s: %s; not "
			    "tracing", sock, strerror(-r));
			return;
		}
		/* out of the way of a program that closes or reuses low
		 * descriptors */
		agent.sock = agent_fd_high(r);
		agent_fork_note_sock(sock);
	} else {
		agent.standalone = true;
	}
	if (seg && *seg && (r = agent_seg_open(seg)) < 0)
		agent_report("cannot map the segment (fd %s): %s; device maps "
			     "will not be collected", seg, strerror(-r));
	agent_fork_handler_once();
	agent_begin("loaded in");
}

__attribute__((destructor)) static void agent_fini(void)
{
	if (agent.pid != getpid())
		return;
	/* no CUDA call was ever hooked: nothing to collect, just leave */
	if (agent.active && !exit_done) {
		exit_done = 1;
		agent_inline_disarm();
		agent_serve_stop();
		send_bye();
	}
}
#endif /* GT_AGENT_SO */
