// SPDX-License-Identifier: MIT
/*
 * Known kernel launches for tests/gpu/cuda_launch.sh and bench/launch.
 *
 *   launches [-s] [-o FILE]        the test workload
 *   launches -b SECONDS            benchmark: empty kernels, launches/s
 *   launches -C MODE -b SECONDS    the same under CUPTI alone: MODE kernel
 *                                  or latency (cupti_floor.h), pcs:PERIOD
 *                                  (PC sampling, cupti_pcfloor.h)
 *   launches -a SECONDS            in-process A/B: empty kernels by
 *                                  cuLaunchKernel as linked (a tracer's
 *                                  wrapper, if one interposes it) and
 *                                  straight into the driver, alternating
 *                                  blocks; each side's launches/s, ratio
 *
 * The workload launches, with fixed grids:
 *   gt::vadd<float>  grid 64, block 256   10 times  (runtime API, <<<>>>)
 *   gt::vadd<int>    grid 32, block 128   20 times  (runtime API)
 *   scale            grid 16, block 64    30 times  (runtime API)
 *   drv_nop          grid 4,  block 32     3 times  (driver API: PTX
 *                    loaded with cuModuleLoadData, cuLaunchKernel)
 *   drv_nop          grid 2,  block 64     7 times  (cuLaunchKernelEx)
 * plus a CUDA graph (one scale node, built with the explicit API so that
 * nothing passes through cuLaunchKernel) launched 5 times, 4
 * allocations of known sizes (3 cudaMalloc, 1 cudaMallocHost) and 2
 * synchronizations (cudaDeviceSynchronize, cudaStreamSynchronize).
 * -o FILE: write what gputrace should print, map lines as gputrace
 * prints them ("@[gt::vadd<float>, 64, 256]: 10"...).
 * -s: initialise CUDA, print "ready" and wait for SIGUSR1 before the
 * first launch (for gputrace -p).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_floor.h"
#include "cupti_pcfloor.h"
#include "drv_direct.h"
#include "gpu_check.h"

namespace gt {
template <typename T>
__global__ void vadd(const T *a, const T *b, T *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}
}

__global__ void scale(float *x, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] *= s;
}

__global__ void empty(void)
{
}

/* Written by hand: a kernel that is in no fatbin. */
static const char drv_ptx[] =
	".version 7.0\n"
	".target sm_52\n"
	".address_size 64\n"
	".visible .entry drv_nop()\n"
	"{\n"
	"\tret;\n"
	"}\n";

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Empty-kernel launches per second for SECONDS (PCS: PC sampling on). */
static int bench(double seconds, bool pcs)
{
	double t0, t;
	long n = 0;

	CK(cudaFree(0));
	if (pcs && cupti_pcfloor_start())
		return 1;
	empty<<<1, 32>>>();
	CK(cudaDeviceSynchronize());
	t0 = now();
	do {
		for (int i = 0; i < 1000; i++)
			empty<<<1, 32>>>();
		n += 1000;
		CK(cudaStreamSynchronize(0));
		t = now();
	} while (t - t0 < seconds);
	printf("%ld launches in %.3f s: %.0f launches/s\n", n, t - t0,
	       n / (t - t0));
	return 0;
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned, CUstream,
			      void **, void **);

/*
 * -a: blocks of 1000 launches of one empty kernel in this thread, by
 * cuLaunchKernel as the program links it (under gputrace -c, the
 * agent's wrapper: its hook and clauses) and by the driver's own entry
 * (drv_direct: no hook), in ABBA order for SECONDS: the two rates and
 * their ratio, side by side in one process, with none of the drift
 * that moves a launch rate by a tenth between two runs.  Natively both
 * sides are the driver's (a ratio of 1 within the noise).
 */
static int bench_ab(double seconds)
{
	launch_fn side[2] = { cuLaunchKernel, NULL };
	double t[2] = { 0, 0 }, t0, s;
	long n[2] = { 0, 0 };
	CUfunction f;

	CK(cudaFree(0));
	CK(cudaGetFuncBySymbol(&f, (const void *)empty));
	side[1] = (launch_fn)drv_direct("cuLaunchKernel");
	if (!side[1]) {
		fprintf(stderr, "launches: no cuLaunchKernel in libcuda's symbols\n");
		return 1;
	}
	empty<<<1, 32>>>();
	CK(cudaDeviceSynchronize());
	t0 = now();
	for (long r = 0; now() - t0 < seconds || r % 4; r++) {
		int k = (int)((r ^ (r >> 1)) & 1);	/* 0 1 1 0, 0 1 1 0... */
		CUresult e;

		s = now();
		for (int i = 0; i < 1000; i++)
			if ((e = side[k](f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL,
					 NULL))) {
				fprintf(stderr, "launches: cuLaunchKernel (%s): %d\n",
					k ? "direct" : "hooked", (int)e);
				return 1;
			}
		CK(cudaStreamSynchronize(0));
		t[k] += now() - s;
		n[k] += 1000;
	}
	printf("hooked: %ld launches in %.3f s: %.0f launches/s\n", n[0], t[0],
	       n[0] / t[0]);
	printf("direct: %ld launches in %.3f s: %.0f launches/s\n", n[1], t[1],
	       n[1] / t[1]);
	printf("ratio hooked/direct: %.4f\n", (n[0] / t[0]) / (n[1] / t[1]));
	return 0;
}

int main(int argc, char **argv)
{
	const size_t sz_a = (1 << 20) + 4096, sz_b = (1 << 20) + 8192;
	const size_t sz_c = (1 << 20) + 12288, sz_h = (1 << 20) + 16384;
	const int n = 1 << 14;
	const char *out = NULL;
	bool wait = false;
	float *fa, *fb, *fc, *h;
	cudaGraphExec_t exec;
	cudaStream_t st;
	cudaGraph_t graph;
	CUfunction drv;
	CUmodule mod;
	int c;

	const char *cupti = NULL;

	while ((c = getopt(argc, argv, "so:b:C:a:")) != -1) {
		switch (c) {
		case 's':
			wait = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 'C':
			cupti = optarg;
			break;
		case 'b': {
			bool pcs = cupti && !strncmp(cupti, "pcs", 3);

			if (cupti && (pcs ? cupti_pcfloor_open(cupti) :
				      cupti_floor_start(cupti)))
				return 1;
			c = bench(atof(optarg), pcs);
			if (pcs && !c)
				cupti_pcfloor_stop(stdout);
			else if (cupti && !c)
				cupti_floor_stop();
			return c;
		}
		case 'a':
			return bench_ab(atof(optarg));
		default:
			fprintf(stderr, "usage: launches [-s] [-o FILE] | [-C kernel|latency|pcs:PERIOD] -b SECONDS | -a SECONDS\n");
			return 2;
		}
	}
	signal(SIGUSR1, on_usr1);
	CK(cudaFree(0));	/* the driver is loaded, no module yet */
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		while (!go)
			pause();
	}
	CK(cudaStreamCreate(&st));
	CK(cudaMalloc(&fa, sz_a));
	CK(cudaMalloc(&fb, sz_b));
	CK(cudaMalloc(&fc, sz_c));
	CK(cudaMallocHost(&h, sz_h));

	for (int i = 0; i < 10; i++)
		gt::vadd<float><<<64, 256, 0, st>>>(fa, fb, fc, n);
	for (int i = 0; i < 20; i++)
		gt::vadd<int><<<32, 128, 0, st>>>((int *)fa, (int *)fb,
						   (int *)fc, n);
	for (int i = 0; i < 30; i++)
		scale<<<16, 64, 0, st>>>(fa, 2.0f, n);
	CK(cudaStreamSynchronize(st));

	/* the driver API, on the runtime's primary context */
	CD(cuModuleLoadData(&mod, drv_ptx));
	CD(cuModuleGetFunction(&drv, mod, "drv_nop"));
	for (int i = 0; i < 3; i++)
		CD(cuLaunchKernel(drv, 4, 1, 1, 32, 1, 1, 0, st, NULL, NULL));
	for (int i = 0; i < 7; i++) {
		CUlaunchConfig cfg;

		memset(&cfg, 0, sizeof(cfg));
		cfg.gridDimX = 2;
		cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = 64;
		cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.hStream = st;
		CD(cuLaunchKernelEx(&cfg, drv, NULL, NULL));
	}

	/* a graph of one kernel node, launched 5 times */
	{
		cudaKernelNodeParams p;
		cudaGraphNode_t node;
		float s = 0.5f;
		int nn = n;
		void *args[] = { &fa, &s, &nn };

		memset(&p, 0, sizeof(p));
		p.func = (void *)scale;
		p.gridDim = dim3(8);
		p.blockDim = dim3(32);
		p.kernelParams = args;
		CK(cudaGraphCreate(&graph, 0));
		CK(cudaGraphAddKernelNode(&node, graph, NULL, 0, &p));
		CK(cudaGraphInstantiate(&exec, graph, 0));
		for (int i = 0; i < 5; i++)
			CK(cudaGraphLaunch(exec, st));
	}
	CK(cudaStreamSynchronize(st));
	CK(cudaDeviceSynchronize());

	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(graph));
	CD(cuModuleUnload(mod));
	CK(cudaFree(fa));
	CK(cudaFree(fb));
	CK(cudaFree(fc));
	CK(cudaFreeHost(h));
	CK(cudaStreamDestroy(st));
	if (out) {
		FILE *f = fopen(out, "w");

		if (!f) {
			perror(out);
			return 1;
		}
		fprintf(f, "@[drv_nop, 4, 32]: 3\n");
		fprintf(f, "@[drv_nop, 2, 64]: 7\n");
		fprintf(f, "@[gt::vadd<float>, 64, 256]: 10\n");
		fprintf(f, "@[gt::vadd<int>, 32, 128]: 20\n");
		fprintf(f, "@[scale, 16, 64]: 30\n");
		fprintf(f, "@graph: 5\n");
		fprintf(f, "@malloc[%zu]: 1\n@malloc[%zu]: 1\n", sz_a, sz_b);
		fprintf(f, "@malloc[%zu]: 1\n@malloc[%zu]: 1\n", sz_c, sz_h);
		fprintf(f, "@v[gt::vadd<float>]: 10\n@v[gt::vadd<int>]: 20\n");
		fprintf(f, "@s: 30\n");
		fprintf(f, "syncs: 3\n");
		fclose(f);
	}
	return 0;
}
