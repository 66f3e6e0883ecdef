// SPDX-License-Identifier: MIT
/*
 * Rows keyed by kname(kernel): instantiations of one template are
 * distinct keys in the map (the key is the hash of the mangled name) but
 * print as one short name, so their values are combined into one row, as
 * Nsight Systems sums kernels by base name.  The device half of a map is
 * folded by printed key already (agentctl_merge.c).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/maps.h"

bool type_has_base(const struct type *t)
{
	if (t->kind == T_STR)
		return t->base;
	if (t->kind == T_TUPLE)
		for (int i = 0; i < t->nelems; i++)
			if (type_has_base(t->elems[i]))
				return true;
	return false;
}

bool maps_val_eq(const struct out_val *a, const struct out_val *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case OV_INT:
	case OV_UINT:
		return a->i == b->i;
	case OV_STR:
		return a->s && b->s && !strcmp(a->s, b->s);
	case OV_TUPLE:
		if (a->nelems != b->nelems)
			return false;
		for (int i = 0; i < a->nelems; i++)
			if (!maps_val_eq(&a->elems[i], &b->elems[i]))
				return false;
		return true;
	default:
		return true;
	}
}

/* E's value added into INTO; E's own buffers freed. */
static void combine(enum out_agg agg, struct out_entry *into,
		    struct out_entry *e)
{
	bool sgn = into->val.type == OV_INT;

	switch (agg) {
	case OA_COUNT:
	case OA_SUM:
		into->val.i = (int64_t)((uint64_t)into->val.i +
					(uint64_t)e->val.i);
		break;
	case OA_MIN:
	case OA_MAX: {
		bool less = sgn ? e->val.i < into->val.i :
			    (uint64_t)e->val.i < (uint64_t)into->val.i;

		if ((agg == OA_MIN) == less)
			into->val.i = e->val.i;
		break;
	}
	case OA_AVG:
	case OA_STATS:
		into->count += e->count;
		into->total = (int64_t)((uint64_t)into->total +
					(uint64_t)e->total);
		break;
	default:
		for (int k = 0; k < e->nbuckets && k < into->nbuckets; k++)
			into->buckets[k] += e->buckets[k];
		break;	/* OA_NONE: the first row's value stays */
	}
	maps_val_free(&e->key);
	maps_val_free(&e->val);
	free(e->buckets);
}

void maps_fold_alike(struct out_map *om)
{
	size_t n = 0;

	/* quadratic, over the few hundred kernels a program has */
	for (size_t i = 0; i < om->n; i++) {
		size_t j;

		for (j = 0; j < n; j++)
			if (maps_val_eq(&om->entries[j].key, &om->entries[i].key))
				break;
		if (j < n)
			combine(om->agg, &om->entries[j], &om->entries[i]);
		else
			om->entries[n++] = om->entries[i];
	}
	om->n = n;
}
