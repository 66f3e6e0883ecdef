// SPDX-License-Identifier: MIT
/*
 * The workload of bench/real: kernels as real programs have them.
 *   CUB (through thrust) radix sort, reduce and inclusive scan of 2^24
 *   unsigned keys, and CUB's for_each zeroing the scan's output (the
 *   kernel a device_vector's constructor runs); a tiled shared-memory
 *   SGEMM (1024^3, 64x64 tiles, 4x4 outputs per thread: register-heavy,
 *   occupancy-bound); a
 *   softmax over rows (4096 x 1024, one warp per row, shuffles); a 2-D
 *   5-point stencil (4096^2).
 * Each runs ITERS times (default 20) after one warm-up round; the
 * program checks a few results against the host and prints a checksum.
 *
 * Usage: real [ITERS]
 */
#include <thrust/device_vector.h>
#include <thrust/uninitialized_fill.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)

#define GN	1024	/* GEMM size */
#define TILE	64
#define TK	8

/* C = A B, row-major; each 16x16 block computes a 64x64 tile, 4x4 per thread */
__global__ void __launch_bounds__(256) sgemm_tiled(const float *A, const float *B,
						   float *C, int n)
{
	__shared__ float As[TK][TILE], Bs[TK][TILE];
	int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
	int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
	float acc[4][4] = {};

	for (int k0 = 0; k0 < n; k0 += TK) {
		for (int i = threadIdx.x; i < TK * TILE; i += 256) {
			int r = i / TK, c = i % TK;	/* A tile: 64 rows x 8 */
			As[c][r] = A[(row0 + r) * n + k0 + c];
			int rb = i / TILE, cb = i % TILE;	/* B: 8 x 64 */
			Bs[rb][cb] = B[(k0 + rb) * n + col0 + cb];
		}
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TK; k++) {
			float a[4], b[4];
#pragma unroll
			for (int i = 0; i < 4; i++) {
				a[i] = As[k][ty * 4 + i];
				b[i] = Bs[k][tx * 4 + i];
			}
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					acc[i][j] += a[i] * b[j];
		}
		__syncthreads();
	}
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			C[(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = acc[i][j];
}

/* one warp per row: max, sum of exp, normalise */
__global__ void softmax_rows(const float *x, float *y, int rows, int cols)
{
	int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x % 32;

	if (row >= rows)
		return;
	const float *r = x + (size_t)row * cols;
	float m = -INFINITY, s = 0;

	for (int i = lane; i < cols; i += 32)
		m = fmaxf(m, r[i]);
	for (int o = 16; o; o /= 2)
		m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
	for (int i = lane; i < cols; i += 32)
		s += __expf(r[i] - m);
	for (int o = 16; o; o /= 2)
		s += __shfl_xor_sync(0xffffffff, s, o);
	for (int i = lane; i < cols; i += 32)
		y[(size_t)row * cols + i] = __expf(r[i] - m) / s;
}

__global__ void stencil5(const float *in, float *out, int n)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1)
		return;
	out[y * n + x] = 0.5f * in[y * n + x] +
			 0.125f * (in[y * n + x - 1] + in[y * n + x + 1] +
				   in[(y - 1) * n + x] + in[(y + 1) * n + x]);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20;
	const int nk = 1 << 24, rows = 4096, cols = 1024, sn = 4096;
	std::vector<unsigned> hk(nk);
	std::vector<float> ha(GN * GN), hb(GN * GN);
	float *A, *B, *C, *X, *Y, *S0, *S1;
	unsigned long long sum = 0;
	bool ok = true;

	for (int i = 0; i < nk; i++)
		hk[i] = (unsigned)(i * 2654435761u) >> 3;
	for (int i = 0; i < GN * GN; i++) {
		ha[i] = (float)(i % 5) - 2.0f;
		hb[i] = (float)(i % 3) - 1.0f;
	}
	CK(cudaMalloc(&A, GN * GN * 4));
	CK(cudaMalloc(&B, GN * GN * 4));
	CK(cudaMalloc(&C, GN * GN * 4));
	CK(cudaMalloc(&X, (size_t)rows * cols * 4));
	CK(cudaMalloc(&Y, (size_t)rows * cols * 4));
	CK(cudaMalloc(&S0, (size_t)sn * sn * 4));
	CK(cudaMalloc(&S1, (size_t)sn * sn * 4));
	CK(cudaMemcpy(A, ha.data(), GN * GN * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(B, hb.data(), GN * GN * 4, cudaMemcpyHostToDevice));
	CK(cudaMemset(X, 0, (size_t)rows * cols * 4));
	CK(cudaMemset(S0, 0, (size_t)sn * sn * 4));
	thrust::device_vector<unsigned> keys(nk), scan(nk);

	for (int it = 0; it <= iters; it++) {
		thrust::copy(hk.begin(), hk.end(), keys.begin());
		thrust::sort(keys.begin(), keys.end());
		unsigned long long r = thrust::reduce(keys.begin(), keys.end(),
						      0ull);
		/* cub::for_each, the kernel device_vector's constructor runs */
		thrust::uninitialized_fill_n(scan.data(), (unsigned long)nk, 0u);
		thrust::inclusive_scan(keys.begin(), keys.end(), scan.begin());
		sgemm_tiled<<<dim3(GN / TILE, GN / TILE), 256>>>(A, B, C, GN);
		softmax_rows<<<rows / 8, 256>>>(X, Y, rows, cols);
		stencil5<<<dim3(sn / 32, sn / 8), dim3(32, 8)>>>(S0, S1, sn);
		CK(cudaDeviceSynchronize());
		if (it == iters)
			sum = r;
	}
	/* checks: sorted order, one GEMM element, softmax of zeros */
	unsigned k0, k1;
	float c, y;
	CK(cudaMemcpy(&k0, thrust::raw_pointer_cast(keys.data()) + nk / 2, 4,
		      cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&k1, thrust::raw_pointer_cast(keys.data()) + nk / 2 + 1,
		      4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&c, C + 5 * GN + 7, 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&y, Y + 123, 4, cudaMemcpyDeviceToHost));
	float w = 0;
	for (int k = 0; k < GN; k++)
		w += ha[5 * GN + k] * hb[k * GN + 7];
	if (k0 > k1 || c != w || fabsf(y - 1.0f / cols) > 1e-6f)
		ok = false;
	printf("checksum %llu %.0f\n", sum, c);
	printf(ok ? "results ok\n" : "results WRONG\n");
	return ok ? 0 : 1;
}
