// nvcc: -arch=sm_90a
// sm_90a: an arch-specific instruction (setmaxnreg) forces the target.
__global__ void __launch_bounds__(128) producer(int *out, int n)
{
	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	if (threadIdx.x >= n)
		return;
	out[threadIdx.x] = n;
}
