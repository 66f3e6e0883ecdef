/* SPDX-License-Identifier: MIT */
/*
 * Internal to the output module: the pieces that output.c (ordering and
 * dispatch), output_text.c, output_json.c and output_smload.c share.
 */
#ifndef GT_OUTPUT_IMPL_H
#define GT_OUTPUT_IMPL_H

#include "runtime/output.h"

/*
 * The entries of a map in print order.  V is NULL when the order could not
 * be allocated; then the entries print in stored order, which loses only
 * the sort.
 */
struct out_order {
	const struct out_map *m;
	const struct out_entry **v;
	size_t n;
	size_t first;		/* print(@m, top): entries before this are skipped */
};

static inline const struct out_entry *out_at(const struct out_order *ord,
					     size_t i)
{
	return ord->v ? ord->v[i] : &ord->m->entries[i];
}

/* avg() and stats(): the average as bpftrace computes it (C division). */
int64_t out_average(const struct out_entry *e);
uint64_t out_bucket_sum(const struct out_entry *e);
bool out_keyed(const struct out_map *m);

/* Text form of a value or key, straight to F. */
void out_text_val(FILE *f, const struct out_val *v);
/* "[k]" or "[a, b]"; nothing for OV_NONE. */
void out_text_key(FILE *f, const struct out_val *key);
void out_text_map(struct out *o, const struct out_order *ord, uint32_t div);

void out_json_str(FILE *f, const char *s, size_t len);
void out_json_val(FILE *f, const struct out_val *v);
void out_json_map(struct out *o, const struct out_order *ord, uint32_t div);

/* smload(): per-SM loads, summarised. */
struct out_smsum {
	int nsms;
	uint64_t total;
	uint64_t min, max;
	int min_sm, max_sm;	/* lowest SM id holding the min / max */
	int idle;		/* SMs with no load */
	double mean;		/* total / nsms */
	double imbalance;	/* max / mean, 0 when nothing ran */
};

void out_smload_sum(const uint64_t *v, int n, uint32_t div,
		    struct out_smsum *s);
void out_smload_text(struct out *o, const struct out_entry *e, uint32_t div);
void out_smload_json(struct out *o, const struct out_entry *e, uint32_t div);

#endif
