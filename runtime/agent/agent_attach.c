// SPDX-License-Identifier: MIT
/*
 * The agent injected into a running process (-p, docs/attach.md).  The
 * injector (runtime/inject.c) dlopens us, so the constructor finds no
 * environment and passes through; then it calls gputrace_attach() on a
 * thread it borrowed, with the other threads running: connect to the
 * tracer's abstract socket, receive the configuration and the segment as
 * file descriptors (SCM_RIGHTS: no file the target would need permission
 * to open), prepare the inline hooks, start the thread.  Then, with every
 * thread stopped, gputrace_arm() writes the jumps.  A later attach after
 * a detach calls both again: the agent stays loaded and is re-armed.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

#define EXPORT __attribute__((visibility("default")))

/* The ATTACH message: its two descriptors, config then segment. */
static int recv_fds(int sock, int fds[2])
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct agent_msg m;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

	if (n < 0)
		return -errno;
	c = CMSG_FIRSTHDR(&mh);
	if (n < (ssize_t)sizeof(m) || m.type != AGENT_MSG_ATTACH || !c ||
	    c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
		return -EPROTO;
	memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
	return 0;
}

static char attach_err[256];

/* Why the last gputrace_attach failed (the injector reads it). */
EXPORT const char *gputrace_attach_why(void)
{
	return attach_err;
}

/* Called by the injector in the target: 0, or -errno. */
EXPORT int gputrace_attach(const char *sock)
{
	struct timeval tv = { .tv_sec = 10 };
	char path[64];
	int fd, fds[2] = { -1, -1 }, r;

	attach_err[0] = 0;
	agent.pid = getpid();
	if (agent.active && !agent.detached) {
		snprintf(attach_err, sizeof(attach_err), "another gputrace "
			 "is tracing this process");
		return -EBUSY;
	}
	fd = agent_connect_tracer(sock);
	if (fd < 0) {
		snprintf(attach_err, sizeof(attach_err), "cannot connect to "
			 "the tracer: %s", strerror(-fd));
		return fd;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = recv_fds(fd, fds);
	if (r < 0) {
		snprintf(attach_err, sizeof(attach_err), "no configuration "
			 "from the tracer: %s", strerror(-r));
		close(fd);
		return r;
	}
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (agent.attached || agent.active) {
		/* re-armed: the previous session's state goes */
		agent_serve_join();
		agent_session_reset();
		agent_memscan_reset();
		agent_kernel_reset();
		agent_ctx_reset();
		agent_host_reset();
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	r = agent_config_read(path, &agent.cfg);
	close(fds[0]);
	if (r < 0) {
		snprintf(attach_err, sizeof(attach_err), "cannot read the "
			 "configuration: %s", strerror(-r));
		close(fds[1]);
		close(fd);
		return r;
	}
	agent.sock = fd;
	agent.standalone = false;
	agent_seg_forget();
	if ((r = agent_segment_fd(fds[1])) < 0) {
		agent_report("cannot map the segment: %s; device maps will "
			     "not be collected", strerror(-r));
		close(fds[1]);
	}
	r = agent_inline_prepare(attach_err, sizeof(attach_err));
	if (r < 0) {
		agent_sock_close();
		return r;
	}
	agent_fork_handler_once();
	__atomic_add_fetch(&agent.session, 1, __ATOMIC_RELEASE);
	agent.attached = true;
	agent_sample_attach();
	agent.detached = 0;
	/* not "attached": the injector says so once the hooks are armed */
	agent_begin("injected into");	/* agent.sock is ours: served */
	return 0;
}

/*
 * Every other thread is stopped: no lock, no allocation, no driver.  The
 * table of hooks (armed ones flagged), for the injector to move threads
 * stopped inside displaced bytes; NULL when not attached.
 */
EXPORT struct agent_patches *gputrace_arm(void)
{
	if (!agent.attached || agent.detached)
		return NULL;
	agent_inline_arm();
	return &agent_patches;
}
#endif /* GT_AGENT_SO */
