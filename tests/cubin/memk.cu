// SPDX-License-Identifier: MIT
// tests/accept/agent_memscan.sh: one kernel name, several codes (as
// Triton's autotuning variants are): VARIANT 1 adds 1, VARIANT 2 keeps 24
// values live (more registers) and scales by 3; VARIANTs 3 and 4 are 1
// with at most 128 and 256 threads a block (.maxntid: num_warps 4, 8).
#if VARIANT >= 3
#define BOUNDS __launch_bounds__(VARIANT == 3 ? 128 : 256)
#else
#define BOUNDS
#endif

extern "C" __global__ void BOUNDS memk(const float *a, const float *b, float *c,
				int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
#if VARIANT == 2
	float v[24], s = 0.0f;

#pragma unroll
	for (int k = 0; k < 24; k++)
		v[k] = a[i + k * n] * b[i + k];
#pragma unroll
	for (int k = 0; k < 24; k++)
		s += v[k] * v[(k * 7) % 24];
	c[i] = s * 3.0f;
#else
	c[i] = a[i] + 1.0f;
#endif
}
