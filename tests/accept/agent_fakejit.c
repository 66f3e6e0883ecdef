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
#include <unistd.h>

static volatile int torn;

static void teardown(void)
{
	torn = 1;
}

__attribute__((constructor)) static void fakejit_init(void)
{
	atexit(teardown);
}

/* A compile of MS milliseconds; it creates $FAKEJIT_STARTED as it starts. */
int fakejit_compile(int ms)
{
	const char *started = getenv("FAKEJIT_STARTED");
	FILE *f;

	if (started && (f = fopen(started, "w")))
		fclose(f);
	for (int i = 0; i < ms; i++)
		usleep(1000);
	if (torn) {
		fprintf(stderr, "fakejit: torn down under a compile\n");
		abort();
	}
	return 0;
}
