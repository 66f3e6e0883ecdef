// SPDX-License-Identifier: MIT
/*
 * Why smload maps without key have a shard per SM group (devrt.h,
 * DEVRT_SMLOAD_SHARDS): bench/real's 5-point stencil (4096^2, 32x8
 * blocks) with one 64-bit atomicAdd per warp on its SM's word, the words
 * laid out in different ways, timed with CUDA events (50 launches).  On
 * the H200 (2026-12-01): native 63.3 us; packed words, as smload had them
 * in one shard, 206.7 us; a 32-byte sector per SM 75.6 us; a 128-byte
 * line per SM 65.5 us, and the same with 8 slabs 65.5 us.
 *
 *   nvcc -O2 -arch=sm_90 bench/workloads/smload_layout.cu -o smload_layout
 */
#include <cstdio>

__device__ __forceinline__ unsigned smid()
{
	unsigned r;

	asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
	return r;
}

/* MODE 0: no atomics; 1: packed words; 2: a line per SM; 3: a line per
 * SM and 8 slabs; 5: a sector per SM */
template <int MODE>
__global__ void st(const float *in, float *out, int n, unsigned long long *w)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;

	if (MODE && threadIdx.x == 0) {
		unsigned s = smid();
		unsigned long long *p;

		if (MODE == 1)
			p = w + s;
		else if (MODE == 2)
			p = w + s * 16;
		else if (MODE == 3)
			p = w + s * 16 + (threadIdx.y & 7) * 2048;
		else
			p = w + s * 4;
		atomicAdd(p, 1ull);
	}
	if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1)
		return;
	out[y * n + x] = 0.5f * in[y * n + x] +
			 0.125f * (in[y * n + x - 1] + in[y * n + x + 1] +
				   in[(y - 1) * n + x] + in[(y + 1) * n + x]);
}

template <int M> float run(float *a, float *b, int n, unsigned long long *w)
{
	cudaEvent_t e0, e1;
	dim3 g(n / 32, n / 8), bl(32, 8);
	float ms;

	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	for (int i = 0; i < 5; i++)
		st<M><<<g, bl>>>(a, b, n, w);
	cudaEventRecord(e0);
	for (int i = 0; i < 50; i++)
		st<M><<<g, bl>>>(a, b, n, w);
	cudaEventRecord(e1);
	cudaEventSynchronize(e1);
	cudaEventElapsedTime(&ms, e0, e1);
	return ms * 1000 / 50;
}

int main()
{
	int n = 4096;
	float *a, *b;
	unsigned long long *w;

	cudaMalloc(&a, n * n * 4);
	cudaMalloc(&b, n * n * 4);
	cudaMalloc(&w, 1 << 22);
	cudaMemset(a, 0, n * n * 4);
	cudaMemset(w, 0, 1 << 22);
	for (int r = 0; r < 2; r++) {
		printf("native %.1f us\n", run<0>(a, b, n, w));
		printf("packed words %.1f us\n", run<1>(a, b, n, w));
		printf("a sector per SM %.1f us\n", run<5>(a, b, n, w));
		printf("a line per SM %.1f us\n", run<2>(a, b, n, w));
		printf("a line per SM, 8 slabs %.1f us\n", run<3>(a, b, n, w));
	}
	return 0;
}
