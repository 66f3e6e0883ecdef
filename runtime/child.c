// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wordexp.h>

#include "runtime/child.h"

/* Not a directory (access() says X_OK for those); errno 0 when not. */
static bool runnable(const char *path)
{
	struct stat st;

	errno = 0;
	return !stat(path, &st) && !S_ISDIR(st.st_mode);
}

/*
 * What execvp would find for NAME: 0, or print why not and return the
 * negative errno, so that -c fails before anything is attached (BEGIN
 * included), naming the command, as bpftrace does.
 */
static int check_exec(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];
	int e = ENOENT;

	if (strchr(name, '/')) {
		if (!access(name, X_OK) && runnable(name))
			return 0;
		e = errno ? errno : EISDIR;
		fprintf(stderr, "gputrace: -c: cannot run '%s': %s\n", name,
			strerror(e));
		return -e;
	}
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? p : ".", name);
		if (!access(buf, X_OK) && runnable(buf))
			return 0;
		p += n + (p[n] == ':');
	}
	fprintf(stderr, "gputrace: -c: cannot find '%s' (not a path or a program in $PATH)\n",
		name);
	return -e;
}

int child_spawn(const char *cmd, const char *const *env_add, struct child *c)
{
	int go[2], err[2];
	wordexp_t we;
	int rc;

	c->pid = 0;
	c->release_fd = c->err_fd = -1;
	rc = wordexp(cmd, &we, WRDE_NOCMD | WRDE_SHOWERR);
	if (rc || we.we_wordc == 0) {
		if (!rc)
			wordfree(&we);
		fprintf(stderr, "gputrace: -c: cannot parse the command '%s'\n", cmd);
		return -EINVAL;
	}
	if ((rc = check_exec(we.we_wordv[0]))) {
		wordfree(&we);
		return rc;
	}
	/* go: the child waits for EOF on it; err: an exec failure comes back */
	if (pipe2(go, O_CLOEXEC)) {
		wordfree(&we);
		return -errno;
	}
	if (pipe2(err, O_CLOEXEC)) {
		rc = -errno;
		close(go[0]);
		close(go[1]);
		wordfree(&we);
		return rc;
	}
	c->pid = fork();
	if (c->pid == 0) {
		char b;
		int e;

		close(go[1]);
		close(err[0]);
		while (read(go[0], &b, 1) < 0 && errno == EINTR)
			;
		for (const char *const *p = env_add; p && *p; p++)
			putenv((char *)*p);
		execvp(we.we_wordv[0], we.we_wordv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	rc = c->pid < 0 ? -errno : 0;
	wordfree(&we);
	close(go[0]);
	close(err[1]);
	c->release_fd = go[1];
	c->err_fd = err[0];
	if (rc) {
		child_kill(c);
		return rc;
	}
	return 0;
}

int child_release(struct child *c)
{
	int e = 0;
	ssize_t n;

	if (c->release_fd >= 0) {
		close(c->release_fd);
		c->release_fd = -1;
	}
	if (c->err_fd >= 0) {
		/* EOF once exec succeeded (close-on-exec), else its errno */
		do
			n = read(c->err_fd, &e, sizeof(e));
		while (n < 0 && errno == EINTR);
		close(c->err_fd);
		c->err_fd = -1;
		if (n == sizeof(e))
			return -e;
	}
	return 0;
}

void child_kill(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		c->pid = 0;
	}
	if (c->release_fd >= 0)
		close(c->release_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->release_fd = c->err_fd = -1;
}
