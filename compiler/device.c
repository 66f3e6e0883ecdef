// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/device.h"
#include "compiler/verifier.h"
#include "lang/diag.h"
#include "probes/provider.h"

struct gt_dev_map *device_maps(const struct unit *u)
{
	struct gt_dev_map *dm = calloc(u->nmaps + 1, sizeof(*dm));

	if (!dm)
		return NULL;
	for (const struct map_sym *m = u->maps; m; m = m->next) {
		dm[m->index].id = m->index;
		dm[m->index].key_size = m->key ? m->key->size : 0;
		dm[m->index].per_kernel = m->per_kernel;
		/* aggregation values belong to the device runtime */
		dm[m->index].value_size =
			m->val && m->val->kind != T_AGG ? m->val->size : 8;
	}
	return dm;
}

/* The innermost while loop of P holding instruction PC, or NULL. */
static const struct gt_src_loop *src_loop(const struct gt_bpf_prog *p, int pc)
{
	const struct gt_src_loop *best = NULL;

	for (int i = 0; pc >= 0 && i < p->nloops; i++) {
		const struct gt_src_loop *l = &p->loops[i];

		if ((uint32_t)pc >= l->head && (uint32_t)pc < l->end &&
		    (!best || l->end - l->head < best->end - best->head))
			best = l;
	}
	return best;
}

int device_verify(const struct unit *u, const struct gt_object *obj, FILE *walk)
{
	struct gt_dev_map *dm = device_maps(u);
	char err[512];
	int ret = 0, loop;

	if (!dm)
		return -ENOMEM;
	for (int i = 0; i < obj->nprogs && !ret; i++) {
		const struct gt_bpf_prog *p = &obj->progs[i];

		if (!p->probe->prov->device)
			continue;
		if (walk)
			fprintf(walk, "Verifying %s\n", p->probe->name);
		if (vf_verify_drop(p->insns, p->ninsns, dm, u->nmaps, p->probe->name,
				   walk, err, sizeof(err), &loop)) {
			const struct gt_src_loop *l = src_loop(p, loop);

			/* a loop the verifier cannot bound: point at it */
			if (l)
				diag_error((struct loc){ l->line, l->col },
					   "device verifier: %s", err);
			else
				fprintf(stderr, "gputrace: device verifier: %s\n",
					err);
			ret = -EACCES;
		}
	}
	free(dm);
	return ret;
}

int device_lower(const struct unit *u, const struct gt_object *obj,
		 struct device_set *out)
{
	struct gt_dev_map *dm = device_maps(u);
	char err[512];
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->v = calloc(obj->nprogs + 1, sizeof(*out->v));
	if (!dm || !out->v) {
		free(dm);
		return -ENOMEM;
	}
	for (int i = 0; i < obj->nprogs; i++) {
		const struct gt_bpf_prog *p = &obj->progs[i];
		struct device_probe *d = &out->v[out->n];
		struct pl_opts o = {
			.index = out->n,
			.mode = p->probe->warp ? PL_WARP : PL_THREAD,
			/* inline below: entry updates can wait for the exit;
			 * a gpu:mem clause runs many times per thread */
			.defer = !p->probe->retprobe && !p->probe->mem,
			.mem = p->probe->mem,
			.hist_sum = obj->hist_sum,
		};

		if (!p->probe->prov->device)
			continue;
		ret = pl_lower(p->insns, p->ninsns, dm, u->nmaps, &o, &d->func,
			       err, sizeof(err));
		if (ret) {
			fprintf(stderr, "gputrace: %s: cannot lower to PTX: %s\n",
				p->probe->name, err);
			break;
		}
		d->probe = p->probe;
		/* pasted in place: no call on the kernel's path */
		d->call = pl_inline_text(&d->func);
		out->n++;
		if (!d->call) {
			ret = -ENOMEM;
			break;
		}
	}
	if (!ret && out->n) {
		struct pl_func *f = calloc(out->n, sizeof(*f));

		for (int i = 0; f && i < out->n; i++)
			f[i] = out->v[i].func;
		out->decls = f ? pl_decls(f, out->n) : NULL;
		free(f);
		if (!out->decls)
			ret = -ENOMEM;
	}
	free(dm);
	if (ret)
		device_set_free(out);
	return ret;
}

void device_set_free(struct device_set *s)
{
	for (int i = 0; i < s->n; i++) {
		pl_func_free(&s->v[i].func);
		free(s->v[i].call);
	}
	free(s->v);
	free(s->decls);
	memset(s, 0, sizeof(*s));
}
