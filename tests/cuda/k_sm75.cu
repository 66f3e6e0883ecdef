// nvcc: -arch=sm_75
// Turing target: warp shuffles, votes and atomics.
__global__ void warpsum(const int *in, int *out)
{
	int v = in[threadIdx.x];

	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffff, v, o);
	if ((threadIdx.x & 31) == 0)
		atomicAdd(out, v);
	if (__any_sync(0xffffffff, v < 0))
		out[1] = 1;
}
