// SPDX-License-Identifier: MIT
/*
 * A stand-in for the driver's PTX compiler (libnvidia-ptxjitcompiler.so.1)
 * for tests/accept/agent_hooks.sh: like the real one it registers an exit
 * handler as it loads, which tears it down.  A compile still running
 * when that handler has run aborts, as the real compiler did in free()
 * when exit() came during a compile on one of the agent's workers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int torn;

static void teardown(void)
{
	torn = 1;
}

__attribute__((constructor)) static void fakejit_init(void)
{
	atexit(teardown);
}

/*
 * A compile of MS milliseconds.  The FAKEJIT_STARTED_AT-th compile (1 if
 * unset) creates the file $FAKEJIT_STARTED as it starts.
 */
int fakejit_compile(int ms)
{
	static int n;
	const char *started = getenv("FAKEJIT_STARTED");
	const char *at = getenv("FAKEJIT_STARTED_AT");
	struct timespec t0, t;
	FILE *f;

	if (__atomic_add_fetch(&n, 1, __ATOMIC_RELAXED) == (at ? atoi(at) : 1) &&
	    started && (f = fopen(started, "w")))
		fclose(f);
	/* the real one is busy with its state all along: so are we */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (torn) {
			fprintf(stderr, "fakejit: torn down under a compile\n");
			abort();
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
		 (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return 0;
}
