// nvcc: -arch=sm_80
// Static and dynamic shared memory, barriers, a block reduction.
__global__ void reduce(const float *in, float *out)
{
	__shared__ float buf[256];
	unsigned t = threadIdx.x;

	buf[t] = in[blockIdx.x * blockDim.x + t];
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (t < s)
			buf[t] += buf[t + s];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = buf[0];
}

__global__ void dyn(int *out, int n)
{
	extern __shared__ int d[];

	d[threadIdx.x] = threadIdx.x * n;
	__syncthreads();
	out[threadIdx.x] = d[(threadIdx.x + 1) % blockDim.x];
}
