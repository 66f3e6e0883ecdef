// Kernels for the fatbin reader's tests (tests/unit/test_fatbin.c).
__device__ __noinline__ int fb_helper(int x)
{
	return x * 3 + 1;
}

__global__ void vadd(float *a, const float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += b[i];
}

__global__ void apply_helper(int *a)
{
	a[threadIdx.x] = fb_helper(a[threadIdx.x]);
}

extern "C" __global__ void c_kernel(int *a)
{
	a[0] = 1;
}
