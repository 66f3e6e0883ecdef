// SPDX-License-Identifier: MIT
// GPU: the --timeline test's program (tests/gpu/timeline.sh).  Two
// streams: k_one 10 times on the first, k_two 7 times on the second; a
// graph of k_one then k_two captured on the first and replayed 3 times;
// a copy each way and a memset.  Prints "ok" when the results are right.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void k_one(float *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += 1.0f;
}

__global__ void k_two(float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		b[i] *= 2.0f;
}

int main()
{
	const int n = 1 << 16;
	float *a, *b, h[n];
	cudaStream_t s1, s2;
	cudaGraph_t g;
	cudaGraphExec_t ge;

	for (int i = 0; i < n; i++)
		h[i] = 1.0f;
	cudaMalloc(&a, n * sizeof(float));
	cudaMalloc(&b, n * sizeof(float));
	cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
	cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
	cudaMemcpy(a, h, sizeof(h), cudaMemcpyHostToDevice);
	cudaMemset(b, 0, n * sizeof(float));
	for (int i = 0; i < 10; i++)
		k_one<<<n / 256, 256, 0, s1>>>(a, n);
	for (int i = 0; i < 7; i++)
		k_two<<<n / 128, 128, 0, s2>>>(b, n);
	cudaStreamSynchronize(s2);
	cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
	k_one<<<n / 256, 256, 0, s1>>>(a, n);
	k_two<<<n / 128, 128, 0, s1>>>(b, n);
	cudaStreamEndCapture(s1, &g);
	cudaGraphInstantiate(&ge, g, 0);
	for (int i = 0; i < 3; i++)
		cudaGraphLaunch(ge, s1);
	cudaStreamSynchronize(s1);
	cudaMemcpy(h, a, sizeof(h), cudaMemcpyDeviceToHost);
	bool ok = cudaGetLastError() == cudaSuccess;
	for (int i = 0; i < n; i++)
		ok = ok && h[i] == 14.0f;
	printf("%s\n", ok ? "ok" : "WRONG");
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	cudaFree(a);
	cudaFree(b);
	return ok ? 0 : 1;
}
