// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>

#include "compiler/program.h"

int gt_object_add_map(struct gt_object *obj, const struct gt_map_def *def)
{
	struct gt_map_def *m = realloc(obj->maps, (obj->nmaps + 1) * sizeof(*m));

	if (!m)
		return -ENOMEM;
	obj->maps = m;
	m[obj->nmaps] = *def;
	return obj->nmaps++;
}

int gt_object_add_prog(struct gt_object *obj, const struct gt_bpf_prog *prog)
{
	struct gt_bpf_prog *p = realloc(obj->progs, (obj->nprogs + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	obj->progs = p;
	p[obj->nprogs] = *prog;
	return obj->nprogs++;
}
