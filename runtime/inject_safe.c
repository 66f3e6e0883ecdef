// SPDX-License-Identifier: MIT
/*
 * Where the injector may borrow a thread (docs/attach.md, "A safe
 * point").  dlopen and gputrace_attach take malloc's, the loader's and
 * the agent's locks, and the agent's start asks the driver for its entry
 * points.  A thread stopped inside libc, the loader, the unwinder, the
 * driver, CUPTI or the agent (its wrappers, its trampolines in anonymous
 * memory) may hold one of those locks, and a call made in it would wait
 * for itself for ever: the target hangs.  A thread stopped in a blocking
 * system call that only waits holds none of those it is waiting in, and
 * a thread in any other code (the program, libtorch, Python) holds none
 * of them at all.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "runtime/inject_safe.h"

/* Basenames whose code may hold a lock our calls take. */
static const char *const held[] = {
	"libc.so", "libc-", "ld-linux", "ld-2.", "libpthread",
	"libgcc_s", "libgputrace-agent", "libcuda.so", "libcupti",
};

/* System calls that only wait: a thread in one holds none of our locks. */
static const long waits[] = {
	SYS_read, SYS_poll, SYS_select, SYS_sched_yield, SYS_nanosleep,
	SYS_pause, SYS_wait4, SYS_rt_sigtimedwait, SYS_rt_sigsuspend,
	SYS_futex, SYS_epoll_wait, SYS_epoll_pwait, SYS_pselect6, SYS_ppoll,
	SYS_clock_nanosleep, SYS_recvfrom, SYS_recvmsg, SYS_accept,
	SYS_accept4,
};

static bool holds_locks(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		if (!strncmp(base, held[i], strlen(held[i])))
			return true;
	return false;
}

/* The executable mappings of PID, each marked. */
static int load_maps(struct inject_maps *m, pid_t pid)
{
	char path[64], line[4096 + 128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	m->n = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perm[8], *p = strchr(line, '/'), *nl;
		struct inject_range *r;

		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perm) != 3 ||
		    perm[2] != 'x')
			continue;
		if (m->n == m->cap) {
			size_t cap = m->cap ? m->cap * 2 : 256;
			void *v = realloc(m->v, cap * sizeof(*m->v));

			if (!v)
				break;
			m->v = v;
			m->cap = cap;
		}
		nl = p ? strchr(p, '\n') : NULL;
		if (nl)
			*nl = 0;
		r = &m->v[m->n++];
		r->lo = lo;
		r->hi = hi;
		/* no file: trampolines or generated code ([vdso] is safe) */
		r->unsafe = p ? holds_locks(p) : !strstr(line, "[vdso]");
		snprintf(r->name, sizeof(r->name), "%s",
			 p ? (strrchr(p, '/') + 1) : "anonymous code");
	}
	fclose(f);
	m->loaded = true;
	return 0;
}

static const struct inject_range *find(const struct inject_maps *m,
				       uint64_t pc)
{
	for (size_t i = 0; i < m->n; i++)
		if (pc >= m->v[i].lo && pc < m->v[i].hi)
			return &m->v[i];
	return NULL;
}

bool inject_safe_point(struct inject_maps *m, pid_t pid,
		       const struct user_regs_struct *r, char *where,
		       size_t len)
{
	const struct inject_range *at;

	if ((long long)r->orig_rax >= 0)
		for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
			if ((long long)r->orig_rax == waits[i])
				return true;
	if (!m->loaded && load_maps(m, pid))
		return false;
	at = find(m, r->rip);
	/* new code since the last read: read again, once */
	if (!at && !load_maps(m, pid))
		at = find(m, r->rip);
	snprintf(where, len, "%s", at ? at->name : "unmapped code");
	return at && !at->unsafe;
}

void inject_maps_free(struct inject_maps *m)
{
	free(m->v);
	*m = (struct inject_maps){ 0 };
}
