// SPDX-License-Identifier: MIT
/*
 * gpu:sample's ground truth (tests/gpu/sample.sh, bench/sample): two
 * kernels of known character and a cuBLAS SGEMM.
 *
 *   stream_scale  reads and writes 256 MiB 8 times per run, one float4
 *                 per thread and step: memory-bound, its warps wait on
 *                 loads (long_scoreboard);
 *   fma_chain     8 independent FMA chains per thread, no memory in the
 *                 loop: bound by the FMA pipe, never by memory;
 *   cuBLAS        cublasSgemm, 2048 x 2048.
 *
 * Both hand-written kernels run one wave (blocks = 4 per SM, 256
 * threads) so that the GPU is busy for the whole of each run and the
 * samples follow the run time.  Usage: sample [-n ROUNDS] [-g GEMMS]
 * [-k] (-k: no cuBLAS).  Prints a checksum of every result (identical
 * with and without the tracer).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CK(x)                                                               \
	do {                                                                \
		cudaError_t e_ = (x);                                       \
		if (e_ != cudaSuccess) {                                    \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
			exit(1);                                            \
		}                                                           \
	} while (0)

__global__ void stream_scale(const float4 *in, float4 *out, size_t n, float a,
			     int passes)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (int p = 0; p < passes; p++)
		for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
		     i < n; i += stride) {
			float4 v = in[i];

			out[i] = make_float4(v.x * a, v.y * a, v.z * a,
					     v.w * a + p);
		}
}

__global__ void fma_chain(float *out, int iters, float b, float c)
{
	unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
	float x[8];

	for (int k = 0; k < 8; k++)
		x[k] = (float)(t + k) * 1e-6f;
	for (int i = 0; i < iters; i++)
#pragma unroll
		for (int k = 0; k < 8; k++)
			x[k] = fmaf(x[k], b, c);
	out[t] = x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
}

static double checksum(const float *d, size_t n)
{
	float *h = (float *)malloc(n * sizeof(float));
	double s = 0;

	CK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++)
		s += h[i] * (double)((i % 7) + 1);
	free(h);
	return s;
}

int main(int argc, char **argv)
{
	int rounds = 200, gemms = 200, sms = 0, opt, nogemm = 0;
	const size_t n4 = (256u << 20) / sizeof(float4) / 2;	/* in + out */
	const int N = 2048;
	float4 *in, *out;
	float *f, *A, *B, *C;

	while ((opt = getopt(argc, argv, "n:g:k")) != -1) {
		if (opt == 'n')
			rounds = atoi(optarg);
		else if (opt == 'g')
			gemms = atoi(optarg);
		else if (opt == 'k')
			nogemm = 1;
		else
			return 2;
	}
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const int blocks = sms * 4, threads = 256;

	CK(cudaMalloc(&in, n4 * sizeof(float4)));
	CK(cudaMalloc(&out, n4 * sizeof(float4)));
	CK(cudaMalloc(&f, (size_t)blocks * threads * sizeof(float)));
	{
		float *h = (float *)malloc(n4 * sizeof(float4));

		for (size_t i = 0; i < 4 * n4; i++)
			h[i] = (float)(i % 1000) * 1e-3f;
		CK(cudaMemcpy(in, h, n4 * sizeof(float4),
			      cudaMemcpyHostToDevice));
		free(h);
	}
	for (int r = 0; r < rounds; r++) {
		stream_scale<<<blocks, threads>>>(in, out, n4, 1.0f + r, 8);
		fma_chain<<<blocks, threads>>>(f, 1 << 14, 0.999f, 1e-3f);
	}
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	if (rounds > 0) {
		printf("stream %.6e\n", checksum((float *)out, 4 * 1024));
		printf("fma %.9e\n", checksum(f, (size_t)blocks * threads));
	}

	if (!nogemm && gemms > 0) {
		cublasHandle_t h;
		const float one = 1.0f, zero = 0.0f;
		float *hA = (float *)malloc((size_t)N * N * sizeof(float));

		for (size_t i = 0; i < (size_t)N * N; i++)
			hA[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
		CK(cudaMalloc(&A, (size_t)N * N * sizeof(float)));
		CK(cudaMalloc(&B, (size_t)N * N * sizeof(float)));
		CK(cudaMalloc(&C, (size_t)N * N * sizeof(float)));
		CK(cudaMemcpy(A, hA, (size_t)N * N * sizeof(float),
			      cudaMemcpyHostToDevice));
		CK(cudaMemcpy(B, hA, (size_t)N * N * sizeof(float),
			      cudaMemcpyHostToDevice));
		if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
			fprintf(stderr, "cublasCreate failed\n");
			return 1;
		}
		for (int g = 0; g < gemms; g++)
			if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N,
					&one, A, N, B, N, &zero, C, N) !=
			    CUBLAS_STATUS_SUCCESS) {
				fprintf(stderr, "cublasSgemm failed\n");
				return 1;
			}
		CK(cudaDeviceSynchronize());
		printf("gemm %.9e\n", checksum(C, 64 * 1024));
		cublasDestroy(h);
		free(hA);
	}
	return 0;
}
