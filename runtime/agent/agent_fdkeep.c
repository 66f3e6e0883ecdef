// SPDX-License-Identifier: MIT
/*
 * The agent's descriptors outlive what the program does to inherited
 * ones.  Python's subprocess (close_fds, its default), launchers and
 * daemons close every descriptor above 2 before or after exec: a child
 * started that way names the segment (GPUTRACE_AGENT_SEG=FD:PID) by a
 * number that is closed or, worse, reused.  So the constructor takes a
 * private description of the segment (not the inherited number, which a
 * child's close would take the region lock with it), checked to be the
 * tracer's by device and inode, at a high number and close-on-exec; when
 * it is gone by the time a region is claimed it is opened again through
 * the tracer's /proc/PID/fd/FD.  The region lock is an open file
 * description lock (F_OFD_SETLK): a close() of another descriptor of the
 * segment does not drop it, and the mapping keeps the description alive.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

static int seg_num = -1;	/* the number the tracer gave */
static pid_t seg_tracer;	/* the tracer's pid, 0: unknown */
static dev_t seg_dev;
static ino_t seg_ino;

/*
 * FD moved to a high number, close-on-exec (FD itself on failure): near
 * the soft limit, but below 1024, where select() still works and the
 * descriptor table (copied at every fork) stays small.
 */
int agent_fd_high(int fd)
{
	struct rlimit rl;
	long lo = 64;
	int n;

	if (fd < 0)
		return fd;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur > 128)
		lo = (rl.rlim_cur < 1024 ? (long)rl.rlim_cur : 1024) - 64;
	n = fcntl(fd, F_DUPFD_CLOEXEC, lo);
	if (n < 0)
		n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (n < 0)
		return fd;
	close(fd);
	return n;
}

static bool same_file(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_dev == seg_dev && st.st_ino == seg_ino;
}

/* A new description of the segment, through PATH; -errno. */
static int reopen(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (seg_ino && !same_file(fd)) {
		close(fd);
		return -ESTALE;
	}
	return agent_fd_high(fd);
}

/*
 * GPUTRACE_AGENT_SEG: "FD" or "FD:TRACERPID".  The tracer's own
 * descriptor gives the identity when it can be read; the inherited one
 * is used only when it is that file.
 */
int agent_seg_open(const char *s)
{
	char *end, path[64];
	long fd = strtol(s, &end, 10), pid = 0;
	struct stat st;
	int r;

	if (*s == '\0' || end == s || fd < 0 || fd > 1 << 20)
		return -EINVAL;
	if (*end == ':') {
		pid = strtol(end + 1, &end, 10);
		if (pid <= 0)
			return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	seg_num = (int)fd;
	seg_tracer = (pid_t)pid;
	snprintf(path, sizeof(path), "/proc/%ld/fd/%ld", pid, fd);
	if (pid && !stat(path, &st)) {
		seg_dev = st.st_dev;
		seg_ino = st.st_ino;
	}
	if (seg_ino && !same_file((int)fd)) {
		/* closed or another file: the tracer's copy */
		r = reopen(path);
	} else {
		snprintf(path, sizeof(path), "/proc/self/fd/%ld", fd);
		r = reopen(path);
	}
	if (r < 0)
		return r;
	if (!seg_ino && !fstat(r, &st)) {
		seg_dev = st.st_dev;
		seg_ino = st.st_ino;
	}
	r = agent_segment_fd(r);
	return r;
}

/*
 * Before a region is claimed: the private descriptor is still the
 * segment, or it is opened again from the tracer's.  False: none.
 */
bool agent_seg_usable(void)
{
	char path[64];
	int fd;

	if (agent.seg_fd >= 0 && (!seg_ino || same_file(agent.seg_fd)))
		return true;
	if (!seg_tracer || seg_num < 0)
		return false;
	/* not closed: the number may be the program's own by now */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)seg_tracer,
		 seg_num);
	fd = reopen(path);
	if (fd < 0)
		return false;
	agent_debug("the segment's descriptor was closed by the program: "
		    "opened again from the tracer's");
	agent.seg_fd = fd;
	return true;
}

/* -p: the descriptor came over the socket; nothing to reopen from. */
void agent_seg_forget(void)
{
	seg_num = -1;
	seg_tracer = 0;
	seg_ino = 0;
}
/*
 * fork(): the inherited descriptor shares the parent's description, and
 * so its region lock.  A child the agent follows (FOLLOW) takes one of
 * its own at the same number; else its copy just goes.
 */
void agent_seg_forked(bool follow)
{
	char path[64];
	int fd = -1, old = agent.seg_fd;

	agent.seg = NULL;	/* the parent's region: MADV_DONTFORK */
	agent.seg_region = -1;
	if (old >= 0 && follow) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", old);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0 && dup3(fd, old, O_CLOEXEC) == old) {
			close(fd);
			return;
		}
		if (fd >= 0)
			close(fd);
	}
	if (old >= 0)
		close(old);
	agent.seg_fd = -1;
	if (!follow)
		agent_seg_forget();
}

#endif /* GT_AGENT_SO */
