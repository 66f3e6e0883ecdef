// SPDX-License-Identifier: MIT
/*
 * A whole program under CUPTI's PC sampling alone, no gputrace:
 *   LD_PRELOAD=cupti_pcfloor.so PCFLOOR=pcs:PERIOD PROGRAM...
 * bench/sample's CUPTI-alone column.  Before main, sampling is turned
 * on in device 0's primary context (the one the CUDA runtime uses),
 * configured as the agent configures it (cupti_pcfloor.h); at exit the
 * last data is taken and "cupti: N samples, D dropped" goes to stderr.
 * If CUPTI refuses, the reason goes to stderr and the program exits 3
 * before it starts: a floor that did not sample is not a floor.
 */
#include "cupti_pcfloor.h"

static CUcontext pcfloor_ctx;
static CUdevice pcfloor_dev;

__attribute__((constructor)) static void pcfloor_init(void)
{
	const char *mode = getenv("PCFLOOR");
	if (!mode)
		return;
	if (cupti_pcfloor_open(mode))
		exit(3);
	if (cuInit(0) != CUDA_SUCCESS ||
	    cuDeviceGet(&pcfloor_dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&pcfloor_ctx, pcfloor_dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(pcfloor_ctx) != CUDA_SUCCESS) {
		fprintf(stderr, "pcfloor: no CUDA device\n");
		exit(3);
	}
	if (cupti_pcfloor_start())
		exit(3);
}

/* After the program's atexit handlers (the runtime's teardown): the
 * primary context is still retained here. */
__attribute__((destructor)) static void pcfloor_fini(void)
{
	if (!pcfloor_ctx)
		return;
	cuCtxSetCurrent(pcfloor_ctx);
	cupti_pcfloor_stop(stderr);
	cuDevicePrimaryCtxRelease(pcfloor_dev);
}
