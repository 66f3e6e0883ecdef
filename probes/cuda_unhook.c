// SPDX-License-Identifier: MIT
/*
 * -p with cuda: clauses for the agent, when the agent could not be
 * injected after all (docs/hostpath.md): the probes were placed on the
 * agent's wrappers (the driver's functions are patched by the agent's
 * inline hooks, and a uprobe may not sit under a patch), which the
 * target never runs now; they go back to the driver's own functions,
 * as without the agent.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "compiler/program.h"
#include "lang/ast.h"
#include "probes/cuda_priv.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"

int cuda_unhook(struct gt_object *obj, const char *lib)
{
	for (int i = 0; lib && i < obj->nprogs; i++) {
		struct probe *p = obj->progs[i].probe;
		const struct cuda_priv *pv = p ? p->priv : NULL;
		const struct syms_func *f;
		const struct syms *s;
		char err[256];
		bool amb;

		if (!p || p->prov != &provider_cuda || !pv || !pv->sh ||
		    !p->path || strcmp(p->path, lib) || !p->func)
			continue;
		if (syms_load(pv->sh->driver, &s, err, sizeof(err)))
			return -ENOENT;
		f = syms_lookup(s, p->func, &amb);
		if (!f)
			return -ENOENT;
		p->path = ast_strndup(pv->sh->driver, strlen(pv->sh->driver));
		p->offset = f->offset;
	}
	return 0;
}
