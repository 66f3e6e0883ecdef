// SPDX-License-Identifier: MIT
/*
 * One map in the Prometheus text exposition format (version 0.0.4, which
 * OpenMetrics parsers read too).  Keys become labels: `key` for one,
 * `key0`, `key1`... for a tuple.  Values are integers, as bpftrace keeps
 * them, so a hist or lhist bucket's upper bound `le` is exact: the
 * largest integer the bucket holds.  docs/fleet.md has the mapping.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/metrics.h"
#include "runtime/output_impl.h"

char *metrics_family(const char *name)
{
	const char *base = name[0] == '@' ? name + 1 : name;
	size_t n = strlen(base);
	char *s;

	if (!n) {
		base = "map";
		n = 3;
	}
	s = malloc(sizeof("gputrace_") + n);
	if (!s)
		return NULL;
	strcpy(s, "gputrace_");
	for (size_t i = 0; i < n; i++) {
		char c = base[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_';

		s[9 + i] = ok ? c : '_';
	}
	s[9 + n] = 0;
	return s;
}

/* Length of the valid UTF-8 sequence at P (N bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t len;
	uint32_t cp, min;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2, cp = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3, cp = p[0] & 0x0f, min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4, cp = p[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * A label value: backslash, double quote and line feed escaped, as the
 * format wants; bytes that are not UTF-8 (a label value must be) become
 * U+FFFD.
 */
static void put_escaped(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n) {
		size_t l = utf8_len(p, n);

		if (!l) {
			fputs("\xef\xbf\xbd", f);
			l = 1;
		} else if (*p == '\\') {
			fputs("\\\\", f);
		} else if (*p == '"') {
			fputs("\\\"", f);
		} else if (*p == '\n') {
			fputs("\\n", f);
		} else {
			fwrite(p, 1, l, f);
		}
		p += l;
		n -= l;
	}
}

struct labels {
	FILE *f;
	bool open;
};

static void label_add(struct labels *l, const char *name, const char *val)
{
	fputc(l->open ? ',' : '{', l->f);
	l->open = true;
	fprintf(l->f, "%s=\"", name);
	put_escaped(l->f, val);
	fputc('"', l->f);
}

static void label_val(struct labels *l, const char *name,
		      const struct out_val *v)
{
	char *s = out_val_str(v);

	label_add(l, name, s ? s : "");
	free(s);
}

/* The labels of a key (or a value) V: NAME, or NAME0, NAME1... */
static void label_vals(struct labels *l, const char *name,
		       const struct out_val *v)
{
	char buf[32];

	if (v->type == OV_NONE)
		return;
	if (v->type != OV_TUPLE) {
		label_val(l, name, v);
		return;
	}
	for (int i = 0; i < v->nelems; i++) {
		snprintf(buf, sizeof(buf), "%s%d", name, i);
		label_val(l, buf, &v->elems[i]);
	}
}

/* NAME{key labels[,EXTRA="EVAL"]}, then the caller's value. */
static void sample(FILE *f, const char *name, const char *suffix,
		   const struct out_entry *e, const char *extra,
		   const char *eval)
{
	struct labels l = { f, false };

	fprintf(f, "%s%s", name, suffix);
	label_vals(&l, "key", &e->key);
	if (extra)
		label_add(&l, extra, eval);
	if (l.open)
		fputc('}', f);
	fputc(' ', f);
}

static void put_int(FILE *f, const struct out_val *v)
{
	if (v->type == OV_UINT)
		fprintf(f, "%" PRIu64 "\n", (uint64_t)v->i);
	else
		fprintf(f, "%" PRId64 "\n", v->i);
}

static void header(FILE *f, const char *name, const struct out_map *m,
		   const char *what, const char *type)
{
	/* map names are identifiers: nothing to escape in HELP */
	fprintf(f, "# HELP %s gputrace map %s%s%s\n# TYPE %s %s\n", name,
		m->name, what ? ": " : "", what ? what : "", name, type);
}

/*
 * A plain value: a number as it is; a string, tuple or symbol as label
 * `value` (`value0`...) of a sample 1, the "info" idiom.
 */
static void plain_entry(FILE *f, const char *name, const struct out_entry *e)
{
	struct labels l = { f, false };

	if (e->val.type == OV_INT || e->val.type == OV_UINT) {
		sample(f, name, "", e, NULL, NULL);
		put_int(f, &e->val);
		return;
	}
	fputs(name, f);
	label_vals(&l, "key", &e->key);
	label_vals(&l, "value", &e->val);
	if (l.open)
		fputc('}', f);
	fputs(" 1\n", f);
}

/* The largest integer bucket I of M holds; false for the open top. */
static bool bucket_le(const struct out_map *m, int i, int n, int64_t *le)
{
	if (m->agg == OA_HIST) {
		/* below 0, 0, then [2^k, 2^(k+1)) up to bucket 33, >= 2^31 */
		if (i >= OUT_HIST_BUCKETS - 1)
			return false;
		*le = i == 0 ? -1 : i == 1 ? 0 : ((int64_t)1 << (i - 1)) - 1;
		return true;
	}
	/* lhist: below min, [min + (i-1)*step, min + i*step), at/above
	 * the last inner bound (out_lhist_index) */
	if (i >= n - 1)
		return false;
	*le = i == 0 ? m->lmin - 1 : m->lmin + (int64_t)i * m->lstep - 1;
	return true;
}

static void hist_entry(FILE *f, const char *name, const struct out_map *m,
		       const struct out_entry *e)
{
	uint64_t cum = 0;
	int64_t le;
	char buf[32];

	for (int i = 0; i < e->nbuckets; i++) {
		cum += e->buckets[i];
		if (!bucket_le(m, i, e->nbuckets, &le))
			continue;
		snprintf(buf, sizeof(buf), "%" PRId64, le);
		sample(f, name, "_bucket", e, "le", buf);
		fprintf(f, "%" PRIu64 "\n", cum);
	}
	sample(f, name, "_bucket", e, "le", "+Inf");
	fprintf(f, "%" PRIu64 "\n", cum);
	/* the values added up: the word after the buckets (devrt.h) */
	sample(f, name, "_sum", e, NULL, NULL);
	fprintf(f, "%" PRId64 "\n", e->total);
	sample(f, name, "_count", e, NULL, NULL);
	fprintf(f, "%" PRIu64 "\n", cum);
}

static void smload_entry(FILE *f, const char *name, const struct out_entry *e)
{
	char buf[16];

	for (int i = 0; i < e->nbuckets; i++) {
		snprintf(buf, sizeof(buf), "%d", i);
		sample(f, name, "", e, "sm", buf);
		fprintf(f, "%" PRIu64 "\n", e->buckets[i]);
	}
}

static void stats_map(FILE *f, const struct out_map *m, const char *family)
{
	size_t len = strlen(family) + 5;
	char *avg = malloc(len);

	/* count and sum: a summary without quantiles; the average apart */
	header(f, family, m, "stats() count and sum", "summary");
	for (size_t i = 0; i < m->n; i++) {
		const struct out_entry *e = &m->entries[i];

		sample(f, family, "_sum", e, NULL, NULL);
		fprintf(f, "%" PRId64 "\n", e->total);
		sample(f, family, "_count", e, NULL, NULL);
		fprintf(f, "%" PRIu64 "\n", e->count);
	}
	if (!avg)
		return;
	snprintf(avg, len, "%s_avg", family);
	header(f, avg, m, "stats() average", "gauge");
	for (size_t i = 0; i < m->n; i++) {
		sample(f, avg, "", &m->entries[i], NULL, NULL);
		fprintf(f, "%" PRId64 "\n", out_average(&m->entries[i]));
	}
	free(avg);
}

void metrics_text_map(FILE *f, const struct out_map *m, const char *family)
{
	size_t len = strlen(family) + 7;
	char *total;

	switch (m->agg) {
	case OA_COUNT:
	case OA_SUM:
		/* counters end in _total (Prometheus' naming rules) */
		total = malloc(len);
		if (!total)
			return;
		snprintf(total, len, "%s_total", family);
		header(f, total, m, m->agg == OA_COUNT ? "count()" : "sum()",
		       "counter");
		for (size_t i = 0; i < m->n; i++) {
			sample(f, total, "", &m->entries[i], NULL, NULL);
			put_int(f, &m->entries[i].val);
		}
		free(total);
		return;
	case OA_STATS:
		stats_map(f, m, family);
		return;
	case OA_HIST:
	case OA_LHIST:
		header(f, family, m, m->agg == OA_HIST ? "hist()" : "lhist()",
		       "histogram");
		for (size_t i = 0; i < m->n; i++)
			hist_entry(f, family, m, &m->entries[i]);
		return;
	case OA_SMLOAD:
		header(f, family, m, "smload() per SM", "gauge");
		for (size_t i = 0; i < m->n; i++)
			smload_entry(f, family, &m->entries[i]);
		return;
	case OA_AVG:
		header(f, family, m, "avg()", "gauge");
		for (size_t i = 0; i < m->n; i++) {
			sample(f, family, "", &m->entries[i], NULL, NULL);
			fprintf(f, "%" PRId64 "\n", out_average(&m->entries[i]));
		}
		return;
	default:
		header(f, family, m, m->agg == OA_MIN ? "min()" :
		       m->agg == OA_MAX ? "max()" : NULL, "gauge");
		for (size_t i = 0; i < m->n; i++)
			plain_entry(f, family, &m->entries[i]);
		return;
	}
}
