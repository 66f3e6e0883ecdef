// SPDX-License-Identifier: MIT
/*
 * Target of tests/gpu/agent_standalone.sh (its kernels are also the
 * fatbin of tests/accept/agent_hooks.sh).  vadd runs ITERS times through
 * the runtime API (<<<>>>) and twice through the driver API (kernelParams
 * and `extra`); uses_global touches a __device__ variable (the agent
 * must leave it alone); sass_kernel (agent_sass.cu) has no PTX.  Prints
 * a checksum of every result and the launch counts, so the script can
 * compare runs with and without the agent and compute the probe counts.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N (1 << 20)
#define BLOCK 256
#define ITERS 10

__device__ int gt_test_counter = 7;

__global__ void vadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] * b[i] + c[i];
}

__global__ void uses_global(float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	/* reads only: a write here would race with the other blocks */
	if (i < n)
		c[i] += (float)gt_test_counter;
}

__global__ void sass_kernel(float *c, int n);	/* agent_sass.cu */

#define CK(x) do { \
	if ((x) != 0) { \
		fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x); \
		return 1; \
	} \
} while (0)

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = (const unsigned char *)p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

int main(void)
{
	static float ha[N], hb[N], hc[N];
	float *a, *b, *c, *d;
	int n = N, grid = N / BLOCK;
	uint64_t h = 0xcbf29ce484222325ull;
	CUfunction f;

	for (int i = 0; i < N; i++) {
		ha[i] = (float)(i % 1000) * 0.001f;
		hb[i] = (float)((i * 7) % 1000) * 0.002f;
		hc[i] = 0;
	}
	CK(cudaMalloc(&a, sizeof(ha)));
	CK(cudaMalloc(&b, sizeof(hb)));
	CK(cudaMalloc(&c, sizeof(hc)));
	CK(cudaMalloc(&d, sizeof(hc)));
	CK(cudaMemcpy(a, ha, sizeof(ha), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(b, hb, sizeof(hb), cudaMemcpyHostToDevice));
	CK(cudaMemset(c, 0, sizeof(hc)));
	CK(cudaMemset(d, 0, sizeof(hc)));

	/* the runtime API: reaches the driver through cuGetProcAddress */
	for (int it = 0; it < ITERS; it++)
		vadd<<<grid, BLOCK>>>(a, b, c, n);
	CK(cudaGetLastError());

	/* the driver API, as a -lcuda program calls it */
	CK(cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)vadd));
	{
		void *params[] = { &a, &b, &c, &n };
		unsigned char buf[32];
		size_t size = 28;
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
				  CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
				  CU_LAUNCH_PARAM_END };

		memcpy(buf, &a, 8);
		memcpy(buf + 8, &b, 8);
		memcpy(buf + 16, &c, 8);
		memcpy(buf + 24, &n, 4);
		CK(cuLaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, NULL, params,
				  NULL));
		CK(cuLaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, NULL, NULL,
				  extra));
	}

	uses_global<<<grid, BLOCK>>>(d, n);
	sass_kernel<<<grid, BLOCK>>>(d, n);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(hc, c, sizeof(hc), cudaMemcpyDeviceToHost));
	h = fnv(hc, sizeof(hc), h);
	CK(cudaMemcpy(hc, d, sizeof(hc), cudaMemcpyDeviceToHost));
	h = fnv(hc, sizeof(hc), h);
	printf("checksum %016llx\n", (unsigned long long)h);
	printf("vadd launches %d warps %d\n", ITERS + 2, grid * BLOCK / 32);
	return 0;
}
