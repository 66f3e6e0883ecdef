// SPDX-License-Identifier: MIT
/*
 * JSON output: bpftrace 0.17's NDJSON, one {"type": ..., "data": ...}
 * object a line, with its spacing (", " between members, but "," inside
 * tuples).  Empty maps print nothing.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/output_impl.h"

/*
 * Quoted and escaped.  bpftrace 0.17 also escapes bytes >= 0x80 (as
 * "\uffffffc3", from a sign-extended char), which is not JSON; we pass
 * them through so UTF-8 text stays valid.
 */
void out_json_str(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c <= 0x1f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

void out_json_val(FILE *f, const struct out_val *v)
{
	switch (v->type) {
	case OV_INT:
		fprintf(f, "%" PRId64, v->i);
		break;
	case OV_UINT:
		fprintf(f, "%" PRIu64, (uint64_t)v->i);
		break;
	case OV_STR:
		out_json_str(f, v->s ? v->s : "", v->s ? strlen(v->s) : 0);
		break;
	case OV_TUPLE:
		fputc('[', f);
		for (int i = 0; i < v->nelems; i++) {
			if (i)
				fputc(',', f);
			out_json_val(f, &v->elems[i]);
		}
		fputc(']', f);
		break;
	default:
		fputs("null", f);
		break;
	}
}

/* Keys are their text forms joined by "," and quoted: "x,1". */
static void json_key(FILE *f, const struct out_val *key)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m) {
		fputs("\"\"", f);
		return;
	}
	if (key->type == OV_TUPLE) {
		for (int i = 0; i < key->nelems; i++) {
			if (i)
				fputc(',', m);
			out_text_val(m, &key->elems[i]);
		}
	} else {
		out_text_val(m, key);
	}
	if (fclose(m) == 0)
		out_json_str(f, buf, len);
	else
		fputs("\"\"", f);
	free(buf);
}

static bool bucket_span(const struct out_entry *e, int nb, int *lo, int *hi)
{
	*lo = -1;
	*hi = -1;
	for (int i = 0; i < nb && i < e->nbuckets; i++) {
		if (e->buckets[i]) {
			if (*lo < 0)
				*lo = i;
			*hi = i;
		}
	}
	return *hi >= 0;
}

static void json_hist(FILE *f, const struct out_entry *e, uint32_t div)
{
	int lo, hi;

	fputc('[', f);
	if (bucket_span(e, e->nbuckets, &lo, &hi)) {
		for (int i = lo; i <= hi; i++) {
			int k = i - 2;

			fputs(i > lo ? ", {" : "{", f);
			if (i == 0)
				fputs("\"max\": -1, ", f);
			else if (i < 3)
				fprintf(f, "\"min\": %d, \"max\": %d, ", k + 1,
					k + 1);
			else if (k < 31)
				fprintf(f, "\"min\": %lld, \"max\": %lld, ",
					1LL << k, (1LL << (k + 1)) - 1);
			else	/* 0.17 computes 1 << 31 in int: keep its bounds */
				fputs("\"min\": -2147483648, \"max\": 0, ", f);
			fprintf(f, "\"count\": %" PRIu64 "}",
				e->buckets[i] / div);
		}
	}
	fputc(']', f);
}

static void json_lhist(FILE *f, const struct out_map *m,
		       const struct out_entry *e)
{
	int nb = out_lhist_nbuckets(m->lmin, m->lmax, m->lstep);
	int lo, hi;

	fputc('[', f);
	if (bucket_span(e, nb, &lo, &hi)) {
		for (int i = lo; i <= hi; i++) {
			fputs(i > lo ? ", {" : "{", f);
			if (i == 0)
				fprintf(f, "\"max\": %" PRId64 ", ",
					m->lmin - 1);
			else if (i == nb - 1)
				fprintf(f, "\"min\": %" PRId64 ", ", m->lmax);
			else
				fprintf(f, "\"min\": %" PRId64 ", \"max\": %"
					PRId64 ", ",
					(i - 1) * m->lstep + m->lmin,
					i * m->lstep + m->lmin - 1);
			fprintf(f, "\"count\": %" PRIu64 "}", e->buckets[i]);
		}
	}
	fputc(']', f);
}

static void json_value(struct out *o, const struct out_map *m,
		       const struct out_entry *e, uint32_t div)
{
	FILE *f = o->f;

	switch (m->agg) {
	case OA_HIST:
		json_hist(f, e, div);
		break;
	case OA_LHIST:
		json_lhist(f, m, e);
		break;
	case OA_SMLOAD:
		out_smload_json(o, e, div);
		break;
	case OA_AVG:
		fprintf(f, "%" PRId64, out_average(e) / (int64_t)div);
		break;
	case OA_STATS:
		fprintf(f, "{\"count\": %" PRId64 ", \"average\": %" PRId64
			", \"total\": %" PRId64 "}", (int64_t)e->count,
			out_average(e), e->total);
		break;
	default:
		if (e->val.type == OV_INT)
			fprintf(f, "%" PRId64, e->val.i / (int64_t)div);
		else if (e->val.type == OV_UINT)
			fprintf(f, "%" PRIu64, (uint64_t)e->val.i / div);
		else
			out_json_val(f, &e->val);
		break;
	}
}

static const char *json_type(enum out_agg agg)
{
	switch (agg) {
	case OA_HIST:
	case OA_LHIST:
		return "hist";
	case OA_AVG:
	case OA_STATS:
		return "stats";
	case OA_SMLOAD:
		return "smload";
	default:
		return "map";
	}
}

void out_json_map(struct out *o, const struct out_order *ord, uint32_t div)
{
	const struct out_map *m = ord->m;
	bool keyed = out_keyed(m);
	FILE *f = o->f;

	if (!ord->n)
		return;
	fprintf(f, "{\"type\": \"%s\", \"data\": {", json_type(m->agg));
	out_json_str(f, m->name, strlen(m->name));
	fputs(keyed ? ": {" : ": ", f);
	for (size_t i = ord->first; i < ord->n; i++) {
		const struct out_entry *e = out_at(ord, i);

		if (i > ord->first)
			fputs(", ", f);
		if (keyed) {
			json_key(f, &e->key);
			fputs(": ", f);
		}
		json_value(o, m, e, div);
	}
	fputs(keyed ? "}}}\n" : "}}\n", f);
}
