// SPDX-License-Identifier: MIT
/*
 * Output: bucket indexes, the order bpftrace prints map entries in, and
 * the public entry points, which hand each job to the text or JSON side.
 */
#define _GNU_SOURCE		/* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "runtime/output_impl.h"

int out_hist_index(int64_t n)
{
	int i = 0;

	if (n < 0)
		return 0;
	if (n == 0)
		return 1;
	/* bpftrace 0.17's log2 tests 16, 8, 4, 2, 1 bits: it tops out at 31 */
	if (n >= (int64_t)1 << 31)
		return 2 + 31;
	while (n >>= 1)
		i++;
	return 2 + i;
}

int out_lhist_nbuckets(int64_t min, int64_t max, int64_t step)
{
	if (step <= 0 || max <= min)
		return 2;
	return (int)((max - min) / step) + 2;
}

int out_lhist_index(int64_t n, int64_t min, int64_t max, int64_t step)
{
	int last = out_lhist_nbuckets(min, max, step) - 1;

	if (n < min)
		return 0;
	if (n >= max || step <= 0)
		return last;
	/* max - min need not be a multiple of step: the top slice joins max */
	int64_t i = 1 + (n - min) / step;
	return i > last ? last : (int)i;
}

int64_t out_average(const struct out_entry *e)
{
	int64_t count = (int64_t)e->count;

	if (count == 0)
		return 0;
	if (count == -1)	/* INT64_MIN / -1 traps */
		return -e->total;
	return e->total / count;
}

uint64_t out_bucket_sum(const struct out_entry *e)
{
	uint64_t sum = 0;

	for (int i = 0; i < e->nbuckets; i++)
		sum += e->buckets[i];
	return sum;
}

bool out_keyed(const struct out_map *m)
{
	return m->n && m->entries[0].key.type != OV_NONE;
}

/*
 * Keys as bpftrace's sort_by_key orders them: integers as unsigned 64-bit
 * (so -1 sorts after 2, as in bpftrace), strings by strcmp, tuples field
 * by field.
 */
static int key_cmp(const struct out_val *a, const struct out_val *b)
{
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	switch (a->type) {
	case OV_INT:
	case OV_UINT:
		if ((uint64_t)a->i != (uint64_t)b->i)
			return (uint64_t)a->i < (uint64_t)b->i ? -1 : 1;
		return 0;
	case OV_STR:
		return strcmp(a->s ? a->s : "", b->s ? b->s : "");
	case OV_TUPLE:
		for (int i = 0; i < a->nelems && i < b->nelems; i++) {
			int c = key_cmp(&a->elems[i], &b->elems[i]);

			if (c)
				return c;
		}
		return (a->nelems > b->nelems) - (a->nelems < b->nelems);
	default:
		return 0;
	}
}

#define CMP3(x, y) (((x) > (y)) - ((x) < (y)))

/* Ascending by the value bpftrace sorts on; 0 where it sorts by key. */
static int value_cmp(enum out_agg agg, const struct out_entry *a,
		     const struct out_entry *b)
{
	switch (agg) {
	case OA_AVG:
	case OA_STATS:
		return CMP3(out_average(a), out_average(b));
	case OA_HIST:
	case OA_LHIST:
	case OA_SMLOAD:
		return CMP3(out_bucket_sum(a), out_bucket_sum(b));
	default:
		break;
	}
	if (a->val.type == OV_INT && b->val.type == OV_INT)
		return CMP3(a->val.i, b->val.i);
	if (a->val.type == OV_UINT && b->val.type == OV_UINT)
		return CMP3((uint64_t)a->val.i, (uint64_t)b->val.i);
	return 0;
}

static int entry_cmp(const void *pa, const void *pb, void *arg)
{
	const struct out_entry *a = *(const struct out_entry *const *)pa;
	const struct out_entry *b = *(const struct out_entry *const *)pb;
	int c = value_cmp(*(const enum out_agg *)arg, a, b);

	/* bpftrace leaves ties in hash-table order; ours are by key */
	return c ? c : key_cmp(&a->key, &b->key);
}

static void order_init(struct out_order *ord, const struct out_map *m,
		       uint32_t top)
{
	ord->m = m;
	ord->n = m->n;
	ord->first = top && m->n > top ? m->n - top : 0;
	ord->v = m->n ? malloc(m->n * sizeof(*ord->v)) : NULL;
	if (!ord->v)
		return;
	for (size_t i = 0; i < m->n; i++)
		ord->v[i] = &m->entries[i];
	qsort_r(ord->v, m->n, sizeof(*ord->v), entry_cmp, (void *)&m->agg);
}

void out_map_top(struct out *o, const struct out_map *m, uint32_t top,
		 uint32_t div)
{
	struct out_order ord;

	/* bpftrace ignores both for stats() (and warns when compiling) */
	if (m->agg == OA_STATS) {
		top = 0;
		div = 1;
	}
	if (!div)
		div = 1;
	order_init(&ord, m, top);
	if (o->fmt == OUT_JSON)
		out_json_map(o, &ord, div);
	else
		out_text_map(o, &ord, div);
	free(ord.v);
	out_flush(o);
}

void out_flush(struct out *o)
{
	if (!o->full)
		fflush(o->f);
}

void out_map(struct out *o, const struct out_map *m)
{
	out_map_top(o, m, 0, 1);
}

void out_exit_begin(struct out *o)
{
	FILE *f = o->blank ? o->blank : o->f;

	/* bpftrace prints these in JSON mode too */
	out_flush(o);
	fputs("\n\n", f);
	fflush(f);
}

static void message(struct out *o, const char *type, const char *text,
		    size_t len)
{
	if (o->fmt == OUT_JSON) {
		fprintf(o->f, "{\"type\": \"%s\", \"data\": ", type);
		out_json_str(o->f, text, len);
		fputs("}\n", o->f);
	} else {
		fwrite(text, 1, len, o->f);
	}
	out_flush(o);
}

void out_printf(struct out *o, const char *text, size_t len)
{
	message(o, "printf", text, len);
}

void out_time(struct out *o, const char *text)
{
	message(o, "time", text, strlen(text));
}

void out_value(struct out *o, const struct out_val *v)
{
	if (o->fmt == OUT_JSON) {
		fputs("{\"type\": \"value\", \"data\": ", o->f);
		out_json_val(o->f, v);
		fputs("}\n", o->f);
	} else {
		out_text_val(o->f, v);
		fputc('\n', o->f);
	}
	out_flush(o);
}

void out_attached(struct out *o, int nprobes)
{
	if (o->fmt == OUT_JSON)
		fprintf(o->f, "{\"type\": \"attached_probes\", "
			"\"data\": {\"probes\": %d}}\n", nprobes);
	else
		fprintf(o->f, "Attaching %d probe%s...\n", nprobes,
			nprobes == 1 ? "" : "s");
	out_flush(o);
}

void out_lost(struct out *o, uint64_t n)
{
	if (o->fmt == OUT_JSON)
		fprintf(o->f, "{\"type\": \"lost_events\", "
			"\"data\": {\"events\": %llu}}\n", (unsigned long long)n);
	else
		fprintf(o->f, "Lost %llu events\n", (unsigned long long)n);
	out_flush(o);
}

char *out_val_str(const struct out_val *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	out_text_val(f, v);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}
