// SPDX-License-Identifier: MIT
/*
 * What the fatbins offer, per kernel: the PTX texts (for instrumentation)
 * and the architectures each kernel has as PTX and as SASS (for `-l` and
 * for "cannot instrument: SASS only" messages).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/fatbin.h"
#include "gpucode/fatbin_priv.h"

/* PTX collection */

int fatbin_ptx_collect(const struct fatbin_entry *e, void *arg)
{
	struct fatbin_ptx_list *l = arg;
	struct fatbin_ptx *x;
	size_t len = e->size;

	if (!e->is_ptx)
		return 0;
	while (len && e->data[len - 1] == 0)
		len--;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct fatbin_ptx *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	x = &l->v[l->n];
	x->from_cubin = e->from_cubin;
	x->arch = e->arch;
	x->major = e->major;
	x->minor = e->minor;
	x->name = strdup(e->name);
	x->text = malloc(len + 1);
	if (!x->name || !x->text) {
		free(x->name);
		free(x->text);
		return -ENOMEM;
	}
	memcpy(x->text, e->data, len);
	x->text[len] = 0;
	x->len = len;
	l->n++;
	return 0;
}

void fatbin_ptx_list_free(struct fatbin_ptx_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].text);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int fatbin_elf_ptx(const char *path, struct fatbin_ptx_list *out,
		   char *err, size_t errlen)
{
	int ret;

	memset(out, 0, sizeof(*out));
	ret = fatbin_elf_foreach_kind(path, FATBIN_KIND_PTX, fatbin_ptx_collect,
				      out, err, errlen);
	if (ret)
		fatbin_ptx_list_free(out);
	return ret;
}

/* The kernel table: a vector in order of first sight plus a hash index. */

static size_t hash_name(const char *s)
{
	size_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static size_t *slot(const struct fatbin_kernels *k, const char *name)
{
	size_t i = hash_name(name) & (k->hcap - 1);

	while (k->hash[i] && strcmp(k->v[k->hash[i] - 1].name, name))
		i = (i + 1) & (k->hcap - 1);
	return &k->hash[i];
}

const struct fatbin_kernel *fatbin_kernels_find(const struct fatbin_kernels *k,
						const char *name)
{
	size_t *s;

	if (!k->hcap)
		return NULL;
	s = slot(k, name);
	return *s ? &k->v[*s - 1] : NULL;
}

static int grow(struct fatbin_kernels *k)
{
	size_t hcap = k->hcap ? 2 * k->hcap : 64, i;
	size_t *old = k->hash, oldcap = k->hcap;
	struct fatbin_kernel *v;

	/* The vector holds hcap / 2: the index stays at most half full. */
	v = realloc(k->v, hcap / 2 * sizeof(*v));
	if (!v)
		return -ENOMEM;
	k->v = v;
	k->hash = calloc(hcap, sizeof(*k->hash));
	if (!k->hash) {
		k->hash = old;
		return -ENOMEM;
	}
	k->cap = hcap / 2;
	k->hcap = hcap;
	for (i = 0; i < oldcap; i++)
		if (old[i])
			*slot(k, k->v[old[i] - 1].name) = old[i];
	free(old);
	return 0;
}

static void add_arch(struct fatbin_arch *v, int *n, bool *truncated,
		     struct fatbin_arch a)
{
	for (int i = 0; i < *n; i++)
		if (v[i].sm == a.sm && v[i].variant == a.variant)
			return;
	if (*n == FATBIN_MAX_ARCHS) {
		*truncated = true;
		return;
	}
	v[(*n)++] = a;
}

struct collect_ctx {
	struct fatbin_kernels *k;
	const struct fatbin_entry *e;
};

static int add_kernel(const char *name, void *arg)
{
	struct collect_ctx *c = arg;
	struct fatbin_kernels *k = c->k;
	struct fatbin_kernel *kr;
	size_t *s;

	if (k->n == k->cap && grow(k) < 0)
		return -ENOMEM;
	s = slot(k, name);
	if (!*s) {
		kr = &k->v[k->n];
		memset(kr, 0, sizeof(*kr));
		kr->name = strdup(name);
		if (!kr->name)
			return -ENOMEM;
		*s = ++k->n;
	}
	kr = &k->v[*s - 1];
	if (c->e->is_ptx)
		add_arch(kr->ptx, &kr->nptx, &kr->truncated, c->e->arch);
	else
		add_arch(kr->sass, &kr->nsass, &kr->truncated, c->e->arch);
	return 0;
}

int fatbin_kernels_collect(const struct fatbin_entry *e, void *kernels)
{
	struct collect_ctx c = { kernels, e };

	if (e->is_ptx)
		return fatbin_ptx_kernels((const char *)e->data, e->size,
					  add_kernel, &c);
	if (e->kind == FATBIN_KIND_ELF)
		return fatbin_cubin_kernels(e->data, e->size, add_kernel, &c,
					    NULL, 0);
	return 0;
}

void fatbin_kernels_free(struct fatbin_kernels *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i].name);
	free(k->v);
	free(k->hash);
	memset(k, 0, sizeof(*k));
}

int fatbin_elf_kernels(const char *path, struct fatbin_kernels *out,
		       char *err, size_t errlen)
{
	int ret;

	memset(out, 0, sizeof(*out));
	ret = fatbin_elf_foreach_kind(path, FATBIN_CUBIN_PTX,
				      fatbin_kernels_collect, out, err, errlen);
	if (ret)
		fatbin_kernels_free(out);
	return ret;
}
