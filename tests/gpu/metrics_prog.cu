// SPDX-License-Identifier: MIT
/*
 * For tests/gpu/metrics.sh: mvadd<<<N/256, 256>>> ITERS times, then
 * "expect launches ITERS warps W", then wait (20 s at most) until FILE
 * exists, so that the tracer can be scraped while the program lives.
 *
 *   metrics_prog N ITERS FILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__global__ void mvadd(const float *a, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + 1.0f;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
	int iters = argc > 2 ? atoi(argv[2]) : 10;
	const char *wait = argc > 3 ? argv[3] : NULL;
	int blocks = (n + 255) / 256;
	float *a, *c;

	if (cudaMalloc(&a, n * sizeof(float)) || cudaMalloc(&c, n * sizeof(float))) {
		fprintf(stderr, "cudaMalloc failed\n");
		return 1;
	}
	cudaMemset(a, 0, n * sizeof(float));
	for (int i = 0; i < iters; i++)
		mvadd<<<blocks, 256>>>(a, c, n);
	if (cudaDeviceSynchronize()) {
		fprintf(stderr, "kernel failed\n");
		return 1;
	}
	printf("expect launches %d warps %lld\n", iters,
	       (long long)iters * blocks * (256 / 32));
	fflush(stdout);
	for (int i = 0; wait && i < 2000 && access(wait, F_OK); i++)
		usleep(10000);
	cudaFree(a);
	cudaFree(c);
	return 0;
}
