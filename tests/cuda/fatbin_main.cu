// The main program of the fatbin reader's linked test executable.
#include <cstdio>

__global__ void main_kernel(int *a)
{
	a[threadIdx.x] = threadIdx.x;
}

int main()
{
	printf("%p\n", (void *)main_kernel);
	return 0;
}
