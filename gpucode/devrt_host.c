/* SPDX-License-Identifier: MIT */
/*
 * Host side of the device runtime's layout (gpucode/devrt.h): sizes,
 * initial images, and reading maps and printf rings back from host copies
 * of device memory, so the agent never guesses offsets.
 */
#include "gpucode/devrt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 4096u
#define WORDS_MAX 65536u

size_t devrt_ctx_bytes(uint32_t nmaps)
{
	return DEVRT_CTX_SIZE + (size_t)nmaps * DEVRT_DESC_SIZE;
}

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

int devrt_map_layout(struct devrt_map_desc *d)
{
	if (!d->nshards || d->key_size > KEY_MAX)
		return -EINVAL;
	if (!d->key_size)
		d->capacity = 1;
	if (!d->capacity || (d->capacity & (d->capacity - 1)))
		return -EINVAL;
	switch (d->kind) {
	case DEVRT_K_NONE:
		d->nwords = 0;
		break;
	case DEVRT_K_PLAIN:
		if (!d->value_size || d->value_size > WORDS_MAX * 8)
			return -EINVAL;
		d->nwords = (d->value_size + 7) / 8;
		break;
	case DEVRT_K_COUNT:
	case DEVRT_K_SUM:
		d->nwords = 1;
		break;
	case DEVRT_K_MIN:
	case DEVRT_K_MAX:
	case DEVRT_K_AVG:
	case DEVRT_K_STATS:
		d->nwords = 2;
		break;
	case DEVRT_K_HIST:
		d->nwords = DEVRT_HIST_WORDS;
		break;
	case DEVRT_K_LHIST:
		if (d->lstep <= 0 || d->lmax <= d->lmin ||
		    (uint64_t)(d->lmax - d->lmin) / (uint64_t)d->lstep >
		    WORDS_MAX - 3)
			return -EINVAL;
		/* the buckets, then the sum */
		d->nwords = (uint32_t)((d->lmax - d->lmin) / d->lstep) + 3;
		break;
	case DEVRT_K_SMLOAD:
		if (!d->nwords || d->nwords > WORDS_MAX)
			return -EINVAL;
		/* the inline update picks shard smid % DEVRT_SMLOAD_SHARDS */
		if (!d->key_size && d->nshards != DEVRT_SMLOAD_SHARDS)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (d->kind != DEVRT_K_PLAIN)
		d->value_size = d->nwords * 8;
	d->slot_bytes = 16 + devrt_key_bytes(d) + d->nwords * 8;
	d->shard_bytes = round_up(DEVRT_LINE + (uint64_t)d->capacity *
				  d->slot_bytes, DEVRT_LINE);
	return 0;
}

uint64_t devrt_map_bytes(const struct devrt_map_desc *d)
{
	return (uint64_t)d->nshards * d->shard_bytes;
}

void devrt_map_used(const struct devrt_map_desc *d, uint32_t used,
		    struct devrt_map_desc *out)
{
	struct devrt_map_desc t = *d;

	/* slot i is kernel slot i in every shard (foreach_kernel) */
	if ((d->flags & DEVRT_F_KERNEL) && d->key_size) {
		t.capacity = used < 1 ? 1 : used > d->capacity ?
			     d->capacity : used;
		t.shard_bytes = DEVRT_LINE + (uint64_t)t.capacity *
					     d->slot_bytes;
	}
	*out = t;
}

static const uint8_t *slot_at(const struct devrt_map_desc *d,
			      const void *image, uint32_t shard, uint32_t i)
{
	return (const uint8_t *)image + (uint64_t)shard * d->shard_bytes +
	       DEVRT_LINE + (uint64_t)i * d->slot_bytes;
}

bool devrt_map_zero_init(const struct devrt_map_desc *d)
{
	return d->key_size ||
	       (d->kind != DEVRT_K_MIN && d->kind != DEVRT_K_MAX);
}

void devrt_map_init(const struct devrt_map_desc *d, void *image)
{
	bool sgn = d->flags & DEVRT_F_SIGNED;
	uint64_t v;

	memset(image, 0, devrt_map_bytes(d));
	if (devrt_map_zero_init(d))
		return;
	if (d->kind == DEVRT_K_MIN)
		v = sgn ? (uint64_t)INT64_MAX : UINT64_MAX;
	else
		v = sgn ? (uint64_t)INT64_MIN : 0;
	for (uint32_t s = 0; s < d->nshards; s++)
		memcpy((uint8_t *)slot_at(d, image, s, 0) + 16, &v, 8);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Fold the value words SRC of one shard into ACC (ANY: ACC holds data). */
static void merge(const struct devrt_map_desc *d, uint64_t *acc,
		  const uint8_t *src, bool any)
{
	bool sgn = d->flags & DEVRT_F_SIGNED;
	uint64_t a, b;

	switch (d->kind) {
	case DEVRT_K_PLAIN:
		if (!any)
			memcpy(acc, src, d->nwords * 8);
		break;
	case DEVRT_K_MIN:
	case DEVRT_K_MAX:
		if (!rd64(src + 8))
			break;
		a = acc[0];
		b = rd64(src);
		if (!acc[1] ||
		    (d->kind == DEVRT_K_MIN ?
		     (sgn ? (int64_t)b < (int64_t)a : b < a) :
		     (sgn ? (int64_t)b > (int64_t)a : b > a)))
			acc[0] = b;
		acc[1] = 1;
		break;
	default:
		for (uint32_t i = 0; i < d->nwords; i++)
			acc[i] += rd64(src + i * 8);
	}
}

struct ent {
	const uint8_t *key;	/* in the image: words, zero padded */
	uint64_t *val;
};

static size_t g_klen;	/* qsort has no argument: set per call */

static int ent_cmp(const void *a, const void *b)
{
	return memcmp(((const struct ent *)a)->key,
		      ((const struct ent *)b)->key, g_klen);
}

/*
 * Inline count(), hist() and smload() updates of maps without key do not
 * set the live word (ptx_lower_insn.c): count and hist updates add at
 * least 1, so a nonzero word says the same; an smload map whose loads
 * were all 0 is not printed (a picture of nothing).  An inline sum (a
 * warp clause's) sets it only for values <= 0: a total that positive
 * values alone made is nonzero.
 */
static bool counted(const struct devrt_map_desc *d, const uint8_t *val)
{
	/* per kernel (DEVRT_F_KERNEL): the same inline updates, keyed */
	if ((d->key_size && !(d->flags & DEVRT_F_KERNEL)) ||
	    (d->kind != DEVRT_K_COUNT && d->kind != DEVRT_K_HIST &&
	     d->kind != DEVRT_K_SMLOAD && d->kind != DEVRT_K_SUM))
		return false;
	for (uint32_t i = 0; i < d->nwords; i++)
		if (rd64(val + i * 8))
			return true;
	return false;
}

void devrt_hot_words(const struct devrt_map_desc *d, int nmaps,
		     uint64_t hot[2 * DEVRT_HOT_MAPS])
{
	memset(hot, 0, 2 * DEVRT_HOT_MAPS * sizeof(*hot));
	for (int m = 0; m < nmaps && m < DEVRT_HOT_MAPS; m++) {
		uint64_t hi = d[m].kind == DEVRT_K_SMLOAD ? d[m].nwords :
			      d[m].nshards - 1;

		/* a slot without key is a few words: shard_bytes is small */
		if (d[m].key_size || d[m].kind == DEVRT_K_NONE)
			continue;
		hot[2 * m] = d[m].base;
		hot[2 * m + 1] = d[m].shard_bytes | hi << 32;
	}
}

/* Slot P holds an entry: claimed (a map with key), and live or counted. */
static bool is_entry(const struct devrt_map_desc *d, const uint8_t *p)
{
	size_t klen = devrt_key_bytes(d);

	if (d->key_size && !(rd64(p) & DEVRT_SLOT_FULL))
		return false;
	return rd64(p + 8) || counted(d, p + 16 + klen);
}

/*
 * Sort the N entries E by key, fold each run of equal keys (an entry's
 * words: VAL when set, else the image's words after its key) and call
 * FN once per key; the number of calls.
 */
static int emit(const struct devrt_map_desc *d, struct ent *e, size_t n,
		devrt_entry_fn fn, void *arg)
{
	size_t klen = devrt_key_bytes(d), nout = 0;
	uint64_t *vals;

	if (!n)
		return 0;
	g_klen = klen;
	if (klen)
		qsort(e, n, sizeof(*e), ent_cmp);
	vals = calloc(n, d->nwords ? (size_t)d->nwords * 8 : 8);
	if (!vals)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		uint64_t *acc = vals + nout * d->nwords;
		size_t j = i;

		for (; j < n && (j == i || !memcmp(e[j].key, e[i].key, klen));
		     j++)
			merge(d, acc, e[j].val ? (const uint8_t *)e[j].val :
				      e[j].key + klen, j > i);
		nout++;
		if (fn(d->key_size ? e[i].key : NULL, acc, arg))
			break;
		i = j;
	}
	free(vals);
	return (int)nout;
}

/*
 * A map kept per kernel (DEVRT_F_KERNEL) holds one kernel in slot i of
 * every shard (the agent writes it there; the device never claims
 * slots), so its shards fold slot by slot: up to 1024 x 1024 copies
 * are not sorted (330 ms for a full map), only the slots that counted.
 * Two slots with the same key (one name in two modules) still fold
 * into one entry.
 */
static int foreach_kernel(const struct devrt_map_desc *d, const void *image,
			  devrt_entry_fn fn, void *arg)
{
	size_t klen = devrt_key_bytes(d), n = 0;
	struct ent *e = calloc(d->capacity, sizeof(*e));
	uint64_t *sums = calloc(d->capacity, (size_t)d->nwords * 8);
	int ret = -ENOMEM;

	if (!e || !sums)
		goto out;
	for (uint32_t i = 0; i < d->capacity; i++) {
		uint64_t *acc = sums + n * d->nwords;
		bool any = false;

		for (uint32_t s = 0; s < d->nshards; s++) {
			const uint8_t *p = slot_at(d, image, s, i);

			if (!is_entry(d, p))
				continue;
			if (!any)
				e[n].key = p + 16;
			merge(d, acc, p + 16 + klen, any);
			any = true;
		}
		if (any)
			e[n++].val = acc;
	}
	ret = emit(d, e, n, fn, arg);
out:
	free(sums);
	free(e);
	return ret;
}

int devrt_map_foreach(const struct devrt_map_desc *d, const void *image,
		      devrt_entry_fn fn, void *arg)
{
	size_t n = 0, cap = 0;
	struct ent *e = NULL;
	int ret;

	if (d->kind == DEVRT_K_NONE || !d->nshards)
		return 0;
	if ((d->flags & DEVRT_F_KERNEL) && d->key_size)
		return foreach_kernel(d, image, fn, arg);
	/* every live slot of every shard, then merged by key */
	for (uint32_t s = 0; s < d->nshards; s++) {
		for (uint32_t i = 0; i < d->capacity; i++) {
			const uint8_t *p = slot_at(d, image, s, i);

			if (!is_entry(d, p))
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct ent *ne = realloc(e, nc * sizeof(*e));

				if (!ne) {
					free(e);
					return -ENOMEM;
				}
				e = ne;
				cap = nc;
			}
			e[n].key = p + 16;
			e[n].val = NULL;
			n++;
		}
	}
	ret = emit(d, e, n, fn, arg);
	free(e);
	return ret;
}

uint64_t devrt_map_drops(const struct devrt_map_desc *d, const void *image)
{
	uint64_t n = 0;

	for (uint32_t s = 0; s < d->nshards; s++)
		n += rd64((const uint8_t *)image + (uint64_t)s * d->shard_bytes);
	return n;
}

uint64_t devrt_rings_bytes(uint32_t nrings, uint32_t ring_bytes)
{
	return (uint64_t)nrings * (DEVRT_LINE + ring_bytes);
}

int devrt_ring_read(const void *ring, uint32_t ring_bytes, uint64_t *tail,
		    devrt_rec_fn fn, void *arg)
{
	const uint8_t *data = (const uint8_t *)ring + DEVRT_LINE;
	uint64_t head = rd64(ring), t = *tail, m = ring_bytes - 1;
	uint8_t *buf;
	int n = 0;

	if (!ring_bytes || (ring_bytes & m))
		return 0;
	buf = malloc(ring_bytes);
	if (!buf)
		return -ENOMEM;
	while (t + DEVRT_REC_HDR <= head) {
		uint64_t w = rd64(data + ((t + 8) & m)), len;
		uint32_t size = (uint32_t)(w >> 32);

		if (rd64(data + (t & m)) != (t ^ DEVRT_SEQ_KEY))
			break;	/* reserved, not yet committed */
		len = DEVRT_REC_HDR + round_up(size, 8);
		if (len > ring_bytes || t + len > head)
			break;
		for (uint64_t i = 0; i < len - DEVRT_REC_HDR; i += 8)
			memcpy(buf + i, data + ((t + DEVRT_REC_HDR + i) & m), 8);
		fn((uint32_t)w, buf, size, arg);
		t += len;
		n++;
	}
	free(buf);
	*tail = t;
	return n;
}
