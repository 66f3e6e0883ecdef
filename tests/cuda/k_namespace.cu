// nvcc: -arch=sm_80
// Namespaces (nested, anonymous), extern "C" and a kernel with no params.
namespace outer {
namespace inner {
__global__ void fill(int *p, int v) { p[threadIdx.x] = v; }
}
}

namespace {
__global__ void hidden(int *p) { p[threadIdx.x] += 1; }
}

extern "C" __global__ void plain_c(unsigned long long *p)
{
	p[blockIdx.x] = clock64();
}

__global__ void noargs(void) { __threadfence(); }

void *keep_hidden = (void *)hidden;
