// SPDX-License-Identifier: MIT
/*
 * USDT workload for tests/diff/45*: N rounds (argv[1], default 3) of
 * probes with register, memory and constant arguments, signed and
 * unsigned, in two providers, and one probe behind a semaphore
 * (usdt_sem.c) that fires only while a tracer holds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

void usdt_guarded(int i);

/* noinline and volatile: arguments in memory as well as in registers */
static __attribute__((noinline)) void round_of(int i)
{
	volatile long big = (long)i * 1000000000L;
	volatile short neg = -10 * i;
	unsigned char small = 200 + i;

	DTRACE_PROBE3(gt, tick, i, neg, big);
	DTRACE_PROBE2(gt, consts, 5, -7);
	DTRACE_PROBE1(gt, byte, small);
	DTRACE_PROBE(gt, noargs);
	DTRACE_PROBE1(other, tick, i * 2);
	usdt_guarded(i);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;

	for (int i = 1; i <= n; i++)
		round_of(i);
	return 0;
}
