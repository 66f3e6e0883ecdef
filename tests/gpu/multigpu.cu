// SPDX-License-Identifier: MIT
/*
 * Several GPUs from one process, or one process per GPU, with their own
 * ground truth:
 *
 *   multigpu all ITERS       vadd on every GPU, 128 * (gpu + 1) blocks of
 *                            256, ITERS times each
 *   multigpu one GPU ITERS   the same on that GPU only
 *   multigpu bench N ITERS   per GPU, a timed loop of vadd on N elements:
 *                            "gpu G us_per_launch X"
 *
 * For each GPU run it prints "expect gpu G warps W blocks B" (launches x
 * warps, launches x blocks) and exits 2 if any result is wrong.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
	exit(2); } } while (0)

__global__ void vadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

struct bufs {
	float *a, *b, *c;
	int n;
};

static bufs setup(int gpu, int n)
{
	bufs d;
	float *h = (float *)malloc(n * sizeof(float));

	CK(cudaSetDevice(gpu));
	for (int i = 0; i < n; i++)
		h[i] = (float)(i % 1000);
	CK(cudaMalloc(&d.a, n * sizeof(float)));
	CK(cudaMalloc(&d.b, n * sizeof(float)));
	CK(cudaMalloc(&d.c, n * sizeof(float)));
	CK(cudaMemcpy(d.a, h, n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d.b, h, n * sizeof(float), cudaMemcpyHostToDevice));
	free(h);
	d.n = n;
	return d;
}

static void check(int gpu, const bufs &d)
{
	float *h = (float *)malloc(d.n * sizeof(float));

	CK(cudaSetDevice(gpu));
	CK(cudaMemcpy(h, d.c, d.n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < d.n; i++)
		if (h[i] != 2.0f * (float)(i % 1000)) {
			fprintf(stderr, "gpu %d: wrong result at %d\n", gpu, i);
			exit(2);
		}
	free(h);
	CK(cudaFree(d.a));
	CK(cudaFree(d.b));
	CK(cudaFree(d.c));
}

static void run(int gpu, int iters)
{
	int blocks = 128 * (gpu + 1);
	bufs d = setup(gpu, blocks * 256);

	for (int i = 0; i < iters; i++)
		vadd<<<blocks, 256>>>(d.a, d.b, d.c, d.n);
	CK(cudaDeviceSynchronize());
	check(gpu, d);
	printf("expect gpu %d warps %lld blocks %lld\n", gpu,
	       (long long)iters * blocks * 8, (long long)iters * blocks);
}

static void bench(int gpu, int n, int iters)
{
	bufs d = setup(gpu, n);
	cudaEvent_t e0, e1;
	float ms;

	vadd<<<n / 256, 256>>>(d.a, d.b, d.c, n);	/* warm-up: JIT */
	CK(cudaDeviceSynchronize());
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0));
	for (int i = 0; i < iters; i++)
		vadd<<<n / 256, 256>>>(d.a, d.b, d.c, n);
	CK(cudaEventRecord(e1));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	check(gpu, d);
	printf("gpu %d us_per_launch %.3f\n", gpu, ms * 1000.0 / iters);
}

int main(int argc, char **argv)
{
	int ngpu = 0;

	CK(cudaGetDeviceCount(&ngpu));
	if (argc == 3 && !strcmp(argv[1], "all")) {
		for (int g = 0; g < ngpu; g++)
			run(g, atoi(argv[2]));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "one") && atoi(argv[2]) < ngpu) {
		run(atoi(argv[2]), atoi(argv[3]));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "bench")) {
		for (int g = 0; g < ngpu; g++)
			bench(g, atoi(argv[2]), atoi(argv[3]));
		return 0;
	}
	fprintf(stderr, "usage: multigpu all ITERS | one GPU ITERS | "
		"bench N ITERS\n");
	return 2;
}
