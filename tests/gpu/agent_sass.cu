// SPDX-License-Identifier: MIT
/*
 * Compiled SASS-only (-gencode arch=compute_90,code=sm_90) by
 * tests/gpu/agent_standalone.sh: no PTX, so the agent cannot instrument
 * sass_kernel and must run it unchanged and say so once.
 */
__global__ void sass_kernel(float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = c[i] * 2.0f + 1.0f;
}
