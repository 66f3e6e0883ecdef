// SPDX-License-Identifier: MIT
/*
 * The ptrace injector (docs/attach.md).  One thread of the target is
 * borrowed (PTRACE_SEIZE + PTRACE_INTERRUPT) where it holds none of the
 * locks our calls take (runtime/inject_safe.c): its registers are saved,
 * and functions are called in it by setting the registers of a call
 * (System V x86-64: rdi, rsi; a 16-byte aligned stack below the red zone)
 * whose return address is that stack slot's own address, so the return
 * is a SIGSEGV there (the stack is not executable) that we catch.
 * dlopen comes from libc's symbol table (glibc >= 2.34 exports
 * it from libc.so.6; older ones have __libc_dlopen_mode).  The other
 * threads run during dlopen and gputrace_attach (they may hold the locks
 * those take), and are stopped only while gputrace_arm writes the jumps.
 * At the end every register and stack byte of the borrowed thread is
 * restored, with orig_rax, so an interrupted system call restarts.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probes/elf_syms.h"
#include "gpucode/agent_proto.h"
#include "runtime/agentctl.h"
#include "runtime/inject.h"
#include "runtime/inject_safe.h"

#define RED_ZONE	128
#define MAX_THREADS	4096
#define SAFE_POINT_MS	3000
#define CALL_WARN_S	20	/* a call this long waits for a lock */

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------ checks -- */

static long read_long(const char *path, long dflt)
{
	FILE *f = fopen(path, "r");
	long v = dflt;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

/* The "Uid:" real uid of PID, or CapEff of ourselves (PID 0). */
static bool status_field(pid_t pid, const char *key, unsigned long long *v,
			 int base)
{
	char path[64], line[256];
	bool ok = false;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!ok && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			ok = (*v = strtoull(line + strlen(key), NULL, base),
			      true);
	fclose(f);
	return ok;
}

/* A mapping of PID's whose path contains NAME: path, start, offset. */
static bool find_map(pid_t pid, const char *name, char *path, size_t len)
{
	char mp[64], line[4096 + 128];
	bool found = false;
	FILE *f;

	snprintf(mp, sizeof(mp), "/proc/%d/maps", (int)pid);
	f = fopen(mp, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *nl;
		const char *base;

		if (!p)
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		base = strrchr(p, '/') + 1;
		if (!strncmp(base, name, strlen(name))) {
			snprintf(path, len, "%s", p);
			found = true;
		}
	}
	fclose(f);
	return found;
}

int inject_why(pid_t pid, char *why, size_t len)
{
	unsigned long long cap = 0, uid = 0;
	long scope = read_long("/proc/sys/kernel/yama/ptrace_scope", 0);
	bool capable = geteuid() == 0 ||
		       (status_field(0, "CapEff:", &cap, 16) &&
			(cap >> 19) & 1);	/* CAP_SYS_PTRACE */
	char path[4096];

	if (scope >= 3) {
		snprintf(why, len, "-p %d: ptrace is disabled on this "
			 "system (kernel.yama.ptrace_scope = 3): device probes "
			 "cannot be installed in a running process", (int)pid);
		return -EPERM;
	}
	if (!capable && scope >= 1) {
		snprintf(why, len, "-p %d: installing device probes in "
			 "a running process needs root or CAP_SYS_PTRACE "
			 "(kernel.yama.ptrace_scope = %ld)", (int)pid, scope);
		return -EPERM;
	}
	if (!capable && status_field(pid, "Uid:", &uid, 10) &&
	    uid != (unsigned long long)getuid()) {
		snprintf(why, len, "-p %d: the process belongs to "
			 "another user: root or CAP_SYS_PTRACE is needed",
			 (int)pid);
		return -EPERM;
	}
	if (!find_map(pid, "libcuda.so", path, sizeof(path))) {
		snprintf(why, len, "-p %d: the process has not loaded "
			 "the CUDA driver (libcuda.so.1) yet: run gputrace -p "
			 "once it has made its first CUDA call", (int)pid);
		return -ENOENT;
	}
	return 0;
}

int inject_check(pid_t pid)
{
	char why[512];
	int e = inject_why(pid, why, sizeof(why));

	if (e)
		fprintf(stderr, "gputrace: %s\n", why);
	return e;
}

/* -------------------------------------------------------- addresses -- */

/* Where function NAME of the file mapped in PID as PATH is, or 0. */
static uint64_t sym_addr(pid_t pid, const char *path, const char *name)
{
	const struct syms *s;
	const struct syms_func *fn;
	char mp[64], line[4096 + 128], err[256];
	uint64_t addr = 0;
	bool amb;
	FILE *f;

	if (syms_load(path, &s, err, sizeof(err)))
		return 0;
	fn = syms_lookup(s, name, &amb);
	if (!fn)
		return 0;
	snprintf(mp, sizeof(mp), "/proc/%d/maps", (int)pid);
	f = fopen(mp, "r");
	if (!f)
		return 0;
	while (!addr && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char *p = strchr(line, '/'), *nl;

		if (!p || sscanf(line, "%llx-%llx %*s %llx", &lo, &hi,
				 &off) != 3)
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		if (!strcmp(p, path) && fn->offset >= off &&
		    fn->offset < off + (hi - lo))
			addr = lo + (fn->offset - off);
	}
	fclose(f);
	return addr;
}

/* ------------------------------------------------------------ ptrace -- */

struct target {
	pid_t pid, tid;			/* the borrowed thread */
	struct user_regs_struct saved;
	uint64_t stack_lo;		/* bytes we wrote below the stack */
	uint8_t stack_copy[4096];
	size_t stack_len;
	int pending;			/* a signal that came meanwhile */
	int tries;			/* stops until a safe point */
	void (*serve)(void *);
	void *arg;
};

static int peek(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)addr, n };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ?
	       0 : -EFAULT;
}

static int poke(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
	struct iovec l = { (void *)buf, n }, r = { (void *)addr, n };

	return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)n ?
	       0 : -EFAULT;
}

/* Stop TID, seized: 0 or -errno.  A signal that comes first goes on. */
static int interrupt(pid_t tid)
{
	int st;

	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -errno;
	for (;;) {
		if (waitpid(tid, &st, __WALL) < 0)
			return -errno;
		if (!WIFSTOPPED(st))
			return -ESRCH;
		if (st >> 16 == PTRACE_EVENT_STOP)
			return 0;
		ptrace(PTRACE_CONT, tid, 0, WSTOPSIG(st));
	}
}

/* Seize and stop TID: 0 or -errno. */
static int stop_thread(pid_t tid)
{
	int e;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0))
		return -errno;
	e = interrupt(tid);
	if (e)
		ptrace(PTRACE_DETACH, tid, 0, 0);
	return e;
}

/*
 * Borrow T's thread, stopped at a safe point (runtime/inject_safe.c):
 * where it is not, it runs on a little and is stopped again, for
 * SAFE_POINT_MS at most.  0, or -errno with the reason in WHY.
 */
static int borrow(struct target *t, char *why, size_t len)
{
	struct inject_maps m = { 0 };
	uint64_t end = now_us() + SAFE_POINT_MS * 1000ull;
	unsigned seed = (unsigned)end;
	char where[64] = "";
	int r = stop_thread(t->tid);

	while (!r) {
		if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->saved)) {
			r = -errno;
			snprintf(why, len, "cannot read its registers");
			break;
		}
		if (inject_safe_point(&m, t->pid, &t->saved, where,
				      sizeof(where)))
			break;
		if (now_us() > end) {
			snprintf(why, len, "its main thread was never at a "
				 "safe point for the agent's start in %d s (%d "
				 "stops, the last in %s); try again",
				 SAFE_POINT_MS / 1000, t->tries + 1, where);
			r = -EAGAIN;
			break;
		}
		t->tries++;
		ptrace(PTRACE_CONT, t->tid, 0, 0);
		usleep(100 + rand_r(&seed) % 2000);
		r = interrupt(t->tid);
		if (r)
			snprintf(why, len, "cannot stop the process");
	}
	inject_maps_free(&m);
	if (r)
		ptrace(PTRACE_DETACH, t->tid, 0, 0);
	return r;
}

/*
 * Call FN(A0, A1) in the borrowed thread; STR, when given, is copied
 * onto its stack and passed as A0.  0 and *RET, or -errno.
 */
static int call(struct target *t, uint64_t fn, const char *str, uint64_t a1,
		uint64_t *ret)
{
	struct user_regs_struct r = t->saved;
	uint64_t sp = t->saved.rsp - RED_ZONE - 256, a0 = 0, back;
	uint64_t t0 = now_us();
	bool warned = false;
	int st;

	if (str) {
		size_t n = strlen(str) + 1;

		sp = (sp - n) & ~15ull;
		if (poke(t->tid, sp, str, n))
			return -EFAULT;
		a0 = sp;
	}
	sp = (sp & ~15ull) - 8;		/* as after a call: rsp % 16 == 8 */
	/* the return address: this stack slot itself, not executable, so
	 * the return faults there (a call through NULL inside faults at 0) */
	back = sp;
	if (poke(t->tid, sp, &back, 8))
		return -EFAULT;
	r.rip = fn;
	r.rsp = sp;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.orig_rax = -1;	/* not in a system call: no restart */
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) ||
	    ptrace(PTRACE_CONT, t->tid, 0, 0))
		return -errno;
	for (;;) {
		pid_t w = waitpid(t->tid, &st, __WALL | WNOHANG);

		if (w < 0)
			return -errno;
		/* said once: the reason a -p start seems to hang */
		if (w == 0 && !warned &&
		    now_us() - t0 > CALL_WARN_S * 1000000ull) {
			fprintf(stderr, "gputrace: -p %d: the agent's start "
				"has waited %d s inside the process (for a "
				"lock?); still waiting\n", (int)t->pid,
				CALL_WARN_S);
			warned = true;
		}
		if (w == 0) {
			if (t->serve)
				t->serve(t->arg);
			else
				usleep(1000);
			continue;
		}
		if (!WIFSTOPPED(st))
			return -ESRCH;	/* it ended */
		if (st >> 16 == PTRACE_EVENT_STOP) {
			ptrace(PTRACE_CONT, t->tid, 0, 0);
			continue;
		}
		if (WSTOPSIG(st) == SIGSEGV) {
			if (ptrace(PTRACE_GETREGS, t->tid, 0, &r))
				return -errno;
			if (r.rip == back) {
				*ret = r.rax;
				return 0;
			}
			return -EFAULT;	/* it crashed in our call */
		}
		if (!t->pending)
			t->pending = WSTOPSIG(st);
		ptrace(PTRACE_CONT, t->tid, 0, 0);
	}
}

/* Restore the borrowed thread and let it go. */
static void release(struct target *t)
{
	if (t->stack_len)
		poke(t->tid, t->stack_lo, t->stack_copy, t->stack_len);
	ptrace(PTRACE_SETREGS, t->tid, 0, &t->saved);
	ptrace(PTRACE_DETACH, t->tid, 0, t->pending);
}

/* --------------------------------------------------------- threads -- */

static int other_threads(pid_t pid, pid_t self, pid_t *v, int n, int max)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return n;
	while ((d = readdir(dir)) && n < max) {
		pid_t tid = (pid_t)atoi(d->d_name);
		bool have = tid == self || tid <= 0;

		for (int i = 0; i < n && !have; i++)
			have = v[i] == tid;
		if (!have && stop_thread(tid) == 0)
			v[n++] = tid;
	}
	closedir(dir);
	return n;
}

/* A thread stopped inside the bytes a jump replaced: to the trampoline. */
static bool move_out(struct user_regs_struct *r, const struct agent_patches *ps)
{
	for (uint32_t i = 0; i < ps->n && i < AGENT_MAX_PATCHES; i++) {
		const struct agent_patch *p = &ps->v[i];

		if (!p->armed || r->rip <= p->addr || r->rip >= p->addr + p->len)
			continue;
		for (int j = 0; j < p->n && j < 8; j++)
			if (p->addr + p->off[j] == r->rip) {
				r->rip = p->tramp + p->toff[j];
				return true;
			}
	}
	return false;
}

/* Stop every thread, arm, move threads, resume.  0 or -errno. */
static int arm(struct target *t, uint64_t fn, struct inject_stats *st)
{
	static pid_t tids[MAX_THREADS];
	static struct agent_patches ps;
	uint64_t t0 = now_us(), table = 0;
	int n = 0, prev = -1, r;

	/* until no new thread appears */
	while (n != prev && n < MAX_THREADS) {
		prev = n;
		n = other_threads(t->pid, t->tid, tids, n, MAX_THREADS);
	}
	r = call(t, fn, NULL, 0, &table);
	if (!r && (!table || peek(t->tid, table, &ps, sizeof(ps))))
		r = -EINVAL;
	for (int i = 0; i < n; i++) {
		struct user_regs_struct regs;

		if (!r && !ptrace(PTRACE_GETREGS, tids[i], 0, &regs) &&
		    move_out(&regs, &ps)) {
			ptrace(PTRACE_SETREGS, tids[i], 0, &regs);
			st->nmoved++;
		}
		ptrace(PTRACE_DETACH, tids[i], 0, 0);
	}
	if (!r && move_out(&t->saved, &ps))
		st->nmoved++;
	for (uint32_t i = 0; !r && i < ps.n && i < AGENT_MAX_PATCHES; i++)
		st->narmed += ps.v[i].armed;
	st->pause_us = now_us() - t0;
	return r;
}

/* ----------------------------------------------------------- inject -- */

static int fail(pid_t pid, const char *what, int e)
{
	fprintf(stderr, "gputrace: -p %d: %s%s%s\n", (int)pid, what,
		e ? ": " : "", e ? strerror(-e) : "");
	return e ? e : -EINVAL;
}

int inject_agent(pid_t pid, const char *lib, const char *sock,
		 void (*serve)(void *), void *arg, struct inject_stats *st)
{
	struct target t = { .pid = pid, .tid = pid, .serve = serve,
			    .arg = arg };
	char libc[4096], agent[4096], why[256] = "";
	uint64_t t0 = now_us(), dlopen_fn, fn, ret = 0, whyp = 0;
	bool have;
	int r;

	memset(st, 0, sizeof(*st));
	if (!find_map(pid, "libc.so.6", libc, sizeof(libc)) &&
	    !find_map(pid, "libc-", libc, sizeof(libc)))
		return fail(pid, "no libc in the process", 0);
	dlopen_fn = sym_addr(pid, libc, "dlopen");
	if (!dlopen_fn)
		dlopen_fn = sym_addr(pid, libc, "__libc_dlopen_mode");
	if (!dlopen_fn)
		return fail(pid, "no dlopen in its libc", 0);
	r = borrow(&t, why, sizeof(why));
	if (r == -EPERM)
		return fail(pid, "ptrace refused (root or CAP_SYS_PTRACE "
			    "needed, or another tracer holds it)", r);
	if (r)
		return fail(pid, why[0] ? why : "cannot stop the process",
			    r == -EAGAIN ? 0 : r);
	st->tries = t.tries;
	why[0] = 0;
	/* what our calls write under its stack, put back at the end */
	t.stack_len = sizeof(t.stack_copy);
	t.stack_lo = t.saved.rsp - RED_ZONE - t.stack_len;
	if (peek(pid, t.stack_lo, t.stack_copy, t.stack_len))
		t.stack_len = 0;
	have = find_map(pid, strrchr(lib, '/') + 1, agent, sizeof(agent));
	if (have && strcmp(agent, lib)) {
		/* two agents would both hook the driver */
		snprintf(why, sizeof(why), "the process has another gputrace "
			 "agent (%.200s)", agent);
		release(&t);
		return fail(pid, why, 0);
	}
	if (!have) {
		/* RTLD_NOW | RTLD_LOCAL: our exports stay out of its scope */
		r = call(&t, dlopen_fn, lib, 2, &ret);
		if (r || !ret) {
			release(&t);
			return fail(pid, "dlopen of the agent failed in the "
				    "process", r);
		}
		if (!find_map(pid, strrchr(lib, '/') + 1, agent,
			      sizeof(agent))) {
			release(&t);
			return fail(pid, "the agent is not mapped after "
				    "dlopen", 0);
		}
	}
	fn = sym_addr(pid, agent, AGENT_SYM_ATTACH);
	r = fn ? call(&t, fn, sock, 0, &ret) : -ENOENT;
	if (!r && (int)ret < 0) {
		fn = sym_addr(pid, agent, AGENT_SYM_WHY);
		if (fn && !call(&t, fn, NULL, 0, &whyp) && whyp)
			peek(pid, whyp, why, sizeof(why) - 1);
		release(&t);
		return fail(pid, why[0] ? why : "the agent refused to attach",
			    why[0] ? 0 : (int)ret);
	}
	if (r) {
		release(&t);
		return fail(pid, "calling the agent failed", r);
	}
	fn = sym_addr(pid, agent, AGENT_SYM_ARM);
	r = fn ? arm(&t, fn, st) : -ENOENT;
	release(&t);
	st->total_us = now_us() - t0;
	if (r)
		return fail(pid, "arming the hooks failed", r);
	return 0;
}

static void serve_agent(void *ac)
{
	agentctl_poll(ac, 2);
}

int inject_agentctl(pid_t pid, struct agentctl *ac, bool verbose)
{
	struct inject_stats st;
	int r = inject_agent(pid, agentctl_lib(ac), agentctl_sock(ac),
			     serve_agent, ac, &st);

	if (r)
		return r;
	if (verbose)
		fprintf(stderr, "gputrace: agent attached to pid %d: %d hooks, "
			"%d thread(s) moved, paused %.2f ms, %.1f ms in all, "
			"%d stop(s) for a safe point\n", (int)pid, st.narmed,
			st.nmoved, st.pause_us / 1e3, st.total_us / 1e3,
			st.tries + 1);
	return 0;
}
