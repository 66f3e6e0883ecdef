// SPDX-License-Identifier: MIT
/*
 * The demo's bundled workload: a few "request handlers" called with sizes
 * drawn from a skewed distribution, for about a second.  Built -O0 so the
 * functions stay visible to uprobes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long parse_request(unsigned long size)
{
	for (unsigned long i = 0; i < size; i++)
		sink += i;
	return size / 2;
}

__attribute__((noinline)) unsigned long handle_get(unsigned long size)
{
	return parse_request(size) + 1;
}

__attribute__((noinline)) unsigned long handle_put(unsigned long size)
{
	return parse_request(size * 4) + 2;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	unsigned int seed = 42;

	for (int i = 0; i < n; i++) {
		/* sizes from 1 to ~64K, mostly small */
		unsigned long size = 1ul << (rand_r(&seed) % 17);

		if (rand_r(&seed) % 4)
			handle_get(size);
		else
			handle_put(size);
		if (i % 200 == 0) {
			struct timespec ts = { 0, 50 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	printf("workload: %d requests done\n", n);
	return 0;
}
