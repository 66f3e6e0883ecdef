// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "gpucode/kname.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "runtime/kname_fold.h"
#include "runtime/knames.h"
#include "runtime/fmt.h"
#include "runtime/maps.h"
#include "runtime/stacks.h"

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d) {
		fputs("gputrace: out of memory\n", stderr);
		abort();
	}
	return d;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p) {
		fputs("gputrace: out of memory\n", stderr);
		abort();
	}
	return p;
}

static const char **tfmts;
static int ntfmts;

void maps_set_tfmts(const char **fmts, int n)
{
	tfmts = fmts;
	ntfmts = n;
}

/* username: the uid's name, or the number as text when it has none */
static char *user_name(uint64_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[1024], num[24];

	if (!getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) && res)
		return strdup(res->pw_name);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)uid);
	return strdup(num);
}

/* KEY: as a map key, where stacks are indented less and addresses hex */
static void decode(const struct type *t, const void *p, struct out_val *v,
		   bool key)
{
	uint64_t h, w[2];
	int known = 0;
	char tb[256];

	memset(v, 0, sizeof(*v));
	switch (t->kind) {
	case T_PTR:
		v->type = OV_UINT;
		memcpy(&v->i, p, 8);
		break;
	case T_USER:
		memcpy(w, p, 8);
		v->type = OV_STR;
		v->s = user_name(w[0]);
		break;
	case T_PROBE: {
		const char *name;

		memcpy(w, p, 8);
		name = probe_name_of(w[0]);
		v->type = OV_STR;
		v->s = strdup(name ? name : "");
		break;
	}
	case T_TIME:
		memcpy(w, p, 16);
		tb[0] = 0;
		if (w[0] < (uint64_t)ntfmts)
			fmt_strftime(tfmts[w[0]], w[1], tb, sizeof(tb));
		v->type = OV_STR;
		v->s = strdup(tb);
		break;
	case T_BUF:
		memcpy(w, p, 8);
		v->type = OV_STR;
		v->s = fmt_buffer((const char *)p + 8, w[0] < GT_BUFLEN ? w[0] : GT_BUFLEN);
		break;
	case T_INT:
		v->type = t->is_signed ? OV_INT : OV_UINT;
		memcpy(&v->i, p, 8);
		if (key && t->ptr) {
			char buf[24];

			snprintf(buf, sizeof(buf), "0x%" PRIx64, (uint64_t)v->i);
			v->type = OV_STR;
			v->s = xstrdup(buf);
		}
		break;
	case T_STACK:
		v->type = OV_STR;
		v->s = stacks_format(t, p, key);
		break;
	case T_SYM:
		v->type = OV_STR;
		v->s = stacks_sym(t, p);
		break;
	case T_STR:
		v->type = OV_STR;
		h = t->symbol ? kname_key_hash(p, &known) : 0;
		if (t->symbol && known) {
			/* a kernel key: its full name, when known */
			const char *n = knames_lookup(h);
			char buf[40];

			snprintf(buf, sizeof(buf), "unknown#%016llx",
				 (unsigned long long)h);
			v->s = t->base && n ? kname_fold(n) : strdup(n ? n : buf);
			break;
		}
		v->s = strndup(p, GT_STRLEN);
		if (t->symbol && v->s && !strncmp(v->s, "_Z", 2)) {
			/* kernel names: demangled, without parameters */
			char *d = syms_demangle(v->s, true);

			if (d) {
				free((char *)v->s);
				v->s = d;
			}
		}
		if (t->base && v->s) {
			char *f = kname_fold(v->s);

			if (f) {
				free((char *)v->s);
				v->s = f;
			}
		}
		break;
	case T_TUPLE:
		v->type = OV_TUPLE;
		v->nelems = t->nelems;
		v->elems = xcalloc(t->nelems, sizeof(*v->elems));
		for (int i = 0; i < t->nelems; i++)
			decode(t->elems[i], (const char *)p + t->offsets[i],
			       &v->elems[i], key);
		break;
	default:
		v->type = OV_NONE;
	}
}

void maps_decode(const struct type *t, const void *p, struct out_val *v)
{
	decode(t, p, v, false);
}

void maps_val_free(struct out_val *v)
{
	if (v->type == OV_STR)
		free((char *)v->s);
	if (v->type == OV_TUPLE) {
		for (int i = 0; i < v->nelems; i++)
			maps_val_free(&v->elems[i]);
		free(v->elems);
	}
}

static void decode_key(const struct map_sym *m, const void *k, struct out_val *v)
{
	if (!m->key) {
		memset(v, 0, sizeof(*v));
		return;
	}
	if (m->key->nelems == 1)
		decode(m->key->elems[0], k, v, true);
	else
		decode(m->key, k, v, true);
}

static enum out_agg out_agg_of(const struct type *t)
{
	static const enum out_agg a[] = {
		[AGG_COUNT] = OA_COUNT, [AGG_SUM] = OA_SUM, [AGG_MIN] = OA_MIN,
		[AGG_MAX] = OA_MAX, [AGG_AVG] = OA_AVG, [AGG_STATS] = OA_STATS,
		[AGG_HIST] = OA_HIST, [AGG_LHIST] = OA_LHIST,
		[AGG_SMLOAD] = OA_SMLOAD,
	};

	return t->kind == T_AGG ? a[t->agg] : OA_NONE;
}

/* Merge the per-CPU values of one element into E. */
static void merge(const struct map_sym *m, const uint8_t *vals, int ncpu,
		  size_t stride, struct out_entry *e)
{
	const struct type *t = m->val;
	bool any = false;
	int64_t acc = 0;

	for (int c = 0; c < ncpu; c++) {
		const uint8_t *p = vals + c * stride;
		int64_t a, b;

		memcpy(&a, p, 8);
		switch (t->agg) {
		case AGG_COUNT:
		case AGG_SUM:
			acc += a;
			break;
		case AGG_MIN:
		case AGG_MAX:
			memcpy(&b, p + 8, 8);
			if (!b)
				break;
			if (!any ||
			    (t->agg == AGG_MIN ?
			     (t->is_signed ? a < acc : (uint64_t)a < (uint64_t)acc) :
			     (t->is_signed ? a > acc : (uint64_t)a > (uint64_t)acc)))
				acc = a;
			any = true;
			break;
		case AGG_AVG:
		case AGG_STATS:
			memcpy(&b, p + 8, 8);
			e->count += a;
			e->total += b;
			break;
		default:
			break;
		}
	}
	e->val.type = t->agg == AGG_COUNT || !t->is_signed ? OV_UINT : OV_INT;
	e->val.i = acc;
}

static struct out_entry *find_key(struct out_map *om, const struct map_sym *m,
				  const void *key, void **keys, size_t klen)
{
	for (size_t i = 0; i < om->n; i++)
		if (!memcmp(keys[i], key, klen))
			return &om->entries[i];
	return NULL;
}

int maps_read(const struct gt_object *obj, int idx, struct out_map *om)
{
	const struct gt_map_def *d = &obj->maps[idx];
	const struct map_layout *ml = d->meta;
	const struct map_sym *m = ml->sym;
	bool percpu = d->type == GT_MT_PERCPU_HASH;
	int ncpu = percpu ? libbpf_num_possible_cpus() : 1;
	size_t stride = percpu ? (d->value_size + 7) & ~7u : d->value_size;
	size_t klen = ml->has_bucket ? d->key_size - 8 : d->key_size;
	uint8_t *key = xcalloc(1, d->key_size), *next = xcalloc(1, d->key_size);
	uint8_t *vals = xcalloc(ncpu, stride);
	void **keys = xcalloc(d->max_entries + 1, sizeof(void *));
	size_t cap = 16;
	int nb = 0, err = 0;
	void *prev = NULL;

	memset(om, 0, sizeof(*om));
	om->name = m->name;
	om->agg = out_agg_of(m->val);
	om->keyless = !m->key;
	om->glued = m->val->kind == T_STACK || m->val->kind == T_SYM;
	om->lmin = m->lmin;
	om->lmax = m->lmax;
	om->lstep = m->lstep;
	if (om->agg == OA_HIST)
		nb = OUT_HIST_BUCKETS;
	else if (om->agg == OA_LHIST)
		nb = out_lhist_nbuckets(m->lmin, m->lmax, m->lstep);
	om->entries = xcalloc(cap, sizeof(*om->entries));
	while (bpf_map_get_next_key(d->fd, prev, next) == 0) {
		struct out_entry *e;
		uint64_t bucket = 0;

		memcpy(key, next, d->key_size);
		prev = key;
		if (bpf_map_lookup_elem(d->fd, key, vals))
			continue;	/* deleted meanwhile */
		if (ml->has_bucket)
			memcpy(&bucket, key + klen, 8);
		e = ml->has_bucket ? find_key(om, m, key, keys, klen) : NULL;
		if (!e) {
			if (om->n == cap) {
				cap *= 2;
				om->entries = realloc(om->entries, cap * sizeof(*e));
				if (!om->entries)
					abort();
			}
			if (om->n >= d->max_entries) {
				err = -E2BIG;
				break;
			}
			keys[om->n] = xcalloc(1, klen);
			memcpy(keys[om->n], key, klen);
			e = &om->entries[om->n++];
			memset(e, 0, sizeof(*e));
			decode_key(m, key, &e->key);
			if (nb) {
				e->nbuckets = nb;
				e->buckets = xcalloc(nb, sizeof(uint64_t));
			}
		}
		if (nb) {
			/* bucket nb: the sum of the values (gen_hist_sum) */
			for (int c = 0; c < ncpu && bucket <= (uint64_t)nb; c++) {
				uint64_t v;

				memcpy(&v, vals + c * stride, 8);
				if (bucket < (uint64_t)nb)
					e->buckets[bucket] += v;
				else
					e->total = (int64_t)((uint64_t)e->total + v);
			}
		} else if (percpu) {
			merge(m, vals, ncpu, stride, e);
		} else {
			maps_decode(m->val, vals, &e->val);
		}
	}
	for (size_t i = 0; i < om->n; i++)
		free(keys[i]);
	free(keys);
	free(key);
	free(next);
	free(vals);
	if (!err && m->key && type_has_base(m->key))
		maps_fold_alike(om);	/* kname(kernel): one row per name */
	return err;
}

void maps_out_free(struct out_map *om)
{
	for (size_t i = 0; i < om->n; i++) {
		maps_val_free(&om->entries[i].key);
		maps_val_free(&om->entries[i].val);
		free(om->entries[i].buckets);
	}
	free(om->entries);
	memset(om, 0, sizeof(*om));
}

/* All keys of map D, in a malloc'd array of *N keys of d->key_size. */
static uint8_t *all_keys(const struct gt_map_def *d, size_t *n)
{
	uint8_t *keys = xcalloc(d->max_entries + 1, d->key_size);
	void *prev = NULL;

	*n = 0;
	while (*n < d->max_entries &&
	       !bpf_map_get_next_key(d->fd, prev, keys + *n * d->key_size)) {
		prev = keys + *n * d->key_size;
		(*n)++;
	}
	return keys;
}

int maps_clear(const struct gt_object *obj, int idx)
{
	const struct gt_map_def *d = &obj->maps[idx];
	size_t n;
	uint8_t *keys = all_keys(d, &n);

	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(d->fd, keys + i * d->key_size);
	free(keys);
	return 0;
}

int maps_zero(const struct gt_object *obj, int idx)
{
	const struct gt_map_def *d = &obj->maps[idx];
	int ncpu = d->type == GT_MT_PERCPU_HASH ? libbpf_num_possible_cpus() : 1;
	size_t n;
	uint8_t *keys = all_keys(d, &n);
	void *zero = xcalloc(ncpu, (d->value_size + 7) & ~7u);

	for (size_t i = 0; i < n; i++)
		bpf_map_update_elem(d->fd, keys + i * d->key_size, zero, BPF_EXIST);
	free(zero);
	free(keys);
	return 0;
}
