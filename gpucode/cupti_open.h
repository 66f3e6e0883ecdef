/* SPDX-License-Identifier: MIT */
/*
 * libcupti, opened at run time as the target's CUDA install has it
 * ($CUDA_HOME, then the loader's search, then the usual places): the
 * agent's cuda:complete, --timeline and gpu:sample, and the CUPTI floor
 * of bench/complete (tests/gpu/cupti_floor.h, built by nvcc as C++).
 * NULL: none.
 */
#ifndef GT_CUPTI_OPEN_H
#define GT_CUPTI_OPEN_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static inline void *cupti_open_lib(void)
{
	static const char *const names[] = {
		"libcupti.so.13", "libcupti.so",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
		"/usr/local/cuda/lib64/libcupti.so",
	};
	const char *home = getenv("CUDA_HOME");
	char path[4096];
	void *h;

	if (home) {
		snprintf(path, sizeof(path), "%s/extras/CUPTI/lib64/libcupti.so",
			 home);
		if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
			return h;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
			return h;
	return NULL;
}

#endif
