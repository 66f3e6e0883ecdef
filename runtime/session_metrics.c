// SPDX-License-Identifier: MIT
/*
 * --metrics: the page of every map, read as print() reads it (host and
 * device parts merged by session_read_map()), in Prometheus' text format
 * (runtime/metrics_text.c).  Runs on the event loop's thread.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/agentctl.h"
#include "runtime/maps.h"
#include "runtime/metrics.h"
#include "runtime/session.h"

/* A scrape asks the agents for their maps at most this often. */
#define METRICS_SNAP_MS		1000
#define METRICS_SNAP_WAIT_MS	500

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether FAM is one of the N families in SEEN (then not again). */
static bool taken(char **seen, int n, const char *fam)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(seen[i], fam))
			return true;
	return false;
}

char *session_metrics_page(void *arg, size_t *len)
{
	struct session *s = arg;
	uint64_t now = mono_ms();
	char *buf = NULL, **seen;
	struct map_sym **ms;
	int n, nseen = 0;
	FILE *f;

	if (s->ac && now - s->metrics_snap_ms >= METRICS_SNAP_MS) {
		agentctl_snapshot(s->ac, METRICS_SNAP_WAIT_MS);
		s->metrics_snap_ms = now;
	}
	ms = session_sorted_maps(s, &n);
	seen = calloc(n + 1, sizeof(*seen));
	f = open_memstream(&buf, len);
	for (int i = 0; f && ms && seen && i < n; i++) {
		struct out_map om;
		char *fam;

		session_read_map(s, ms[i]->index, &om);
		fam = metrics_family(om.name);
		if (fam && taken(seen, nseen, fam)) {
			/* @ and @map: the first by name keeps the family */
			fprintf(f, "# gputrace: %s left out: %s is taken\n",
				om.name, fam);
			free(fam);
		} else if (fam) {
			metrics_text_map(f, &om, fam);
			seen[nseen++] = fam;
		}
		maps_out_free(&om);
	}
	while (nseen--)
		free(seen[nseen]);
	free(seen);
	free(ms);
	if (!f)
		return NULL;
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}
