// SPDX-License-Identifier: MIT
/*
 * Maps keyed by the kernel alone: `@k[kernel] = count()` (or hist(); or
 * `@k[kname(kernel)]`, the same key printed short) in
 * device clauses, and nothing else touching @k on the device.  The key is
 * the same for every thread of a launch, so the agent gives each kernel
 * its own slot, filled in ahead (the key written into every shard), and
 * hands its address to the launch the way a map without key gets its
 * shards: the probe takes the keyless inline path, with no hashing, no
 * key on the stack and no call (docs/device-runtime.md, "Maps keyed by
 * the kernel").
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/sema.h"
#include "gpucode/devrt.h"

struct kuse {
	int good, bad;
};

static bool is_kernel(const struct node *k)
{
	return k->kind == N_BUILTIN && !strcmp(k->str, "kernel");
}

/* kernel, or kname(kernel): the same key bytes, printed short */
static bool is_kernel_key(const struct node *map)
{
	const struct node *k = map->args;

	return k && !k->next &&
	       (is_kernel(k) || (k->kind == N_CALL && !strcmp(k->str, "kname") &&
				 k->args && is_kernel(k->args)));
}

static void walk(struct kuse *use, const struct node *n);

static void walk_list(struct kuse *use, const struct node *n)
{
	for (; n; n = n->next)
		walk(use, n);
}

static void walk(struct kuse *use, const struct node *n)
{
	const struct map_sym *m;

	if (!n)
		return;
	if (n->kind == N_ASSIGN && n->op == -1 && n->a && n->a->kind == N_MAP &&
	    n->b && n->b->kind == N_CALL && n->a->sym &&
	    (!strcmp(n->b->str, "count") || !strcmp(n->b->str, "hist")) &&
	    is_kernel_key(n->a)) {
		use[((const struct map_sym *)n->a->sym)->index].good++;
		walk_list(use, n->b->args);
		return;
	}
	if (n->kind == N_MAP && (m = n->sym))
		use[m->index].bad++;
	walk(use, n->a);
	walk(use, n->b);
	walk(use, n->c);
	walk_list(use, n->args);
}

void sema_mark_kernel_maps(struct unit *u)
{
	struct kuse *use = calloc((size_t)u->nmaps + 1, sizeof(*use));

	if (!use)
		return;		/* the general path still works */
	for (struct clause *cl = u->prog->clauses; cl; cl = cl->next) {
		if (!u->clauses[cl->index].device)
			continue;
		walk(use, cl->pred);
		walk(use, cl->body);
	}
	for (struct map_sym *m = u->maps; m; m = m->next)
		m->per_kernel = use[m->index].good && !use[m->index].bad &&
				m->device && !m->host &&
				m->index < DEVRT_HOT_MAPS && m->key &&
				m->key->size == GT_STRLEN;
	free(use);
}
