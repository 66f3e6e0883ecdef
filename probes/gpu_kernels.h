/* SPDX-License-Identifier: MIT */
/*
 * The kernels of -c's program (and the libraries it needs), read once
 * from their fatbins: which a gpu: GLOB matches, how many parameters
 * each has in its PTX, which have SASS only.  For compile-time checks of
 * device probes (probes/gpu_kernels.c).
 */
#ifndef GT_GPU_KERNELS_H
#define GT_GPU_KERNELS_H

#include <stdbool.h>

struct gpu_kernel {
	char *name;		/* mangled */
	char *base;		/* demangled, without parameters */
	int nparams;		/* in its PTX; -1: SASS only */
	char sass[64];		/* "sm_90, sm_80" when SASS only */
	char *params;		/* -lv: "    arg0: .u64\n..." from the PTX */
};

/* Every kernel of CMD's program and libraries that has PTX, and with
 * SASS those that have SASS only (their cubins decompressed: a dry run's
 * cost), cached; NULL CMD or none: *N 0.  Once each by mangled name. */
const struct gpu_kernel *gpu_kernels_of(const char *cmd, bool sass, int *n);

/* GLOB as gpu:kernel:GLOB means it: the mangled or the base name. */
bool gpu_kernel_match(const char *glob, const struct gpu_kernel *k);

/* -1 when GLOB is a valid glob, else the 0-based offset of the fault,
 * with the words in *WHY ("'[' without ']'"). */
int gpu_glob_check(const char *glob, const char **why);

#endif
