// nvcc: -arch=sm_75
// Loops: a grid-stride loop, a nested loop with a data-dependent bound.
__global__ void saxpy(int n, float a, const float *x, float *y)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		y[i] = a * x[i] + y[i];
}

__global__ void tri(const int *len, long long *out)
{
	long long s = 0;

	for (int i = 0; i < len[threadIdx.x]; i++)
		for (int j = 0; j <= i; j++)
			s += (long long)i * j;
	out[threadIdx.x] = s;
}
