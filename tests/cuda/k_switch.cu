// nvcc: -arch=sm_80
// A switch (jump table or branches), a kernel ending in a loop whose exit
// is the only return, and a recursive device function.
__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__global__ void sw(int *x)
{
	switch (x[threadIdx.x] & 7) {
	case 0: x[threadIdx.x] = 10; break;
	case 1: x[threadIdx.x] = fib(x[0]); break;
	case 2: return;
	case 3: x[threadIdx.x] *= 3; break;
	case 4: x[threadIdx.x] -= 4; return;
	case 5: x[threadIdx.x] ^= 5; break;
	default: x[threadIdx.x] = 0;
	}
	x[threadIdx.x + 32] = 1;
}

__global__ void spin(volatile int *flag)
{
	while (*flag == 0)
		;
}
