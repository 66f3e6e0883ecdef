// SPDX-License-Identifier: MIT
/*
 * The provider table and the builtins shared by every host provider.
 */
#include <string.h>

#include "probes/provider.h"

/*
 * Order matters only for -l.  uprobe, uretprobe, cuda and gpu are added
 * here by their own files' authors when those files exist.
 */
const struct provider *const providers[] = {
	&provider_begin,
	&provider_end,
	&provider_interval,
	&provider_uprobe,
	&provider_uretprobe,
	&provider_cuda,
	&provider_gpu,
	NULL,
};

const char *provider_target_cmd;

const struct provider *provider_find(const char *name)
{
	const struct provider *const *p;

	for (p = providers; *p; p++)
		if (!strcmp((*p)->name, name) ||
		    ((*p)->alias && !strcmp((*p)->alias, name)))
			return *p;
	return NULL;
}

/*
 * Host builtins that need nothing from the attach point: func, argN and
 * retval belong to uprobe-like providers and are answered there.
 */
bool provider_host_builtin(const char *name)
{
	static const char *const names[] = {
		"pid", "tid", "uid", "gid", "comm", "nsecs", "elapsed",
		"cpu", "cpid", "probe",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}
