// SPDX-License-Identifier: MIT
// Kernels for the register budget of probes (tests/unit/test_lower.c):
// compiled with nvcc -ptx, spliced with a count and a hist probe, and
// assembled with ptxas -v before and after.
__global__ void saxpy(int n, float a, const float *x, float *y)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		y[i] = a * x[i] + y[i];
}

// A 4x4 register-blocked matrix product: many live registers.
__global__ void mm4(int n, const float *a, const float *b, float *c)
{
	int r = (blockIdx.y * blockDim.y + threadIdx.y) * 4;
	int col = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
	float acc[4][4] = {};

	if (r >= n || col >= n)
		return;
	for (int k = 0; k < n; k++) {
		float av[4], bv[4];

		for (int i = 0; i < 4; i++) {
			av[i] = a[(r + i) * n + k];
			bv[i] = b[k * n + col + i];
		}
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++)
				acc[i][j] += av[i] * bv[j];
	}
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			c[(r + i) * n + col + j] = acc[i][j];
}
