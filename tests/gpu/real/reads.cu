// SPDX-License-Identifier: MIT
/*
 * The target of tests/gpu/device_reads.sh: device probes reading the
 * program's memory.  count_big(in, n, out) copies in[i] to out[i] for
 * i < n over N_ELEMS int32s from cudaMalloc, twice, and from managed
 * memory once; the program counts the elements above 100 itself and
 * prints "expect big B launches L n N", then "checksum C" and
 * "results ok" when the copies are right.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define N_ELEMS 100000
#define THREADS 256

__global__ void count_big(const int *in, int n, int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = in[i];
}

int main(void)
{
	int *h = (int *)malloc(N_ELEMS * sizeof(int));
	int *back = (int *)malloc(N_ELEMS * sizeof(int));
	int *in, *out, *man, big = 0, blocks = (N_ELEMS + THREADS - 1) / THREADS;
	unsigned long long sum = 0;
	bool ok = true;

	for (int i = 0; i < N_ELEMS; i++) {
		h[i] = (int)((i * 2654435761u) % 1000) - 300;
		big += h[i] > 100;
		sum += (unsigned)h[i] * (unsigned long long)(i + 1);
	}
	if (cudaMalloc(&in, N_ELEMS * sizeof(int)) ||
	    cudaMalloc(&out, N_ELEMS * sizeof(int)) ||
	    cudaMallocManaged(&man, N_ELEMS * sizeof(int))) {
		printf("no memory\n");
		return 1;
	}
	cudaMemcpy(in, h, N_ELEMS * sizeof(int), cudaMemcpyHostToDevice);
	for (int i = 0; i < N_ELEMS; i++)
		man[i] = h[i];
	for (int r = 0; r < 2; r++)
		count_big<<<blocks, THREADS>>>(in, N_ELEMS, out);
	count_big<<<blocks, THREADS>>>(man, N_ELEMS, out);
	cudaDeviceSynchronize();
	cudaMemcpy(back, out, N_ELEMS * sizeof(int), cudaMemcpyDeviceToHost);
	for (int i = 0; i < N_ELEMS && ok; i++)
		ok = back[i] == h[i];
	printf("expect big %d launches 3 n %d\n", big, N_ELEMS);
	printf("checksum %llu\n", sum);
	printf(ok ? "results ok\n" : "results WRONG\n");
	cudaFree(in);
	cudaFree(out);
	cudaFree(man);
	return ok ? 0 : 1;
}
