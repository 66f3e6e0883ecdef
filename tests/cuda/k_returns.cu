// nvcc: -arch=sm_80
// Several early returns at different depths.
__global__ void classify(const int *in, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	if (in[i] < 0) {
		out[i] = -1;
		return;
	}
	if (in[i] == 0)
		return;
	for (int k = 0; k < in[i]; k++) {
		if (k * k > in[i]) {
			out[i] = k;
			return;
		}
	}
	out[i] = 0;
}
