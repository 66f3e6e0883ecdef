// SPDX-License-Identifier: MIT
/*
 * smload(): per-SM load.  bpftrace has nothing like it, so the format is
 * ours (docs/output.md): a stats()-style summary line, then a grid of one
 * cell per SM, 16 a row, each cell shaded by its load relative to the
 * busiest SM.
 */
#include <inttypes.h>
#include <string.h>

#include "runtime/output_impl.h"

#define SM_PER_ROW 16

/* Index 0 is idle; the rest rise to the busiest SM's load. */
static const char *const utf8_shades[] = {
	" ", "\u2581", "\u2582", "\u2583", "\u2584",
	"\u2585", "\u2586", "\u2587", "\u2588",
};
static const char ascii_shades[] = " .:-=+*#%@";

void out_smload_sum(const uint64_t *v, int n, uint32_t div,
		    struct out_smsum *s)
{
	memset(s, 0, sizeof(*s));
	s->nsms = n;
	s->min_sm = -1;
	s->max_sm = -1;
	for (int i = 0; i < n; i++) {
		uint64_t x = v[i] / div;

		s->total += x;
		if (!x)
			s->idle++;
		if (s->min_sm < 0 || x < s->min) {
			s->min = x;
			s->min_sm = i;
		}
		if (s->max_sm < 0 || x > s->max) {
			s->max = x;
			s->max_sm = i;
		}
	}
	if (n)
		s->mean = (double)s->total / n;
	if (s->mean > 0)
		s->imbalance = (double)s->max / s->mean;
}

/*
 * Fixed-point text for a non-negative double, without printf's %f so a
 * locale set elsewhere (libedit) cannot turn the '.' into a ','.
 */
static void fixed(FILE *f, double x, int decimals)
{
	uint64_t scale = 1;

	for (int i = 0; i < decimals; i++)
		scale *= 10;
	if (!(x >= 0) || x > 1e15)	/* NaN, negative or absurd */
		x = 0;
	uint64_t r = (uint64_t)(x * scale + 0.5);

	fprintf(f, "%" PRIu64 ".%0*" PRIu64, r / scale, decimals, r % scale);
}

/* 0 for idle, else 1..levels: any load shows, the busiest is full */
static int shade(uint64_t x, uint64_t max, int levels)
{
	if (!x || !max)
		return 0;
	unsigned __int128 l = ((unsigned __int128)x * levels + max - 1) / max;

	return l > (unsigned)levels ? levels : (int)l;
}

static int digits(int n)
{
	int d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

void out_smload_text(struct out *o, const struct out_entry *e, uint32_t div)
{
	int levels = o->utf8 ? 8 : (int)strlen(ascii_shades) - 1;
	struct out_smsum s;
	FILE *f = o->f;
	int w;

	out_smload_sum(e->buckets, e->nbuckets, div, &s);
	fprintf(f, "  SMs %d, total %" PRIu64 ", mean ", s.nsms, s.total);
	fixed(f, s.mean, 2);
	fprintf(f, ", min %" PRIu64 " (SM %d), max %" PRIu64 " (SM %d), "
		"imbalance ", s.min, s.min_sm, s.max, s.max_sm);
	fixed(f, s.imbalance, 2);
	fprintf(f, ", idle %d\n", s.idle);
	if (!s.nsms)
		return;

	w = digits(s.nsms - 1);
	if (w < 3)
		w = 3;
	for (int i = 0; i < s.nsms; i++) {
		int l = shade(e->buckets[i] / div, s.max, levels);

		if (i % SM_PER_ROW == 0)
			fprintf(f, "  SM %*d |", w, i);
		/* two glyphs a cell: square-ish cells, readable bars */
		for (int k = 0; k < 2; k++) {
			if (o->utf8)
				fputs(utf8_shades[l], f);
			else
				fputc(ascii_shades[l], f);
		}
		if (i % SM_PER_ROW == SM_PER_ROW - 1 || i == s.nsms - 1)
			fputs("|\n", f);
	}
	fprintf(f, "  scale: '%s' idle ... '%s' %" PRIu64 " (max)\n",
		o->utf8 ? utf8_shades[0] : " ",
		o->utf8 ? utf8_shades[levels] : "@", s.max);
}

void out_smload_json(struct out *o, const struct out_entry *e, uint32_t div)
{
	struct out_smsum s;
	FILE *f = o->f;

	out_smload_sum(e->buckets, e->nbuckets, div, &s);
	fputs("{\"sms\": [", f);
	for (int i = 0; i < e->nbuckets; i++)
		fprintf(f, i ? ", %" PRIu64 : "%" PRIu64, e->buckets[i] / div);
	fprintf(f, "], \"total\": %" PRIu64 ", \"mean\": ", s.total);
	fixed(f, s.mean, 3);
	fprintf(f, ", \"min\": %" PRIu64 ", \"min_sm\": %d, \"max\": %" PRIu64
		", \"max_sm\": %d, \"imbalance\": ", s.min, s.min_sm, s.max,
		s.max_sm);
	fixed(f, s.imbalance, 3);
	fprintf(f, ", \"idle\": %d}", s.idle);
}
