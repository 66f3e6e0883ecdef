// SPDX-License-Identifier: MIT
/*
 * A dry run's check of gpu: probes against -c's program: a GLOB that
 * matches none of its kernels (nor those of the libraries it needs),
 * where it has some, is worth a warning, since the probe may never fire;
 * each matched kernel that has SASS only is named: the agent will leave
 * it as it is.
 */
#include <stdio.h>
#include <string.h>

#include "probes/gpu_kernels.h"
#include "probes/provider.h"
#include "runtime/devcheck.h"

void devcheck_target(const struct device_set *ds, const char *cmd,
		     bool no_match, bool sass_only)
{
	const struct gpu_kernel *k;
	int n;

	if (!cmd || !ds->n || (!no_match && !sass_only))
		return;
	k = gpu_kernels_of(cmd, true, &n);
	for (int j = 0; j < ds->n; j++) {
		const struct probe *p = ds->v[j].probe;
		bool dup = false, hit = false;

		for (int i = 0; i < j; i++)
			dup |= !strcmp(ds->v[i].probe->func, p->func);
		if (dup)
			continue;
		for (int i = 0; i < n; i++) {
			if (!gpu_kernel_match(p->func, &k[i]))
				continue;
			hit = true;
			if (sass_only && k[i].nparams < 0)
				fprintf(stderr, "gputrace: %s: kernel %s is skipped: no PTX to instrument (SASS only: %s); it runs unchanged\n",
					p->name, k[i].base ? k[i].base : k[i].name,
					k[i].sass);
		}
		/* a program without kernels may load them later (Python):
		 * only a GLOB that misses kernels that are there is a typo */
		if (!hit && no_match && n)
			fprintf(stderr, "gputrace: warning: %s matches no kernel of '%s' or the libraries it needs (it fires only for one loaded later)\n",
				p->name, cmd);
	}
}
