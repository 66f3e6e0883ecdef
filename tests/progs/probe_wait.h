/* SPDX-License-Identifier: MIT */
/*
 * Test workloads wait for the tracer: a uprobe is an int3 (0xcc) written
 * at the probed address, and the agent's inline hook a jmp rel32 (0xe9,
 * runtime/agent/agent_inline.c), so polling our own code tells when the
 * tracer has attached.  Header-only, shared by the test programs.
 */
#ifndef GT_PROBE_WAIT_H
#define GT_PROBE_WAIT_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * Is there an int3 at SYM[+OFF], or a jmp where the first look found
 * another byte?  -1 if SYM does not exist.
 */
static int probed(const char *spec)
{
	static char seen[16][256];
	static unsigned char first[16];
	static int nseen;
	char name[256], *plus;
	unsigned long off = 0;
	unsigned char *p, b;
	int i;

	snprintf(name, sizeof(name), "%s", spec);
	plus = strchr(name, '+');
	if (plus) {
		*plus = 0;
		off = strtoul(plus + 1, NULL, 0);
	}
	p = (unsigned char *)dlsym(RTLD_DEFAULT, name);
	if (!p)
		return -1;
	b = *(volatile unsigned char *)(p + off);
	for (i = 0; i < nseen && strcmp(seen[i], spec); i++)
		;
	if (i == nseen && nseen < 16) {
		snprintf(seen[nseen], sizeof(seen[nseen]), "%s", spec);
		first[nseen++] = b;
	}
	return b == 0xcc || (i < nseen && b == 0xe9 && first[i] != 0xe9);
}

/*
 * Wait (10 s at most each) until every SYM[+OFF] of the comma-separated
 * LIST is probed, then 200 ms more so the tracer is past its attach.
 * WHO names the program in errors.  0, or -1 after a message.
 */
static int wait_probes(const char *who, char *list)
{
	char *spec, *save = NULL, copy[1024];

	/* every entry's first byte, before any is hooked: a jmp there
	 * later is the agent's */
	snprintf(copy, sizeof(copy), "%s", list);
	for (spec = strtok_r(copy, ",", &save); spec;
	     spec = strtok_r(NULL, ",", &save))
		probed(spec);
	save = NULL;

	for (spec = strtok_r(list, ",", &save); spec;
	     spec = strtok_r(NULL, ",", &save)) {
		for (int ms = 0; ; ms++) {
			int r = probed(spec);

			if (r < 0) {
				fprintf(stderr, "%s: no symbol '%s'\n", who, spec);
				return -1;
			}
			if (r)
				break;
			if (ms == 10000) {
				fprintf(stderr, "%s: no probe at %s after 10 s\n",
					who, spec);
				return -1;
			}
			sleep_ms(1);
		}
	}
	sleep_ms(200);
	return 0;
}

/* The workloads' options: -n ROUNDS, -w SYM[+OFF],..., -k (keep). */
struct probe_opts {
	int rounds;		/* the caller's default on entry */
	int keep;
	char *wait;
};

/* Parse ARGV into O: 0, or -1 after printing USAGE. */
static int probe_opts(int argc, char **argv, struct probe_opts *o,
		      const char *usage)
{
	int c;

	while ((c = getopt(argc, argv, "n:w:k")) != -1) {
		switch (c) {
		case 'n':
			o->rounds = atoi(optarg);
			break;
		case 'w':
			o->wait = optarg;
			break;
		case 'k':
			o->keep = 1;
			break;
		default:
			fprintf(stderr, "%s\n", usage);
			return -1;
		}
	}
	return 0;
}

#endif
