// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>

#include "compiler/device.h"
#include "compiler/verifier.h"
#include "probes/provider.h"

struct gt_dev_map *device_maps(const struct unit *u)
{
	struct gt_dev_map *dm = calloc(u->nmaps + 1, sizeof(*dm));

	if (!dm)
		return NULL;
	for (const struct map_sym *m = u->maps; m; m = m->next) {
		dm[m->index].id = m->index;
		dm[m->index].key_size = m->key ? m->key->size : 0;
		/* aggregation values belong to the device runtime */
		dm[m->index].value_size =
			m->val && m->val->kind != T_AGG ? m->val->size : 8;
	}
	return dm;
}

int device_verify(const struct unit *u, const struct gt_object *obj, FILE *walk)
{
	struct gt_dev_map *dm = device_maps(u);
	char err[512];
	int ret = 0;

	if (!dm)
		return -ENOMEM;
	for (int i = 0; i < obj->nprogs && !ret; i++) {
		const struct gt_bpf_prog *p = &obj->progs[i];

		if (!p->probe->prov->device)
			continue;
		if (walk)
			fprintf(walk, "Verifying %s\n", p->probe->name);
		if (vf_verify(p->insns, p->ninsns, dm, u->nmaps, p->probe->name,
			      walk, err, sizeof(err))) {
			fprintf(stderr, "gputrace: device verifier: %s\n", err);
			ret = -EACCES;
		}
	}
	free(dm);
	return ret;
}
