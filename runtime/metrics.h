/* SPDX-License-Identifier: MIT */
/*
 * --metrics: the program's maps on http://ADDR:PORT/metrics in the
 * Prometheus text exposition format (docs/fleet.md).  metrics_text.c
 * renders one `struct out_map`; metrics_http.c serves the page with
 * libmicrohttpd, opened at run time, from the session's event loop (no
 * thread: a scrape reads the maps where print() does).
 */
#ifndef GT_METRICS_H
#define GT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <sys/socket.h>

#include "runtime/output.h"

/*
 * The metric family of map NAME ("@x" or "@"): "gputrace_x", or
 * "gputrace_map" for the anonymous map; characters a metric name cannot
 * hold become '_'.  Malloc'd, or NULL.
 */
char *metrics_family(const char *name);

/*
 * HELP, TYPE and the samples of M as family FAMILY (metrics_family()):
 * count() and sum() are counters (FAMILY_total), plain values, min(),
 * max() and avg() gauges, hist() and lhist() histograms, stats() its
 * count, sum and average, smload() a gauge per SM.
 */
void metrics_text_map(FILE *f, const struct out_map *m, const char *family);

/* The page: malloc'd text and its length, or NULL. */
typedef char *(*metrics_page_fn)(void *arg, size_t *len);

/*
 * "PORT" (127.0.0.1), "ADDR:PORT" or "[ADDR6]:PORT", numeric addresses
 * or a name that resolves.  The unspecified addresses (0.0.0.0, ::)
 * only with ANY.  0 or -EINVAL with ERR saying why.
 */
int metrics_parse_addr(const char *spec, bool any,
		       struct sockaddr_storage *ss, socklen_t *len,
		       char *err, size_t errlen);

struct metrics;

/*
 * Open libmicrohttpd and listen on SPEC (metrics_parse_addr); PAGE
 * builds /metrics on each GET.  Says where on stderr.  0 and *OUT, or
 * negative errno after a message on stderr.
 */
int metrics_start(const char *spec, bool any, metrics_page_fn page,
		  void *arg, struct metrics **out);
/* For poll(2) (POLLIN: metrics_run has work); -1 for a NULL M. */
int metrics_fd(const struct metrics *m);
/* Serve what is ready, without blocking; call each loop turn. */
void metrics_run(struct metrics *m);
/* Close every connection and the listening socket; M may be NULL. */
void metrics_stop(struct metrics *m);

#endif
