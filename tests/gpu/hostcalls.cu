// SPDX-License-Identifier: MIT
/*
 * Known copies, allocations, frees and synchronizations for
 * tests/gpu/cuda_hostcalls.sh (cuda:memcpy/malloc/free/sync clauses run
 * in the agent and as kernel uprobes, docs/hostpath.md).
 *
 *   hostcalls [-s] [-o FILE]
 *
 * Through the driver API (-lcuda), sizes no library would pick:
 *   cuMemAlloc_v2 77001, cuMemAllocHost_v2 77002, cuMemAllocManaged
 *   77003, cuMemAllocPitch_v2 width 771 x height 3 (2313 asked)
 *   cuMemcpyHtoD_v2 7001 x3, cuMemcpyDtoH_v2 7002 x2,
 *   cuMemcpyDtoD_v2 7003 x1, cuMemcpyHtoDAsync_v2 7004 x4,
 *   cuMemcpy 7005 x2, cuMemcpyAsync 7006 x1
 *   cuMemFree_v2 x3 (alloc, managed, pitch), cuMemFreeHost x1
 *   cuEventSynchronize x2, cuStreamSynchronize x3, cuCtxSynchronize x1
 * then through the runtime API (cudaMalloc, cudaMemcpy, cudaFree,
 * cudaDeviceSynchronize...), whose driver calls are the runtime's to
 * choose: only compared between the two paths.
 * -o FILE: the driver API part as gputrace prints it (map lines).
 * -s: initialise CUDA, print "ready", wait for SIGUSR1 (gputrace -p).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_check.h"

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	bool wait = false;
	int c;

	while ((c = getopt(argc, argv, "so:")) != -1) {
		if (c == 's') {
			wait = true;
		} else if (c == 'o') {
			out = optarg;
		} else {
			fprintf(stderr, "usage: hostcalls [-s] [-o FILE]\n");
			return 2;
		}
	}
	signal(SIGUSR1, on_usr1);
	CK(cudaFree(0));	/* the driver and the context */
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		while (!go)
			pause();
	}

	CUdeviceptr d, m, p;
	size_t pitch;
	void *h;
	CUstream s;
	CUevent ev;

	CD(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CD(cuEventCreate(&ev, 0));
	CD(cuMemAlloc(&d, 77001));
	CD(cuMemAllocHost(&h, 77002));
	CD(cuMemAllocManaged(&m, 77003, CU_MEM_ATTACH_GLOBAL));
	CD(cuMemAllocPitch(&p, &pitch, 771, 3, 4));
	for (int i = 0; i < 3; i++)
		CD(cuMemcpyHtoD(d, h, 7001));
	for (int i = 0; i < 2; i++)
		CD(cuMemcpyDtoH(h, d, 7002));
	CD(cuMemcpyDtoD(m, d, 7003));
	for (int i = 0; i < 4; i++)
		CD(cuMemcpyHtoDAsync(d, h, 7004, s));
	for (int i = 0; i < 2; i++)
		CD(cuMemcpy(m, d, 7005));
	CD(cuMemcpyAsync(m, d, 7006, s));
	for (int i = 0; i < 3; i++)
		CD(cuStreamSynchronize(s));
	for (int i = 0; i < 2; i++) {
		CD(cuEventRecord(ev, s));
		CD(cuEventSynchronize(ev));
	}
	CD(cuCtxSynchronize());
	CD(cuMemFree(d));
	CD(cuMemFree(m));
	CD(cuMemFree(p));
	CD(cuMemFreeHost(h));

	/* the runtime's part */
	float *a, *b, *hh;

	CK(cudaMalloc(&a, 1 << 20));
	CK(cudaMalloc(&b, 1 << 20));
	CK(cudaMallocHost(&hh, 1 << 20));
	memset(hh, 1, 1 << 20);
	CK(cudaMemcpy(a, hh, 1 << 20, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(b, a, 1 << 20, cudaMemcpyDeviceToDevice));
	CK(cudaMemcpy(hh, b, 1 << 20, cudaMemcpyDefault));
	CK(cudaDeviceSynchronize());
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFreeHost(hh));

	if (out) {
		FILE *f = fopen(out, "w");

		if (!f)
			return 1;
		fprintf(f, "@a[cuMemAlloc_v2, 77001, 0]: 1\n"
			"@a[cuMemAllocHost_v2, 77002, 0]: 1\n"
			"@a[cuMemAllocManaged, 77003, 0]: 1\n"
			"@a[cuMemAllocPitch_v2, 2313, 0]: 1\n"
			"@m[cuMemcpyHtoD_v2, HtoD, 7001]: 3\n"
			"@m[cuMemcpyDtoH_v2, DtoH, 7002]: 2\n"
			"@m[cuMemcpyDtoD_v2, DtoD, 7003]: 1\n"
			"@m[cuMemcpyHtoDAsync_v2, HtoD, 7004]: 4\n"
			"@m[cuMemcpy, any, 7005]: 2\n"
			"@m[cuMemcpyAsync, any, 7006]: 1\n"
			"@e[cuEventSynchronize]: 2\n");
		fclose(f);
	}
	return 0;
}
