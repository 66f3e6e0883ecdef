// SPDX-License-Identifier: MIT
/*
 * Workloads for the GPU suite and bench/overhead, with their own ground
 * truth.  Each mode prints what a tracer should see, then "checksum X"
 * over its results so traced and untraced runs can be compared.
 *
 *   gpuprog vadd N ITERS        vadd<<<N/256, 256>>> ITERS times
 *   gpuprog imbalanced BLOCKS   block work proportional to blockIdx.x % 8
 *   gpuprog multi               vadd 3 times, scale 2 times
 *   gpuprog bench N ITERS       timed vadd loop: "us_per_launch X"
 *   gpuprog twin N ITERS        vadd and its twin vadd_ref (same code, a
 *                               name no vadd probe matches), ITERS each in
 *                               alternating chunks timed by events:
 *                               "us_per_launch X" (vadd), "twin_us Y"
 *   gpuprog compute ITERS       timed compute-bound kernel
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
	exit(2); } } while (0)

__global__ void vadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

/* vadd under another name: the same launches, left alone by vadd probes */
__global__ void vadd_ref(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void scale(float *c, float k, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] *= k;
}

/* every thread of block b spins (b % 8 + 1) * unit clock ticks */
__global__ void imbalanced(unsigned long long unit, unsigned long long *out)
{
	unsigned long long t0 = clock64(), want = (blockIdx.x % 8 + 1) * unit;
	unsigned long long x = 0;

	while (clock64() - t0 < want)
		x++;
	if (threadIdx.x == 0)
		out[blockIdx.x] = x ? (blockIdx.x % 8 + 1) : 0;
}

__global__ void compute(float *c, int n, int rounds)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float x = i * 0.001f;

	for (int r = 0; r < rounds; r++)
		x = x * 1.000001f + 0.5f * __sinf(x);
	if (i < n)
		c[i] = x;
}

static unsigned long long checksum(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	unsigned long long h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static float *dev_fill(int n, float base)
{
	float *h = (float *)malloc(n * sizeof(float)), *d;

	for (int i = 0; i < n; i++)
		h[i] = base + (float)(i % 1000) * 0.25f;
	CK(cudaMalloc(&d, n * sizeof(float)));
	CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
	free(h);
	return d;
}

static void print_sum(const float *d, int n)
{
	float *h = (float *)malloc(n * sizeof(float));

	CK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
	printf("checksum %llx\n", checksum(h, n * sizeof(float)));
	free(h);
}

static int run_vadd(int n, int iters, bool timed)
{
	float *a = dev_fill(n, 1), *b = dev_fill(n, 2), *c;
	int blocks = (n + 255) / 256;
	cudaEvent_t e0, e1;
	float ms;

	CK(cudaMalloc(&c, n * sizeof(float)));
	if (timed) {
		vadd<<<blocks, 256>>>(a, b, c, n);	/* warm-up: JIT, caches */
		CK(cudaDeviceSynchronize());
	}
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0));
	for (int i = 0; i < iters; i++)
		vadd<<<blocks, 256>>>(a, b, c, n);
	CK(cudaEventRecord(e1));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	if (timed)
		printf("us_per_launch %.3f\n", ms * 1000.0 / iters);
	else
		printf("expect warps %lld threads %lld blocks %d\n",
		       (long long)iters * blocks * 8, (long long)iters * n, blocks);
	print_sum(c, n);
	return 0;
}

static int run_imbalanced(int blocks)
{
	unsigned long long *out, *h = (unsigned long long *)calloc(blocks, 8);
	unsigned long long total = 0;

	CK(cudaMalloc(&out, blocks * 8));
	imbalanced<<<blocks, 128>>>(20000, out);
	CK(cudaMemcpy(h, out, blocks * 8, cudaMemcpyDeviceToHost));
	for (int i = 0; i < blocks; i++)
		total += h[i];
	printf("expect blocks %d warps %d weight %llu\n", blocks, blocks * 4, total);
	printf("checksum %llx\n", checksum(h, blocks * 8));
	return 0;
}

static int run_multi(void)
{
	int n = 4096;
	float *a = dev_fill(n, 1), *b = dev_fill(n, 2), *c;

	CK(cudaMalloc(&c, n * sizeof(float)));
	for (int i = 0; i < 3; i++)
		vadd<<<n / 256, 256>>>(a, b, c, n);
	for (int i = 0; i < 2; i++)
		scale<<<n / 256, 256>>>(c, 0.5f, n);
	CK(cudaDeviceSynchronize());
	printf("expect vadd 3 scale 2\n");
	print_sum(c, n);
	return 0;
}

/*
 * Side by side in one process: chunks of TWIN_CHUNK launches of vadd and
 * of vadd_ref alternate (ABBA, so neither always goes first), each chunk
 * between two events, so drift in the host's launch rate (which bounds
 * small grids) falls on both alike.
 */
#define TWIN_CHUNK 50
static int run_twin(int n, int iters)
{
	float *a = dev_fill(n, 1), *b = dev_fill(n, 2), *c, ms, t[2] = { 0, 0 };
	int blocks = (n + 255) / 256, rounds = (iters + TWIN_CHUNK - 1) / TWIN_CHUNK;
	cudaEvent_t *ev = (cudaEvent_t *)malloc(4 * rounds * sizeof(*ev));

	CK(cudaMalloc(&c, n * sizeof(float)));
	vadd<<<blocks, 256>>>(a, b, c, n);	/* warm-up: JIT, caches */
	vadd_ref<<<blocks, 256>>>(a, b, c, n);
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < 4 * rounds; i++)
		CK(cudaEventCreate(&ev[i]));
	for (int r = 0; r < rounds; r++)
		for (int h = 0; h < 2; h++) {
			int which = h ^ (r & 1);	/* 0: vadd */

			CK(cudaEventRecord(ev[4 * r + 2 * which]));
			for (int i = 0; i < TWIN_CHUNK; i++)
				if (which)
					vadd_ref<<<blocks, 256>>>(a, b, c, n);
				else
					vadd<<<blocks, 256>>>(a, b, c, n);
			CK(cudaEventRecord(ev[4 * r + 2 * which + 1]));
		}
	CK(cudaDeviceSynchronize());
	for (int r = 0; r < rounds; r++)
		for (int w = 0; w < 2; w++) {
			CK(cudaEventElapsedTime(&ms, ev[4 * r + 2 * w],
						ev[4 * r + 2 * w + 1]));
			t[w] += ms;
		}
	for (int i = 0; i < 4 * rounds; i++)
		CK(cudaEventDestroy(ev[i]));
	free(ev);
	printf("us_per_launch %.3f\ntwin_us %.3f\n",
	       t[0] * 1000.0 / (rounds * TWIN_CHUNK),
	       t[1] * 1000.0 / (rounds * TWIN_CHUNK));
	print_sum(c, n);
	return 0;
}

static int run_compute(int iters)
{
	int n = 1 << 20;
	float *c, ms;
	cudaEvent_t e0, e1;

	CK(cudaMalloc(&c, n * sizeof(float)));
	compute<<<n / 256, 256>>>(c, n, 2000);
	CK(cudaDeviceSynchronize());
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0));
	for (int i = 0; i < iters; i++)
		compute<<<n / 256, 256>>>(c, n, 2000);
	CK(cudaEventRecord(e1));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	printf("us_per_launch %.3f\n", ms * 1000.0 / iters);
	print_sum(c, n);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "vadd";

	if (!strcmp(mode, "vadd"))
		return run_vadd(argc > 2 ? atoi(argv[2]) : 1 << 20,
				argc > 3 ? atoi(argv[3]) : 10, false);
	if (!strcmp(mode, "bench"))
		return run_vadd(argc > 2 ? atoi(argv[2]) : 1 << 20,
				argc > 3 ? atoi(argv[3]) : 1000, true);
	if (!strcmp(mode, "twin"))
		return run_twin(argc > 2 ? atoi(argv[2]) : 1 << 20,
				argc > 3 ? atoi(argv[3]) : 1000);
	if (!strcmp(mode, "imbalanced"))
		return run_imbalanced(argc > 2 ? atoi(argv[2]) : 1056);
	if (!strcmp(mode, "multi"))
		return run_multi();
	if (!strcmp(mode, "compute"))
		return run_compute(argc > 2 ? atoi(argv[2]) : 50);
	fprintf(stderr, "usage: gpuprog vadd|bench|twin|imbalanced|multi|"
		"compute ...\n");
	return 1;
}
