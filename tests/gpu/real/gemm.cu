// SPDX-License-Identifier: MIT
/*
 * cuBLAS, whose kernels carry no PTX (SASS only), for
 * tests/gpu/real_libs.sh: ROUNDS single-precision GEMMs of 2048 x 2048
 * with known inputs (small integers: exact), every 37th column of the
 * output checked against the host, the timed GEMMs' GPU time measured
 * with CUDA events ("events_ns N"), after one untimed GEMM.  Large
 * enough (about 0.3 ms each) that the gaps between launches are a small
 * part of the events' time.
 *
 * Usage: gemm [ROUNDS]     (default 10)
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 2048

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	float *a = (float *)malloc(N * N * 4), *b = (float *)malloc(N * N * 4);
	float *c = (float *)malloc(N * N * 4), *da, *db, *dc;
	float one = 1.0f, zero = 0.0f;
	double sum = 0;
	cublasHandle_t h;
	bool ok = true;

	for (int i = 0; i < N * N; i++) {
		a[i] = (float)(i % 7) - 3.0f;
		b[i] = (float)(i % 5) - 2.0f;
	}
	cudaMalloc(&da, N * N * 4);
	cudaMalloc(&db, N * N * 4);
	cudaMalloc(&dc, N * N * 4);
	cudaMemcpy(da, a, N * N * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(db, b, N * N * 4, cudaMemcpyHostToDevice);
	if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
		printf("no cublas\n");
		return 2;
	}
	cudaEvent_t e0, e1;
	float ms = 0;

	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	/* a first GEMM loads cuBLAS's kernels: outside the timed loop */
	cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, da, N, db, N,
		    &zero, dc, N);
	cudaDeviceSynchronize();
	cudaEventRecord(e0, 0);
	for (int r = 0; r < rounds; r++)
		if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, da,
				N, db, N, &zero, dc, N) !=
		    CUBLAS_STATUS_SUCCESS)
			ok = false;
	cudaEventRecord(e1, 0);
	cudaEventSynchronize(e1);
	cudaEventElapsedTime(&ms, e0, e1);
	cudaMemcpy(c, dc, N * N * 4, cudaMemcpyDeviceToHost);
	/* column-major: C(i,j) = sum_k A(i,k) B(k,j); small integers, exact
	 * (|C| <= 6 N, far below 2^24) */
	for (int j = 0; j < N && ok; j += 37)
		for (int i = 0; i < N; i++) {
			float w = 0;

			for (int k = 0; k < N; k++)
				w += a[k * N + i] * b[j * N + k];
			if (c[j * N + i] != w) {
				printf("wrong C(%d,%d): %f, want %f\n", i, j,
				       c[j * N + i], w);
				ok = false;
				break;
			}
			sum += w;
		}
	cublasDestroy(h);
	printf("gemms %d\n", rounds);
	printf("events_ns %.0f\n", ms * 1e6);
	printf("checksum %.0f\n", sum);
	printf(ok ? "results ok\n" : "results WRONG\n");
	return ok ? 0 : 1;
}
