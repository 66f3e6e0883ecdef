// nvcc: -arch=sm_86
// Templates: several instantiations, a non-type parameter, a functor.
template <typename T, int N>
__global__ void scale(T *x, T k)
{
	#pragma unroll
	for (int i = 0; i < N; i++)
		x[threadIdx.x * N + i] *= k;
}

struct add_one {
	__device__ int operator()(int v) const { return v + 1; }
};

template <typename F>
__global__ void apply(int *x, F f)
{
	x[threadIdx.x] = f(x[threadIdx.x]);
}

template __global__ void scale<float, 4>(float *, float);
template __global__ void scale<double, 2>(double *, double);
template __global__ void scale<short, 8>(short *, short);
template __global__ void apply<add_one>(int *, add_one);
