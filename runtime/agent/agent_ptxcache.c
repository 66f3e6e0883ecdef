// SPDX-License-Identifier: MIT
/*
 * Parsed PTX modules, kept for the next kernel of the same module.  A
 * module's kernels are instrumented one by one, and each used to parse
 * the whole module again: 7-8 ms for a thrust/CUB program's module on
 * the H200, most of what instrumenting a kernel costs once the driver's
 * JIT cache is warm.  A parsed module is read-only (ptx_find_entry,
 * ptx_splice take it const), so threads instrumenting side by side share
 * one; a reference count keeps it while in use.  A few entries, the least
 * recently used one that nobody holds makes room.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "runtime/agent/agent_priv.h"

#define PCACHE_N	4

static struct {
	struct ptx_module *m;
	unsigned refs;
	uint64_t used;
} ents[PCACHE_N];
static uint64_t tick;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The entry holding TEXT's module, or -1; with the lock held. */
static int find(const char *text, size_t len)
{
	for (int i = 0; i < PCACHE_N; i++)
		if (ents[i].m && ents[i].m->len == len &&
		    !memcmp(ents[i].m->text, text, len))
			return i;
	return -1;
}

int agent_ptx_get(const char *text, struct ptx_module **m, char *err,
		  size_t errlen)
{
	size_t len = strlen(text);
	struct ptx_module *p;
	int i, free_at = -1;

	pthread_mutex_lock(&lock);
	i = find(text, len);
	if (i >= 0) {
		ents[i].refs++;
		ents[i].used = ++tick;
		*m = ents[i].m;
		pthread_mutex_unlock(&lock);
		return 0;
	}
	pthread_mutex_unlock(&lock);
	/* parse outside the lock: other kernels go on meanwhile */
	if (ptx_parse(text, len, &p, err, errlen) < 0)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	i = find(text, len);
	if (i >= 0) {		/* another thread parsed it meanwhile */
		ptx_free(p);
		ents[i].refs++;
		ents[i].used = ++tick;
		*m = ents[i].m;
		pthread_mutex_unlock(&lock);
		return 0;
	}
	for (i = 0; i < PCACHE_N; i++)
		if (!ents[i].refs &&
		    (free_at < 0 || ents[i].used < ents[free_at].used))
			free_at = i;
	if (free_at >= 0) {
		ptx_free(ents[free_at].m);
		ents[free_at].m = p;
		ents[free_at].refs = 1;
		ents[free_at].used = ++tick;
	}
	/* all held: P stays the caller's alone (agent_ptx_put frees it) */
	pthread_mutex_unlock(&lock);
	*m = p;
	return 0;
}

void agent_ptx_put(struct ptx_module *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < PCACHE_N; i++) {
		if (ents[i].m == m) {
			ents[i].refs--;
			pthread_mutex_unlock(&lock);
			return;
		}
	}
	pthread_mutex_unlock(&lock);
	ptx_free(m);
}
void agent_ptxcache_forked(void)
{
	pthread_mutex_init(&lock, NULL);
}

#endif /* GT_AGENT_SO */
