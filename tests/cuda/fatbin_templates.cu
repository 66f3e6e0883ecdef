// Template and namespaced kernels for the fatbin reader's tests.
namespace ns {
template <typename T, int N>
__global__ void gemm(T *c, const T *a, const T *b)
{
	T acc = 0;

	for (int k = 0; k < N; k++)
		acc += a[threadIdx.y * N + k] * b[k * N + threadIdx.x];
	c[threadIdx.y * N + threadIdx.x] = acc;
}

template __global__ void gemm<float, 16>(float *, const float *, const float *);
template __global__ void gemm<double, 8>(double *, const double *,
					 const double *);
}

template <typename T>
__global__ void fill(T *p, T v, int n)
{
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		p[i] = v;
}

template __global__ void fill<int>(int *, int, int);
template __global__ void fill<char>(char *, char, int);
