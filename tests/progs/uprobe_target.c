// SPDX-License-Identifier: MIT
/*
 * A deterministic workload for the uprobe tests.  Each round calls
 * add10(1..10) once (arg6..arg9 on the stack), func_a(r) once, func_b(r)
 * twice, func_c(r) three times and gtdemo_run(r) once (libgtdemo.so,
 * C++ inside); then gt_done() once.  Built -O0 -fno-inline so every call
 * really happens.
 *
 *   uprobe_target [-n ROUNDS] [-w SYM[+OFF],...] [-k]
 *
 * -w: before the first call, wait (up to 10 s) until a uprobe breakpoint
 * (int3, 0xcc) sits at each SYM[+OFF] in our own memory, i.e. until the
 * tracer has attached there, then 200 ms more for the program to be
 * linked to the event.  SYM is looked up with dlsym (we are linked
 * -rdynamic), so libgtdemo.so's and libc's functions work too.
 * -k: after the rounds, wait for a signal instead of exiting, so that a
 * tracer can still read our /proc/PID/maps (symbolization) at its exit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe_wait.h"

int gtdemo_run(int r);

long add10(long a0, long a1, long a2, long a3, long a4, long a5, long a6,
	   long a7, long a8, long a9)
{
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
}

int func_a(int x)
{
	return x + 1;
}

int func_b(int x)
{
	return x * 2;
}

int func_c(int x)
{
	return x - 3;
}

void gt_done(void)
{
}

int main(int argc, char **argv)
{
	struct probe_opts o = { .rounds = 3 };
	int r, i;
	cpu_set_t one;
	long sum = 0;

	if (probe_opts(argc, argv, &o,
		       "usage: uprobe_target [-n ROUNDS] [-w SYM[+OFF],...] [-k]"))
		return 2;
	/* one CPU: a tracer's per-cpu buffers then see our events in order */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (o.wait && wait_probes("uprobe_target", o.wait))
		return 1;
	for (r = 0; r < o.rounds; r++) {
		sum += add10(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
		sum += func_a(r);
		for (i = 0; i < 2; i++)
			sum += func_b(r);
		for (i = 0; i < 3; i++)
			sum += func_c(r);
		sum += gtdemo_run(r);
	}
	gt_done();
	if (o.keep)
		pause();
	return sum == -1;
}
