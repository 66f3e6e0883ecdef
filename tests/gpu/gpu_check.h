/* SPDX-License-Identifier: MIT */
/*
 * Error checks for the GPU tests' CUDA programs: CK for the runtime API,
 * CD for the driver API; either prints the call and exits 1.
 */
#ifndef GT_GPU_CHECK_H
#define GT_GPU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CK(x) do {							\
	cudaError_t e_ = (x);						\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,	\
			#x, cudaGetErrorString(e_));			\
		exit(1);						\
	}								\
} while (0)
#define CD(x) do {							\
	CUresult r_ = (x);						\
	if (r_ != CUDA_SUCCESS) {					\
		fprintf(stderr, "%s:%d: %s: error %d\n", __FILE__,	\
			__LINE__, #x, (int)r_);				\
		exit(1);						\
	}								\
} while (0)

#endif
