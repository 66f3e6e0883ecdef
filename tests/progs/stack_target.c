// SPDX-License-Identifier: MIT
/*
 * A workload for the stack tests (tests/accept/stack_*.sh).  Each round
 * r reaches st_leaf() from three call sites: st_leaf(r) once through
 * path_a() and st_leaf(r + 10) twice through path_b() (static: their
 * names are in .symtab, or only in the debug file of the stripped
 * copy), then st_leaf(r + 20) three times through st_deep(5, r), which
 * recurses five levels first.  With -t, the rounds
 * run in a second thread too (after the main thread's).  st_done() is
 * called at the end.  Built -O0 -fno-inline with frame pointers, so
 * every frame is real and the kernel's unwinder sees it.
 *
 *   stack_target [-n ROUNDS] [-w SYM[+OFF],...] [-k] [-t]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "probe_wait.h"

int st_leaf(int x)
{
	return x + 1;
}

static int path_a(int x)
{
	return st_leaf(x) * 2;
}

static int path_b(int x)
{
	return st_leaf(x + 10) * 3;
}

int st_deep(int n, int x)
{
	return n ? st_deep(n - 1, x) + 1 : st_leaf(x + 20);
}

void st_done(void)
{
}

static int rounds = 3;

static void *run(void *arg)
{
	long sum = 0;

	for (int r = 0; r < rounds; r++) {
		sum += path_a(r);
		for (int i = 0; i < 2; i++)
			sum += path_b(r);
		for (int i = 0; i < 3; i++)
			sum += st_deep(5, r);
	}
	return (void *)sum;
}

int main(int argc, char **argv)
{
	struct probe_opts o = { .rounds = 3 };
	int threads = 0, c;
	cpu_set_t one;
	pthread_t t;

	/* -t is ours; probe_opts takes the rest */
	for (c = 1; c < argc; c++)
		if (argv[c][0] == '-' && argv[c][1] == 't' && !argv[c][2]) {
			threads = 1;
			for (int j = c; j < argc; j++)
				argv[j] = argv[j + 1];
			argc--;
			break;
		}
	if (probe_opts(argc, argv, &o,
		       "usage: stack_target [-n ROUNDS] [-w SYM[+OFF],...] [-k] [-t]"))
		return 2;
	rounds = o.rounds;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (o.wait && wait_probes("stack_target", o.wait))
		return 1;
	run(NULL);
	if (threads && (pthread_create(&t, NULL, run, NULL) ||
			pthread_join(t, NULL)))
		return 1;
	st_done();
	if (o.keep)
		pause();
	return 0;
}
