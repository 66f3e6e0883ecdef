// nvcc: -arch=sm_80
// Device functions that stay calls (.func with a return value), printf
// (an .extern .func), a __device__ global and a constant.
#include <cstdio>

__device__ int hits;
__constant__ float coef[4] = { 1, 2, 3, 4 };

__device__ __noinline__ float poly(float x)
{
	return ((coef[3] * x + coef[2]) * x + coef[1]) * x + coef[0];
}

__device__ __noinline__ void note(int v)
{
	if (v < 0)
		printf("negative %d\n", v);
}

__global__ void eval(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	y[i] = poly(x[i]);
	note((int)y[i]);
	atomicAdd(&hits, 1);
}
