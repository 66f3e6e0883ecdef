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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"

static const char hdr[] = ".version 7.4\n.target sm_75\n.address_size 64\n";

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

int ptx_prune_decls(const char *decls, const char *const *roots, int nroots,
		    char **out, char *err, size_t errlen)
{
	size_t hl = strlen(hdr), dl = strlen(decls);
	struct ptx_module *m = NULL;
	char *text, *o = NULL;
	bool *need = NULL, grew = true;
	size_t len = 0;
	int rc;

	*out = NULL;
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
