// SPDX-License-Identifier: MIT
/*
 * Several CUDA contexts in one process (the multi-GPU code paths on one
 * GPU): vadd launched 3 times in context A and 5 times in context B, each
 * created with cuCtxCreate and made current for runtime-API launches.
 * Prints the warps a tracer should count and a checksum.
 */
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void vadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

static unsigned long long run(CUcontext ctx, int launches, int n)
{
	float *a, *b, *c, h[4096];
	unsigned long long sum = 0;

	cuCtxSetCurrent(ctx);
	cudaMalloc(&a, n * sizeof(float));
	cudaMalloc(&b, n * sizeof(float));
	cudaMalloc(&c, n * sizeof(float));
	for (int i = 0; i < n; i++)
		h[i] = (float)i;
	cudaMemcpy(a, h, n * sizeof(float), cudaMemcpyHostToDevice);
	cudaMemcpy(b, h, n * sizeof(float), cudaMemcpyHostToDevice);
	for (int i = 0; i < launches; i++)
		vadd<<<n / 256, 256>>>(a, b, c, n);
	if (cudaDeviceSynchronize() != cudaSuccess) {
		fprintf(stderr, "launch failed\n");
		exit(2);
	}
	cudaMemcpy(h, c, n * sizeof(float), cudaMemcpyDeviceToHost);
	for (int i = 0; i < n; i++)
		sum += (unsigned long long)h[i];
	return sum;
}

int main(void)
{
	CUdevice dev;
	CUcontext a, b;
	int n = 4096;
	unsigned long long s;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&a, NULL, 0, dev) ||
	    cuCtxCreate(&b, NULL, 0, dev)) {
		fprintf(stderr, "no contexts\n");
		return 2;
	}
	s = run(a, 3, n) + run(b, 5, n);
	printf("expect warps %d\n", (3 + 5) * (n / 256) * 8);
	printf("checksum %llu\n", s);
	cuCtxDestroy(b);
	cuCtxDestroy(a);
	return 0;
}
