// SPDX-License-Identifier: MIT
/*
 * The kernels of tests/gpu/cubin_ptx.sh, built into a cubin with and
 * without -lineinfo and loaded by tests/gpu/cubin_host.cu through the
 * driver API.  smem_rev uses more dynamic shared memory than the default
 * 48 KB: its limit is raised with cuFuncSetAttribute, as Triton does.
 */
extern "C" __global__ void scale_add(float *out, const float *in, float k,
				     int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = out[i] * k + in[i];
}

extern "C" __global__ void smem_rev(float *out, const float *in, int n)
{
	extern __shared__ float buf[];
	int t = threadIdx.y * blockDim.x + threadIdx.x;
	int nt = blockDim.x * blockDim.y;
	int b = blockIdx.y * gridDim.x + blockIdx.x;
	int i = b * nt + t;

	/* 20480 floats (80 KB): each thread fills its share */
	for (int j = t; j < 20480; j += nt)
		buf[j] = (float)(j % 97);
	__syncthreads();
	if (i < n)
		out[i] = in[i] + buf[(nt - 1 - t) * 160 % 20480];
}
