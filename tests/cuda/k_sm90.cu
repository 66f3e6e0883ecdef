// nvcc: -arch=sm_90
// Hopper target: launch bounds and cluster dimensions (directives between
// the parameter list and the body), distributed shared memory.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void __launch_bounds__(256, 2) bounded(float *x)
{
	x[blockIdx.x * 256 + threadIdx.x] *= 2.0f;
}

__global__ void __cluster_dims__(2, 1, 1) clustered(int *out)
{
	__shared__ int s;
	cg::cluster_group cl = cg::this_cluster();

	if (threadIdx.x == 0)
		s = cl.block_rank();
	cl.sync();
	int *peer = cl.map_shared_rank(&s, (cl.block_rank() + 1) % 2);
	out[blockIdx.x] = *peer;
	cl.sync();
}
