// SPDX-License-Identifier: MIT
/*
 * Keep only the module-scope functions a splice needs.  The device
 * runtime and the probe functions are one block of `.func` definitions
 * spliced into every instrumented module, but most probes are pasted
 * inline and call none of them; the driver's JIT optimizes every
 * function of a module whether it is called or not (about 200 ms for the
 * whole runtime on an H200 host, 10 ms without it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"

static const char hdr[] = ".version 7.4\n.target sm_75\n.address_size 64\n";

/*
 * The last results, by content: the agent splices every kernel of a
 * module with the same runtime and, most often, the same probes, and
 * parsing the runtime (2,300 lines) was most of a splice (0.8 ms of a
 * thrust kernel's 0.9 on an x86 host).  Threads splice side by side.
 */
#define MEMO_N 4

static struct memo {
	char *key;		/* DECLS, then each root, each ended by NUL */
	size_t key_len;
	char *out;
	uint64_t used;
} memo[MEMO_N];
static uint64_t memo_tick;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* The key of a call (malloc'd, its length in *LEN), or NULL. */
static char *memo_key(const char *decls, const char *const *roots,
		      int nroots, size_t *len)
{
	size_t n = strlen(decls) + 1, at;
	char *k;

	for (int r = 0; r < nroots; r++)
		n += (roots[r] ? strlen(roots[r]) : 0) + 2;
	if (!(k = malloc(n)))
		return NULL;
	at = strlen(decls) + 1;
	memcpy(k, decls, at);
	for (int r = 0; r < nroots; r++) {
		size_t l = roots[r] ? strlen(roots[r]) : 0;

		k[at++] = roots[r] ? 'r' : '-';	/* NULL is not "" */
		memcpy(k + at, roots[r] ? roots[r] : "", l + 1);
		at += l + 1;
	}
	*len = at;
	return k;
}

/* A copy of KEY's result in *OUT: true when there is one. */
static bool memo_get(const char *key, size_t len, char **out)
{
	bool hit = false;

	pthread_mutex_lock(&memo_lock);
	for (int i = 0; i < MEMO_N && !hit; i++) {
		if (memo[i].key && memo[i].key_len == len &&
		    !memcmp(memo[i].key, key, len)) {
			*out = strdup(memo[i].out);
			memo[i].used = ++memo_tick;
			hit = *out != NULL;
		}
	}
	pthread_mutex_unlock(&memo_lock);
	return hit;
}

/* Keep KEY (taken) and a copy of OUT in the least recently used entry. */
static void memo_put(char *key, size_t len, const char *out)
{
	char *o = strdup(out);
	int at = 0;

	if (!o) {
		free(key);
		return;
	}
	pthread_mutex_lock(&memo_lock);
	for (int i = 1; i < MEMO_N; i++)
		if (memo[i].used < memo[at].used)
			at = i;
	free(memo[at].key);
	free(memo[at].out);
	memo[at] = (struct memo){ key, len, o, ++memo_tick };
	pthread_mutex_unlock(&memo_lock);
}

/* Is Q, in [P, ...), inside a // comment? */
static bool in_comment(const char *p, const char *q)
{
	for (const char *s = q; s > p && s[-1] != '\n'; s--)
		if (s - p >= 2 && s[-1] == '/' && s[-2] == '/')
			return true;
	return false;
}

/*
 * Does NAME occur as a whole identifier in [P, END), outside comments?
 * (nvcc's "// .globl NAME" lines name functions that are not called.)
 */
static bool names(const char *p, const char *end, const char *name)
{
	size_t n = strlen(name);

	for (const char *q = p; q + n <= end; q++) {
		q = memmem(q, (size_t)(end - q), name, n);
		if (!q)
			return false;
		if ((q == p || !ptx_ident_char((unsigned char)q[-1])) &&
		    (q + n == end || !ptx_ident_char((unsigned char)q[n])) &&
		    !in_comment(p, q))
			return true;
	}
	return false;
}

static int prune(const char *decls, const char *const *roots, int nroots,
		 char **out, char *err, size_t errlen)
{
	size_t hl = strlen(hdr), dl = strlen(decls);
	struct ptx_module *m = NULL;
	char *text, *o = NULL;
	bool *need = NULL, grew = true;
	size_t len = 0;
	int rc;

	if (!(text = malloc(hl + dl + 1)))
		return -ENOMEM;
	memcpy(text, hdr, hl);
	memcpy(text + hl, decls, dl + 1);
	rc = ptx_parse(text, hl + dl, &m, err, errlen);
	free(text);
	if (rc < 0)
		return rc;
	need = calloc((size_t)m->nfuncs + 1, sizeof(*need));
	if (!need) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < m->nfuncs; i++)
		for (int r = 0; r < nroots && !need[i]; r++)
			need[i] = roots[r] && names(roots[r], roots[r] +
						    strlen(roots[r]),
						    m->funcs[i].name);
	/* what the needed ones call, to a fixed point */
	while (grew) {
		grew = false;
		for (int i = 0; i < m->nfuncs; i++) {
			if (need[i])
				continue;
			for (int k = 0; k < m->nfuncs && !need[i]; k++)
				need[i] = need[k] && k != i &&
					  names(m->text + m->funcs[k].start,
						m->text + m->funcs[k].end,
						m->funcs[i].name);
			grew |= need[i];
		}
	}
	for (int i = 0; i < m->nfuncs; i++)
		if (need[i])
			len += m->funcs[i].end - m->funcs[i].start + 1;
	if (!(o = malloc(len + 1))) {
		rc = -ENOMEM;
		goto out;
	}
	len = 0;
	for (int i = 0; i < m->nfuncs; i++) {
		size_t n = m->funcs[i].end - m->funcs[i].start;

		if (!need[i])
			continue;
		memcpy(o + len, m->text + m->funcs[i].start, n);
		len += n;
		o[len++] = '\n';
	}
	o[len] = '\0';
	*out = o;
	rc = 0;
out:
	free(need);
	ptx_free(m);
	return rc;
}

int ptx_prune_decls(const char *decls, const char *const *roots, int nroots,
		    char **out, char *err, size_t errlen)
{
	size_t len = 0;
	char *key = memo_key(decls, roots, nroots, &len);
	int rc;

	*out = NULL;
	if (key && memo_get(key, len, out)) {
		free(key);
		return 0;
	}
	rc = prune(decls, roots, nroots, out, err, errlen);
	if (rc == 0 && key)
		memo_put(key, len, *out);
	else
		free(key);
	return rc;
}
