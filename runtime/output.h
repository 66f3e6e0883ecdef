/* SPDX-License-Identifier: MIT */
/*
 * Output: maps, histograms, printf lines and the rest, as text identical
 * to bpftrace 0.17 or as bpftrace's NDJSON.  The runtime merges per-CPU
 * (and later per-device) map parts into `struct out_map` and hands it here;
 * nothing in this module knows about BPF.
 */
#ifndef GT_OUTPUT_H
#define GT_OUTPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>

enum out_format { OUT_TEXT, OUT_JSON };

enum out_vtype {
	OV_NONE,	/* no key */
	OV_INT,		/* signed 64-bit */
	OV_UINT,	/* unsigned 64-bit */
	OV_STR,
	OV_TUPLE,
};

struct out_val {
	enum out_vtype type;
	int64_t i;		/* OV_INT, OV_UINT (reinterpret as uint64_t) */
	const char *s;		/* OV_STR */
	struct out_val *elems;	/* OV_TUPLE */
	int nelems;
};

enum out_agg {
	OA_NONE,	/* plain assignment: @x = expr */
	OA_COUNT,
	OA_SUM,
	OA_MIN,
	OA_MAX,
	OA_AVG,
	OA_STATS,
	OA_HIST,
	OA_LHIST,
	OA_SMLOAD,
};

struct out_entry {
	struct out_val key;	/* OV_NONE, a single value, or OV_TUPLE for @m[a, b] */
	struct out_val val;	/* OA_NONE, COUNT, SUM, MIN, MAX: the value */
	uint64_t count;		/* OA_AVG, OA_STATS */
	int64_t total;		/* OA_AVG, OA_STATS; OA_HIST, OA_LHIST: the
				 * sum of the values (never printed: the
				 * metrics page's _sum) */
	uint64_t *buckets;	/* OA_HIST, OA_LHIST: per bucket; OA_SMLOAD: per SM */
	int nbuckets;
};

struct out_map {
	const char *name;	/* "@x", or "@" for the anonymous map */
	enum out_agg agg;
	int64_t lmin, lmax, lstep;	/* OA_LHIST */
	bool keyless;		/* @x, not @x[k] (known even when empty) */
	bool glued;		/* values are stacks or symbols: bpftrace 0.17
				 * ends no entry with a line break then */
	struct out_entry *entries;
	size_t n;
};

struct out {
	FILE *f;
	FILE *blank;		/* where the blank pair before the exit maps
				 * goes; NULL: f (-o FILE: stdout, as bpftrace) */
	enum out_format fmt;
	bool utf8;		/* smload grid: Unicode blocks or ASCII */
	bool full;		/* -B full: no flush after each record */
};

/* After a record: flushed at once, unless -B full. */
void out_flush(struct out *o);

/*
 * Hist bucket index, as bpftrace 0.17 computes it (and so as generated code
 * must): 0 for n < 0, 1 for n == 0, otherwise 2 + floor(log2(n)) where
 * values at or above 2^31 all land in bucket 33 (bpftrace 0.17's log2 only
 * shifts by 16+8+4+2+1).  So hist maps have at most OUT_HIST_BUCKETS buckets.
 */
#define OUT_HIST_BUCKETS 34
int out_hist_index(int64_t n);
/* lhist: 0 below min, 1 + (n-min)/step inside, last bucket at/above max. */
int out_lhist_nbuckets(int64_t min, int64_t max, int64_t step);
int out_lhist_index(int64_t n, int64_t min, int64_t max, int64_t step);

/* A map as print(@m) or the exit dump prints it (sorting included). */
void out_map(struct out *o, const struct out_map *m);
/* print(@m, top, div) */
void out_map_top(struct out *o, const struct out_map *m, uint32_t top, uint32_t div);
/* Before the maps at exit (bpftrace prints two newlines in text mode). */
void out_exit_begin(struct out *o);
/* printf() output: the already formatted text. */
void out_printf(struct out *o, const char *text, size_t len);
/* time() output: the already formatted text. */
void out_time(struct out *o, const char *text);
/* print(expr) of a non-map value. */
void out_value(struct out *o, const struct out_val *v);
/* "Attaching N probes..." */
void out_attached(struct out *o, int nprobes);
/* Lost events reported by the ring buffer. */
void out_lost(struct out *o, uint64_t n);

/* The text form of one value, as in keys and print(): caller frees. */
char *out_val_str(const struct out_val *v);

#endif
