// SPDX-License-Identifier: MIT
/*
 * PTX entries of fatbins, decompressed once.  A module's kernels are
 * instrumented one after another, and finding each one's PTX used to
 * decompress the module's PTX again and search it for the kernel: 0.6 to
 * 1.3 ms per kernel for a thrust/CUB program on the H200.  Here an entry
 * is decompressed at its first use and its kernels (.entry names) are
 * listed, sorted; later look-ups are a binary search.  Entries are keyed
 * by their owner (a module image, or a loaded ELF object's record: the
 * caller forgets an owner before it frees it) and their offset; a few
 * are kept, the least recently used goes first, and their text stays
 * under a byte budget.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agent/agent_priv.h"

#define MEMO_N		8
#ifndef MEMO_BYTES
#define MEMO_BYTES	(64u << 20)	/* text kept, all entries */
#endif

struct memo {
	const void *owner;	/* NULL: free */
	size_t off;		/* the entry's header in the owner's buffer */
	size_t stored;
	char *text;
	size_t len;		/* without trailing NULs */
	char **names;		/* sorted */
	size_t nnames;
	uint64_t used;
};

static struct memo memo[MEMO_N];
static size_t memo_bytes;
static uint64_t tick;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_memo(struct memo *m)
{
	for (size_t i = 0; i < m->nnames; i++)
		free(m->names[i]);
	free(m->names);
	free(m->text);
	memset(m, 0, sizeof(*m));
}

static void evict(struct memo *m)
{
	memo_bytes -= m->len;
	free_memo(m);
}

/* M->names: every ".entry NAME" of M->text, sorted; 0 or -ENOMEM. */
static int index_entries(struct memo *m)
{
	const char *p = m->text, *end = m->text + m->len;
	size_t cap = 0, n;

	while ((p = agent_ptx_next_entry(p, end, &n))) {
		if (m->nnames == cap) {
			size_t c = cap ? cap * 2 : 32;
			char **v = realloc(m->names, c * sizeof(*v));

			if (!v)
				return -ENOMEM;
			m->names = v;
			cap = c;
		}
		if (!(m->names[m->nnames] = strndup(p, n)))
			return -ENOMEM;
		m->nnames++;
		p += n;
	}
	if (m->nnames)
		qsort(m->names, m->nnames, sizeof(*m->names), cmp_name);
	return 0;
}

/* The slot for a new entry: a free one, else the least recently used,
 * and more of those until the text of the others is in budget. */
static struct memo *make_room(size_t len)
{
	struct memo *m = NULL;

	for (;;) {
		struct memo *lru = NULL;

		for (int i = 0; i < MEMO_N; i++) {
			if (!memo[i].owner && !m)
				m = &memo[i];
			else if (memo[i].owner &&
				 (!lru || memo[i].used < lru->used))
				lru = &memo[i];
		}
		if (m && (memo_bytes + len <= MEMO_BYTES || !lru))
			return m;
		evict(lru);
	}
}

static struct memo *find(const void *owner, const struct fatbin_entry *e)
{
	for (int i = 0; i < MEMO_N; i++)
		if (memo[i].owner == owner && memo[i].off == e->entry_off &&
		    memo[i].stored == e->stored_size)
			return &memo[i];
	return NULL;
}

/* Decompress and index E into a new entry (the lock is held). */
static int add(const void *owner, const struct fatbin_entry *e,
	       struct memo **out, char *err, size_t errlen)
{
	struct memo n = { .owner = owner, .off = e->entry_off,
			  .stored = e->stored_size };
	uint8_t *img;
	size_t len;
	int ret;

	ret = fatbin_entry_image(e, &img, &len, err, errlen);
	if (ret < 0)
		return ret;
	while (len && img[len - 1] == '\0')
		len--;
	n.text = (char *)img;
	n.len = len;
	ret = index_entries(&n);
	if (ret < 0) {
		free_memo(&n);
		snprintf(err, errlen, "out of memory");
		return ret;
	}
	*out = make_room(len);
	**out = n;
	memo_bytes += len;
	return 0;
}

int agent_ptxmemo_entry(const void *owner, const struct fatbin_entry *e,
			const char *name, char **copy, char *err,
			size_t errlen)
{
	struct memo *m;
	int ret;

	pthread_mutex_lock(&lock);
	m = find(owner, e);
	if (!m && (ret = add(owner, e, &m, err, errlen)) < 0) {
		pthread_mutex_unlock(&lock);
		return ret;
	}
	m->used = ++tick;
	ret = bsearch(&name, m->names, m->nnames, sizeof(*m->names),
		      cmp_name) != NULL;
	if (ret && copy && !(*copy = strndup(m->text, m->len))) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void agent_ptxmemo_forget(const void *owner)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MEMO_N; i++)
		if (memo[i].owner == owner)
			evict(&memo[i]);
	pthread_mutex_unlock(&lock);
}
#endif /* GT_AGENT_SO */
