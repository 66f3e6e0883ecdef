// SPDX-License-Identifier: MIT
/*
 * Text output, byte for byte as bpftrace 0.17 prints it.  A map is its
 * entries joined by "\n" and followed by "\n"; a hist entry is
 * "@h[k]: \n" plus one line per bucket, so hist blocks end in a blank line;
 * avg() and stats() maps get one more "\n" at the end.
 */
#include <inttypes.h>
#include <string.h>

#include "runtime/output_impl.h"

void out_text_val(FILE *f, const struct out_val *v)
{
	switch (v->type) {
	case OV_INT:
		fprintf(f, "%" PRId64, v->i);
		break;
	case OV_UINT:
		fprintf(f, "%" PRIu64, (uint64_t)v->i);
		break;
	case OV_STR:
		fputs(v->s ? v->s : "", f);
		break;
	case OV_TUPLE:
		fputc('(', f);
		for (int i = 0; i < v->nelems; i++) {
			if (i)
				fputs(", ", f);
			out_text_val(f, &v->elems[i]);
		}
		fputc(')', f);
		break;
	default:
		break;
	}
}

void out_text_key(FILE *f, const struct out_val *key)
{
	if (key->type == OV_NONE)
		return;
	fputc('[', f);
	if (key->type == OV_TUPLE) {
		for (int i = 0; i < key->nelems; i++) {
			if (i)
				fputs(", ", f);
			out_text_val(f, &key->elems[i]);
		}
	} else {
		out_text_val(f, key);
	}
	fputc(']', f);
}

/* 1, 2, ... 512, 1K ... 512K, 1M ..., as bpftrace labels powers of two */
static void pow2_label(char *buf, size_t len, int power)
{
	static const char suffix[] = "\0KMGT";
	int s = power >= 40 ? 4 : power / 10;

	power -= s * 10;
	if (s)
		snprintf(buf, len, "%llu%c", 1ULL << power, suffix[s]);
	else
		snprintf(buf, len, "%llu", 1ULL << power);
}

/* lhist bounds: exact multiples of 1M or 1K get a suffix */
static void lin_label(char *buf, size_t len, int64_t n)
{
	const int64_t kilo = 1024, mega = 1024 * 1024;

	if (n != 0 && n % mega == 0)
		snprintf(buf, len, "%" PRId64 "M", n / mega);
	else if (n != 0 && n % kilo == 0)
		snprintf(buf, len, "%" PRId64 "K", n / kilo);
	else
		snprintf(buf, len, "%" PRId64, n);
}

/* First and last non-empty bucket and the largest count; false if none. */
static bool bucket_span(const struct out_entry *e, int nb, int *lo, int *hi,
			uint64_t *max)
{
	*lo = -1;
	*hi = -1;
	*max = 0;
	for (int i = 0; i < nb && i < e->nbuckets; i++) {
		if (e->buckets[i]) {
			if (*lo < 0)
				*lo = i;
			*hi = i;
		}
		if (e->buckets[i] > *max)
			*max = e->buckets[i];
	}
	return *hi >= 0;
}

static void bucket_row(FILE *f, const char *label, uint64_t shown,
		       uint64_t v, uint64_t max)
{
	/* bpftrace scales in float; doing the same keeps bars identical */
	int width = (int)((float)v / (float)max * 52);
	char bar[53];

	memset(bar, '@', width);
	bar[width] = '\0';
	fprintf(f, "%-16s%8" PRIu64 " |%-52s|\n", label, shown, bar);
}

static void text_hist(FILE *f, const struct out_entry *e, uint32_t div)
{
	int lo, hi;
	uint64_t max;

	if (!bucket_span(e, e->nbuckets, &lo, &hi, &max))
		return;
	for (int i = lo; i <= hi; i++) {
		char label[64], a[24], b[24];

		if (i == 0) {
			strcpy(label, "(..., 0)");
		} else if (i == 1) {
			strcpy(label, "[0]");
		} else if (i == 2) {
			strcpy(label, "[1]");
		} else {
			pow2_label(a, sizeof(a), i - 2);
			pow2_label(b, sizeof(b), i - 1);
			snprintf(label, sizeof(label), "[%s, %s)", a, b);
		}
		bucket_row(f, label, e->buckets[i] / div, e->buckets[i], max);
	}
}

/* lhist ignores print()'s div, as bpftrace does */
static void text_lhist(FILE *f, const struct out_map *m,
		       const struct out_entry *e)
{
	int nb = out_lhist_nbuckets(m->lmin, m->lmax, m->lstep);
	int lo, hi;
	uint64_t max;

	if (!bucket_span(e, nb, &lo, &hi, &max))
		return;
	for (int i = lo; i <= hi; i++) {
		char label[64], a[24], b[24];

		if (i == 0) {
			lin_label(a, sizeof(a), m->lmin);
			snprintf(label, sizeof(label), "(..., %s)", a);
		} else if (i == nb - 1) {
			lin_label(a, sizeof(a), m->lmax);
			snprintf(label, sizeof(label), "[%s, ...)", a);
		} else {
			lin_label(a, sizeof(a), (i - 1) * m->lstep + m->lmin);
			lin_label(b, sizeof(b), i * m->lstep + m->lmin);
			snprintf(label, sizeof(label), "[%s, %s)", a, b);
		}
		bucket_row(f, label, e->buckets[i], e->buckets[i], max);
	}
}

static void text_scalar(FILE *f, const struct out_val *v, uint32_t div)
{
	if (v->type == OV_INT)
		fprintf(f, "%" PRId64, v->i / (int64_t)div);
	else if (v->type == OV_UINT)
		fprintf(f, "%" PRIu64, (uint64_t)v->i / div);
	else
		out_text_val(f, v);
}

void out_text_map(struct out *o, const struct out_order *ord, uint32_t div)
{
	const struct out_map *m = ord->m;
	FILE *f = o->f;

	/* bpftrace 0.17 shows a keyless count() with no value (never
	 * counted, cleared, deleted) as 0 */
	if (ord->n == 0 && m->agg == OA_COUNT && m->keyless) {
		fprintf(f, "%s: 0\n", m->name);
		return;
	}
	for (size_t i = ord->first; i < ord->n; i++) {
		const struct out_entry *e = out_at(ord, i);

		if (i > ord->first && !m->glued)
			fputc('\n', f);
		fputs(m->name, f);
		out_text_key(f, &e->key);
		fputs(m->agg == OA_SMLOAD ? ":" : ": ", f);
		switch (m->agg) {
		case OA_HIST:
			fputc('\n', f);
			text_hist(f, e, div);
			break;
		case OA_LHIST:
			fputc('\n', f);
			text_lhist(f, m, e);
			break;
		case OA_SMLOAD:
			fputc('\n', f);
			out_smload_text(o, e, div);
			break;
		case OA_AVG:
			fprintf(f, "%" PRId64, out_average(e) / (int64_t)div);
			break;
		case OA_STATS:
			fprintf(f, "count %" PRId64 ", average %" PRId64
				", total %" PRId64, (int64_t)e->count,
				out_average(e), e->total);
			break;
		default:
			text_scalar(f, &e->val, div);
			break;
		}
	}
	fputc('\n', f);
	if (m->agg == OA_AVG || m->agg == OA_STATS)
		fputc('\n', f);
}
