// SPDX-License-Identifier: MIT
/*
 * PTX entries of fatbins, decompressed once.  A module's kernels are
 * instrumented one after another, and finding each one's PTX used to
 * decompress the module's PTX again and search it for the kernel: 0.6 to
 * 1.3 ms per kernel for a thrust/CUB program on the H200, and for a
 * process whose objects hold thousands of PTX entries (the .nv_fatbin
 * fallback after -p), every entry before the kernel's, per kernel.
 *
 * Two tables, keyed by an entry's owner (a module image, or a loaded ELF
 * object's record: the caller forgets an owner before it frees it) and
 * its offset there:
 *   - the kernels (.entry names, sorted) of every entry seen, so that an
 *     entry without the kernel is not decompressed again (names up to
 *     NAMES_BYTES in all; past that, entries are not indexed and are
 *     decompressed at each look-up, as before);
 *   - the text of the few entries used last (TEXT_N, TEXT_BYTES), for the
 *     copies the callers instrument.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agent/agent_priv.h"

#define TEXT_N		8
#ifndef TEXT_BYTES
#define TEXT_BYTES	(64u << 20)	/* text kept, all entries */
#endif
#ifndef NAMES_BYTES
#define NAMES_BYTES	(64u << 20)	/* names kept, all entries */
#endif

struct key {
	const void *owner;
	size_t off;		/* the entry's header in the owner's buffer */
	size_t stored;
};

/* An entry's kernels */
struct kindex {
	struct key k;
	char **v;		/* sorted */
	size_t n, bytes;
	struct kindex *next;	/* hash chain */
};

/* An entry's text */
struct text {
	struct key k;		/* owner NULL: free */
	char *s;
	size_t len;		/* without trailing NULs */
	uint64_t used;
};

static struct kindex **hash;
static size_t nhash, nindexed, names_bytes;
static struct text texts[TEXT_N];
static size_t text_bytes;
static uint64_t tick;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static bool same(const struct key *a, const struct key *b)
{
	return a->owner == b->owner && a->off == b->off &&
	       a->stored == b->stored;
}

static size_t slot_of(const struct key *k, size_t n)
{
	uint64_t h = (uint64_t)(uintptr_t)k->owner * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)k->off * 0xc2b2ae3d27d4eb4full;

	return (size_t)(h >> 32) & (n - 1);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_kindex(struct kindex *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->v[i]);
	free(x->v);
	free(x);
}

static void drop_text(struct text *t)
{
	text_bytes -= t->len;
	free(t->s);
	memset(t, 0, sizeof(*t));
}

static struct kindex *find_kindex(const struct key *k)
{
	struct kindex *x;

	if (!nhash)
		return NULL;
	for (x = hash[slot_of(k, nhash)]; x && !same(&x->k, k); x = x->next)
		;
	return x;
}

static struct text *find_text(const struct key *k)
{
	for (int i = 0; i < TEXT_N; i++)
		if (texts[i].k.owner && same(&texts[i].k, k))
			return &texts[i];
	return NULL;
}

/* Every ".entry NAME" of TEXT (LEN bytes), sorted; NULL: out of memory. */
static struct kindex *index_entries(const struct key *k, const char *text,
				   size_t len)
{
	const char *p = text, *end = text + len;
	struct kindex *x = calloc(1, sizeof(*x));
	size_t cap = 0, n;

	if (!x)
		return NULL;
	x->k = *k;
	while ((p = agent_ptx_next_entry(p, end, &n))) {
		if (x->n == cap) {
			size_t c = cap ? cap * 2 : 32;
			char **v = realloc(x->v, c * sizeof(*v));

			if (!v)
				goto fail;
			x->v = v;
			cap = c;
		}
		if (!(x->v[x->n] = strndup(p, n)))
			goto fail;
		x->n++;
		x->bytes += n + 1 + sizeof(char *);
		p += n;
	}
	if (x->n)
		qsort(x->v, x->n, sizeof(*x->v), cmp_name);
	return x;
fail:
	free_kindex(x);
	return NULL;
}

/* Keep X in the index, growing the table; false: not kept (budget,
 * memory), the caller still owns it. */
static bool keep_kindex(struct kindex *x)
{
	size_t s;

	if (names_bytes + x->bytes > NAMES_BYTES)
		return false;
	if (nindexed + 1 > nhash / 2) {
		size_t n = nhash ? nhash * 2 : 64;
		struct kindex **h = calloc(n, sizeof(*h));

		if (!h)
			return false;
		for (size_t i = 0; i < nhash; i++) {
			while (hash[i]) {
				struct kindex *y = hash[i];

				hash[i] = y->next;
				s = slot_of(&y->k, n);
				y->next = h[s];
				h[s] = y;
			}
		}
		free(hash);
		hash = h;
		nhash = n;
	}
	s = slot_of(&x->k, nhash);
	x->next = hash[s];
	hash[s] = x;
	nindexed++;
	names_bytes += x->bytes;
	return true;
}

/* Keep TEXT (malloc'd, LEN bytes) for K: a free slot, else the least
 * recently used, and more of those until the others are in budget. */
static struct text *keep_text(const struct key *k, char *text, size_t len)
{
	struct text *t = NULL;

	for (;;) {
		struct text *lru = NULL;

		for (int i = 0; i < TEXT_N; i++) {
			if (!texts[i].k.owner && !t)
				t = &texts[i];
			else if (texts[i].k.owner &&
				 (!lru || texts[i].used < lru->used))
				lru = &texts[i];
		}
		if (t && (text_bytes + len <= TEXT_BYTES || !lru))
			break;
		drop_text(lru);
	}
	*t = (struct text){ .k = *k, .s = text, .len = len, .used = ++tick };
	text_bytes += len;
	return t;
}

/* *T = E's text, kept (decompressed, trailing NULs left out); 0 or a
 * negative errno with ERR saying why. */
static int text_of(const struct key *k, const struct fatbin_entry *e,
		   struct text **t, char *err, size_t errlen)
{
	uint8_t *img;
	size_t len;
	int ret;

	if ((*t = find_text(k)))
		return 0;
	ret = fatbin_entry_image(e, &img, &len, err, errlen);
	if (ret < 0)
		return ret;
	while (len && img[len - 1] == '\0')
		len--;
	*t = keep_text(k, (char *)img, len);
	return 0;
}

int agent_ptxmemo_entry(const void *owner, const struct fatbin_entry *e,
			const char *name, char **copy, char *err,
			size_t errlen)
{
	struct key k = { owner, e->entry_off, e->stored_size };
	struct kindex *x, *own = NULL;
	struct text *t = NULL;
	int ret;

	pthread_mutex_lock(&lock);
	x = find_kindex(&k);
	if (!x) {
		if ((ret = text_of(&k, e, &t, err, errlen)) < 0)
			goto out;
		x = index_entries(&k, t->s, t->len);
		if (!x) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
		if (!keep_kindex(x))
			own = x;
	}
	ret = bsearch(&name, x->v, x->n, sizeof(*x->v), cmp_name) != NULL;
	if (ret && copy) {
		int r = t ? 0 : text_of(&k, e, &t, err, errlen);

		if (r < 0) {
			ret = r;
		} else {
			t->used = ++tick;
			if (!(*copy = strndup(t->s, t->len))) {
				snprintf(err, errlen, "out of memory");
				ret = -ENOMEM;
			}
		}
	}
out:
	if (own)
		free_kindex(own);
	pthread_mutex_unlock(&lock);
	return ret;
}

void agent_ptxmemo_forget(const void *owner)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < TEXT_N; i++)
		if (texts[i].k.owner == owner)
			drop_text(&texts[i]);
	for (size_t i = 0; i < nhash; i++) {
		struct kindex **pp = &hash[i], *x;

		while ((x = *pp)) {
			if (x->k.owner != owner) {
				pp = &x->next;
				continue;
			}
			*pp = x->next;
			names_bytes -= x->bytes;
			nindexed--;
			free_kindex(x);
		}
	}
	pthread_mutex_unlock(&lock);
}
void agent_ptxmemo_forked(void)
{
	pthread_mutex_init(&lock, NULL);
}

#endif /* GT_AGENT_SO */
