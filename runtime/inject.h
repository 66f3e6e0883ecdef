/* SPDX-License-Identifier: MIT */
/*
 * The ptrace injector (-p with device probes, docs/attach.md): loads the
 * agent into a running process and attaches it to the tracer's socket.
 */
#ifndef GT_INJECT_H
#define GT_INJECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * May we inject into PID?  Privileges (root or CAP_SYS_PTRACE, else the
 * yama ptrace_scope rules), and the CUDA driver already loaded.  0, or
 * -errno after one message on stderr.
 */
int inject_check(pid_t pid);
/* inject_check without the message: the reason in WHY (LEN bytes). */
int inject_why(pid_t pid, char *why, size_t len);

struct inject_stats {
	uint64_t pause_us;	/* every thread stopped (the arming) */
	uint64_t total_us;	/* the injection, start to end */
	int narmed;		/* inline hooks written */
	int nmoved;		/* threads moved out of displaced bytes */
	int tries;		/* stops of the borrowed thread before a
				 * safe point (runtime/inject_safe.c) */
};

/*
 * Load LIB (absolute path) into PID unless it is there, and call its
 * gputrace_attach(SOCK); SERVE(ARG) is called every few ms meanwhile
 * (the agent waits for the tracer to send its configuration).  Then
 * stop every thread, arm the hooks, resume.  Every register and byte of
 * the borrowed thread is restored.  0 or -errno after one message.
 */
int inject_agent(pid_t pid, const char *lib, const char *sock,
		 void (*serve)(void *), void *arg, struct inject_stats *st);

struct agentctl;
/*
 * inject_agent with AC's library and socket, AC served meanwhile; with
 * VERBOSE the figures on stderr ("agent attached to pid ...").
 */
int inject_agentctl(pid_t pid, struct agentctl *ac, bool verbose);

#endif
