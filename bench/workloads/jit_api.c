// SPDX-License-Identifier: MIT
/*
 * Why the agent JITs through cuLibraryLoadData (docs/agent.md, "Whole-
 * program JIT"): N copies of one PTX (each made unique by a comment, so
 * no cache answers) compiled by T threads through cuModuleLoadDataEx
 * (mode 0), cuLibraryLoadData + cuKernelGetFunction (1) or cuLink then
 * cuModuleLoadData (2).  Run with CUDA_CACHE_DISABLE=1.  On the H200
 * (2026-12-01), 16 copies of the SGEMM of real.cu: mode 0 854 ms on one
 * thread and 719 ms on 8 (one at a time); mode 1 568 and 120 ms; mode 2
 * 816 and 127 ms (but relocatable code, 1.2x slower to run).
 *
 *   nvcc -arch=sm_90 -ptx bench/workloads/real.cu -o real.ptx
 *   (keep the header and the .entry of _Z11sgemm_tiledPKfS0_Pfi: sg.ptx)
 *   cc -O1 bench/workloads/jit_api.c -I/usr/local/cuda/include -lcuda \
 *	-lpthread -o jit_api
 *   CUDA_CACHE_DISABLE=1 ./jit_api sg.ptx MODE THREADS
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *src;
static int N = 16, T = 8, mode, next;
static CUcontext ctx;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static CUresult compile(const char *p)
{
	CUresult r;

	if (mode == 0) {
		CUmodule m;

		r = cuModuleLoadDataEx(&m, p, 0, 0, 0);
	} else if (mode == 1) {
		CUlibrary l;
		CUkernel k;
		CUfunction f;

		r = cuLibraryLoadData(&l, p, 0, 0, 0, 0, 0, 0);
		if (!r)
			r = cuLibraryGetKernel(&k, l, "_Z11sgemm_tiledPKfS0_Pfi");
		if (!r)
			r = cuKernelGetFunction(&f, k);
	} else {
		CUlinkState s;
		CUmodule m;
		void *c;
		size_t n;

		cuLinkCreate(0, 0, 0, &s);
		r = cuLinkAddData(s, CU_JIT_INPUT_PTX, (void *)p, strlen(p) + 1,
				  "x", 0, 0, 0);
		if (!r)
			r = cuLinkComplete(s, &c, &n);
		if (!r)
			r = cuModuleLoadData(&m, c);
		cuLinkDestroy(s);
	}
	return r;
}

static void *work(void *a)
{
	cuCtxSetCurrent(ctx);
	for (;;) {
		char *p;
		double t0;
		CUresult r;
		int i;

		pthread_mutex_lock(&mu);
		i = next++;
		pthread_mutex_unlock(&mu);
		if (i >= N)
			break;
		p = malloc(strlen(src) + 64);
		sprintf(p, "%s\n// copy %d %d\n", src, i, rand());
		t0 = now();
		r = compile(p);
		if (r)
			printf("err %d\n", r);
		printf("  mode %d copy %d %.1f ms\n", mode, i, (now() - t0) * 1e3);
		free(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	FILE *f = argc == 4 ? fopen(argv[1], "r") : NULL;
	pthread_t th[64];
	CUdevice d;
	double t0;

	if (!f) {
		fprintf(stderr, "usage: jit_api PTX MODE THREADS\n");
		return 2;
	}
	src = calloc(1, 1 << 22);
	if (fread(src, 1, (1 << 22) - 1, f) == 0)
		return 2;
	mode = atoi(argv[2]);
	T = atoi(argv[3]);
	if (T < 1 || T > 64)
		return 2;
	cuInit(0);
	cuDeviceGet(&d, 0);
	cuDevicePrimaryCtxRetain(&ctx, d);
	t0 = now();
	for (int i = 0; i < T; i++)
		pthread_create(&th[i], 0, work, 0);
	for (int i = 0; i < T; i++)
		pthread_join(th[i], 0);
	printf("mode %d threads %d: %d compiles in %.1f ms\n", mode, T, N,
	       (now() - t0) * 1e3);
	return 0;
}
