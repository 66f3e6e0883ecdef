// SPDX-License-Identifier: MIT
/*
 * A workload for the language tests that read user memory
 * (tests/accept/lang_uprobe_diff.sh): each round passes strings, a
 * struct, a byte buffer and an argv array to functions the tests probe,
 * then calls lt_done() once.  Built -O0 -fno-inline like uprobe_target.
 *
 *   lang_target [-n ROUNDS] [-w SYM[+OFF],...] [-k]
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

struct cfg {
	int a;
	long b;
	char name[8];
	int arr[4];
	struct cfg *next;
	unsigned char small;
	short neg;
};

long lt_str(const char *s, long n)
{
	return (long)strlen(s) + n;
}

long lt_cfg(struct cfg *c)
{
	return c->a + c->b;
}

long lt_buf(const unsigned char *p, long n)
{
	return p[0] + n;
}

long lt_argv(char **argv)
{
	return argv[0][0];
}

void lt_done(void)
{
}

int main(int argc, char **argv)
{
	struct probe_opts o = { .rounds = 1 };
	static char longs[101];
	static const unsigned char bytes[] = { 'a', 'b', 0, 1, 0x7f, 0xff, 'z' };
	static char *args[] = { "ls", "-l", "/tmp", "", "x", NULL };
	struct cfg tail = { 7, -8, "tail", { 9, 10, 11, 12 }, NULL, 200, -2 };
	struct cfg head = { 1, 1L << 40, "headname", { 2, 3, 4, 5 }, &tail,
			    255, -300 };
	long sum = 0;
	cpu_set_t one;

	if (probe_opts(argc, argv, &o,
		       "usage: lang_target [-n ROUNDS] [-w SYM[+OFF],...] [-k]"))
		return 2;
	memset(longs, 'x', 100);
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (o.wait && wait_probes("lang_target", o.wait))
		return 1;
	for (int r = 0; r < o.rounds; r++) {
		sum += lt_str("hello world", 5);
		sum += lt_str(longs, 70);
		sum += lt_str("", 0);
		sum += lt_cfg(&head);
		sum += lt_buf(bytes, sizeof(bytes));
		sum += lt_argv(args);
		sum += lt_argv(args + 3);
	}
	lt_done();
	if (o.keep)
		pause();
	return sum == -1;
}
