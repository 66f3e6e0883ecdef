// SPDX-License-Identifier: MIT
/*
 * Device map parts into the session's `struct out_map`: every image of a
 * map (one per GPU context) is folded by raw key into a table,
 * what clear()/zero() left is taken off, and the entries are decoded like
 * host keys and combined with the host entries of equal key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agentctl_priv.h"
#include "runtime/maps.h"

/* ------------------------------------------------------- raw tables -- */

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

int agentctl_tab_init(struct agentctl_tab *t, size_t klen, uint32_t nwords)
{
	memset(t, 0, sizeof(*t));
	t->klen = klen;
	t->nwords = nwords;
	return 0;
}

static int tab_grow(struct agentctl_tab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 16, ns = cap * 2;
	uint8_t *k = realloc(t->keys, cap * (t->klen ? t->klen : 1));
	uint64_t *v;
	size_t *s;

	if (!k)
		return -ENOMEM;
	t->keys = k;
	v = realloc(t->vals, cap * (t->nwords ? t->nwords : 1) * 8);
	if (!v)
		return -ENOMEM;
	t->vals = v;
	s = calloc(ns, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = hash_bytes(t->keys + i * t->klen, t->klen,
				      0xcbf29ce484222325ull) & (ns - 1);

		while (s[h])
			h = (h + 1) & (ns - 1);
		s[h] = i + 1;
	}
	free(t->slot);
	t->slot = s;
	t->nslot = ns;
	t->cap = cap;
	return 0;
}

static long tab_find(const struct agentctl_tab *t, const void *key)
{
	size_t h;

	if (!t->nslot)
		return -1;
	h = hash_bytes(key, t->klen, 0xcbf29ce484222325ull) & (t->nslot - 1);
	for (; t->slot[h]; h = (h + 1) & (t->nslot - 1)) {
		size_t i = t->slot[h] - 1;

		if (!memcmp(t->keys + i * t->klen, key, t->klen))
			return (long)i;
	}
	return -1;
}

long agentctl_tab_get(struct agentctl_tab *t, const void *key, bool *added)
{
	long i = tab_find(t, key);
	size_t h;

	*added = false;
	if (i >= 0)
		return i;
	if (t->n == t->cap && tab_grow(t))
		return -ENOMEM;
	memcpy(t->keys + t->n * t->klen, key, t->klen);
	memset(t->vals + t->n * t->nwords, 0, t->nwords * 8ull);
	h = hash_bytes(key, t->klen, 0xcbf29ce484222325ull) & (t->nslot - 1);
	while (t->slot[h])
		h = (h + 1) & (t->nslot - 1);
	t->slot[h] = ++t->n;
	*added = true;
	return (long)t->n - 1;
}

void agentctl_tab_free(struct agentctl_tab *t)
{
	free(t->keys);
	free(t->vals);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------ collecting -- */

struct fold {
	struct agentctl_tab *t;
	const struct devrt_map_desc *d;
	int err;
};

/* Fold one image entry into the table, as the shards were folded. */
static int fold_entry(const void *key, const uint64_t *w, void *arg)
{
	struct fold *f = arg;
	struct agentctl_tab *t = f->t;
	bool added, sgn = f->d->flags & DEVRT_F_SIGNED;
	long i = agentctl_tab_get(t, key ? key : "", &added);
	uint64_t *acc;

	if (i < 0) {
		f->err = (int)i;
		return 1;
	}
	acc = t->vals + i * t->nwords;
	switch (f->d->kind) {
	case DEVRT_K_PLAIN:
		if (added)
			memcpy(acc, w, t->nwords * 8ull);
		break;
	case DEVRT_K_MIN:
	case DEVRT_K_MAX:
		if (!w[1])
			break;
		if (!acc[1] ||
		    (f->d->kind == DEVRT_K_MIN ?
		     (sgn ? (int64_t)w[0] < (int64_t)acc[0] : w[0] < acc[0]) :
		     (sgn ? (int64_t)w[0] > (int64_t)acc[0] : w[0] > acc[0])))
			acc[0] = w[0];
		acc[1] = 1;
		break;
	default:
		for (uint32_t k = 0; k < f->d->nwords && k < t->nwords; k++)
			acc[k] += w[k];
	}
	return 0;
}

int agentctl_collect(struct agentctl *ac, int map, struct agentctl_tab *t)
{
	const struct devrt_map_desc *cd = &ac->cfg.maps[map];
	uint32_t nwords = 0;

	/* smload: as many words as the GPU with the most SMs */
	for (int i = 0; i < ac->nimgs; i++) {
		const struct agentctl_img *im = &ac->imgs[i];

		if (im->map == (uint32_t)map && im->data &&
		    im->desc.nwords > nwords)
			nwords = im->desc.nwords;
	}
	agentctl_tab_init(t, devrt_key_bytes(cd), nwords);
	for (int i = 0; i < ac->nimgs; i++) {
		const struct agentctl_img *im = &ac->imgs[i];
		struct fold f = { .t = t, .d = &im->desc };
		int r;

		if (im->map != (uint32_t)map || !im->data)
			continue;
		r = devrt_map_foreach(&im->desc, im->data, fold_entry, &f);
		if (r < 0 || f.err) {
			agentctl_tab_free(t);
			return r < 0 ? r : f.err;
		}
	}
	return 0;
}

/* ---------------------------------------------------- clear, zero -- */

static void set_base(struct agentctl *ac, int map, bool zero)
{
	struct agentctl_base *b;

	if (!ac || !ac->base || map < 0 || map >= ac->cfg.nmaps ||
	    ac->cfg.maps[map].kind == DEVRT_K_NONE)
		return;
	b = &ac->base[map];
	agentctl_tab_free(&b->tab);
	b->set = !agentctl_collect(ac, map, &b->tab);
	b->zero = zero;
}

void agentctl_clear(struct agentctl *ac, int map_index)
{
	set_base(ac, map_index, false);
}

void agentctl_zero(struct agentctl *ac, int map_index)
{
	set_base(ac, map_index, true);
}

static bool additive(uint32_t kind)
{
	return kind != DEVRT_K_PLAIN && kind != DEVRT_K_MIN &&
	       kind != DEVRT_K_MAX;
}

/*
 * Take the clear()/zero() baseline off entry I of T.  False: the entry
 * did not change since, so clear() hides it.
 */
static bool rebase(const struct agentctl_base *b, uint32_t kind,
		   struct agentctl_tab *t, size_t i)
{
	uint64_t *w = t->vals + i * t->nwords;
	const uint64_t *o;
	long j;
	bool any = false;

	if (!b->set)
		return true;
	j = tab_find(&b->tab, t->keys + i * t->klen);
	if (j < 0)
		return true;
	o = b->tab.vals + j * b->tab.nwords;
	if (additive(kind)) {
		for (uint32_t k = 0; k < t->nwords; k++) {
			w[k] -= k < b->tab.nwords ? o[k] : 0;
			any |= w[k] != 0;
		}
		return any || b->zero;
	}
	if (t->nwords == b->tab.nwords &&
	    !memcmp(w, o, t->nwords * 8ull)) {
		if (!b->zero)
			return false;
		memset(w, 0, t->nwords * 8ull);
		if (kind != DEVRT_K_PLAIN)
			w[1] = 1;	/* min/max: a value, 0 */
	}
	return true;
}

/* ------------------------------------------------------- decoding -- */

static uint64_t val_hash(const struct out_val *v, uint64_t h)
{
	h = hash_bytes(&v->type, sizeof(v->type), h);
	switch (v->type) {
	case OV_INT:
	case OV_UINT:
		return hash_bytes(&v->i, 8, h);
	case OV_STR:
		return v->s ? hash_bytes(v->s, strlen(v->s), h) : h;
	case OV_TUPLE:
		for (int i = 0; i < v->nelems; i++)
			h = val_hash(&v->elems[i], h);
		return h;
	default:
		return h;
	}
}

static void decode_key(const struct map_sym *m, const void *k,
		       struct out_val *v)
{
	memset(v, 0, sizeof(*v));
	if (!m->key)
		return;
	if (m->key->nelems == 1)
		maps_decode(m->key->elems[0], k, v);
	else
		maps_decode(m->key, k, v);
}

static const struct map_sym *map_at(const struct unit *u, int index)
{
	for (const struct map_sym *m = u->maps; m; m = m->next)
		if (m->index == index)
			return m;
	return NULL;
}

static int64_t pick(enum out_agg a, bool sgn, int64_t x, int64_t y)
{
	bool less = sgn ? x < y : (uint64_t)x < (uint64_t)y;

	return (a == OA_MIN) == less ? x : y;
}

/* Add device words W into E (an entry of OM, maybe just made: FRESH). */
static int combine(const struct out_map *om, const struct map_sym *m,
		   struct out_entry *e, const uint64_t *w, uint32_t nwords,
		   bool fresh)
{
	bool sgn = m->val->is_signed;

	switch (om->agg) {
	case OA_NONE:
		if (fresh)
			maps_decode(m->val, w, &e->val);
		break;
	case OA_COUNT:
	case OA_SUM:
		if (fresh)
			e->val.type = om->agg == OA_COUNT || !sgn ?
				      OV_UINT : OV_INT;
		e->val.i = (int64_t)((uint64_t)e->val.i + w[0]);
		break;
	case OA_MIN:
	case OA_MAX:
		if (fresh) {
			e->val.type = sgn ? OV_INT : OV_UINT;
			e->val.i = (int64_t)w[0];
		} else {
			e->val.i = pick(om->agg, sgn, e->val.i, (int64_t)w[0]);
		}
		break;
	case OA_AVG:
	case OA_STATS:
		e->count += w[0];
		e->total = (int64_t)((uint64_t)e->total + w[1]);
		break;
	case OA_HIST:
	case OA_LHIST:
	case OA_SMLOAD: {
		int nb = om->agg == OA_HIST ? OUT_HIST_BUCKETS :
			 om->agg == OA_LHIST ?
			 out_lhist_nbuckets(om->lmin, om->lmax, om->lstep) :
			 (int)nwords, sum = nb;

		if (nb < e->nbuckets)
			nb = e->nbuckets;
		if (nb > e->nbuckets) {
			uint64_t *b = realloc(e->buckets, nb * sizeof(*b));

			if (!b)
				return -ENOMEM;
			memset(b + e->nbuckets, 0,
			       (nb - e->nbuckets) * sizeof(*b));
			e->buckets = b;
			e->nbuckets = nb;
		}
		for (int k = 0; k < nb && k < (int)nwords &&
				(om->agg == OA_SMLOAD || k < sum); k++)
			e->buckets[k] += w[k];
		/* hist, lhist: the sum after the buckets (gpucode/devrt.h) */
		if (om->agg != OA_SMLOAD && (uint32_t)sum < nwords)
			e->total = (int64_t)((uint64_t)e->total + w[sum]);
		break;
	}
	}
	return 0;
}

/* Whether the device entry W holds anything to show. */
static bool has_value(uint32_t kind, const uint64_t *w)
{
	return (kind != DEVRT_K_MIN && kind != DEVRT_K_MAX) || w[1];
}

/* The key of entry IDX of OM, or of the IDX - OM->n th new one. */
static const struct out_val *key_at(const struct out_map *om,
				    const struct out_val *keys,
				    const size_t *creator, long idx)
{
	if ((size_t)idx < om->n)
		return &om->entries[idx].key;
	return &keys[creator[idx - om->n]];
}

int agentctl_merge(struct agentctl *ac, int map_index, struct out_map *om)
{
	const struct map_sym *m;
	struct agentctl_tab t;
	struct out_val *keys = NULL;
	size_t nh = 1, nnew = 0, *hidx = NULL, *creator = NULL;
	long *match = NULL;
	uint32_t kind;
	int err;

	if (!ac || !ac->u || map_index < 0 || map_index >= ac->cfg.nmaps)
		return 0;
	kind = ac->cfg.maps[map_index].kind;
	m = map_at(ac->u, map_index);
	if (kind == DEVRT_K_NONE || !m || !m->val)
		return 0;
	err = agentctl_collect(ac, map_index, &t);
	if (err || !t.n)
		goto out;
	while (nh < 2 * (om->n + t.n))
		nh *= 2;
	err = -ENOMEM;
	hidx = calloc(nh, sizeof(*hidx));
	match = calloc(t.n, sizeof(*match));
	creator = calloc(t.n, sizeof(*creator));
	keys = calloc(t.n, sizeof(*keys));
	if (!hidx || !match || !creator || !keys)
		goto out;
	/* the host entries, hashed by decoded key */
	for (size_t i = 0; i < om->n; i++) {
		size_t h = val_hash(&om->entries[i].key, 0) & (nh - 1);

		while (hidx[h])
			h = (h + 1) & (nh - 1);
		hidx[h] = i + 1;
	}
	/* each device key: an entry of OM, or a new one (two mangled names
	 * that demangle alike share one) */
	for (size_t i = 0; i < t.n; i++) {
		size_t h;

		match[i] = -1;
		if (!rebase(&ac->base[map_index], kind, &t, i) ||
		    !has_value(kind, t.vals + i * t.nwords))
			continue;
		decode_key(m, t.keys + i * t.klen, &keys[i]);
		h = val_hash(&keys[i], 0) & (nh - 1);
		for (; hidx[h]; h = (h + 1) & (nh - 1))
			if (maps_val_eq(key_at(om, keys, creator, hidx[h] - 1),
				   &keys[i])) {
				match[i] = (long)hidx[h] - 1;
				break;
			}
		if (match[i] < 0) {
			creator[nnew] = i;
			match[i] = (long)(om->n + nnew++);
			hidx[h] = match[i] + 1;
		}
	}
	if (nnew) {
		struct out_entry *v = realloc(om->entries,
					      (om->n + nnew) * sizeof(*v));

		if (!v)
			goto out;
		om->entries = v;
		memset(v + om->n, 0, nnew * sizeof(*v));
		for (size_t k = 0; k < nnew; k++) {
			v[om->n + k].key = keys[creator[k]];	/* moved */
			memset(&keys[creator[k]], 0, sizeof(keys[0]));
		}
	}
	err = 0;
	for (size_t i = 0; i < t.n && !err; i++) {
		bool fresh = match[i] >= (long)om->n &&
			     creator[match[i] - om->n] == i;

		if (match[i] >= 0)
			err = combine(om, m, &om->entries[match[i]],
				      t.vals + i * t.nwords, t.nwords, fresh);
	}
	om->n += nnew;
out:
	for (size_t i = 0; keys && i < t.n; i++)
		maps_val_free(&keys[i]);
	free(keys);
	free(creator);
	free(match);
	free(hidx);
	agentctl_tab_free(&t);
	return err;
}
