// SPDX-License-Identifier: MIT
/*
 * Every way a program gets a kernel onto the GPU, for
 * tests/gpu/real_forms.sh: NVRTC source compiled at run time and loaded
 * with cuModuleLoadDataEx; a cuLibraryLoadData library launched through
 * its CUkernel; cudaLaunchKernelEx with a cluster dimension; a
 * cooperative launch (grid sync); two host threads launching on four
 * streams; 64 KB of dynamic shared memory, past the default limit that
 * cudaFuncSetAttribute raised on the original kernel only; clusters of
 * 16 blocks, which sm_90 allows once cudaFuncSetAttribute has set
 * NonPortableClusterSizeAllowed (on the original only, again).  Each kernel has a name of its own; the program prints per
 * kernel its runs and warps ("expect NAME runs R warps W threads T"),
 * checks its results ("results ok") and prints a checksum.
 *
 * Usage: launch_forms [ROUNDS]     (default 20)
 */
#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace cg = cooperative_groups;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, \
		cudaGetErrorString(e_)); exit(2); } } while (0)
#define DK(x) do { CUresult e_ = (x); if (e_ != CUDA_SUCCESS) { \
	const char *s_ = ""; cuGetErrorName(e_, &s_); \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_); \
	exit(2); } } while (0)
#define NK(x) do { nvrtcResult e_ = (x); if (e_ != NVRTC_SUCCESS) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, \
		nvrtcGetErrorString(e_)); exit(2); } } while (0)

#define N	(1 << 15)
#define BLOCK	128
#define GRID	(N / BLOCK)

/* NVRTC and the library: the same source, two names */
static const char *src =
	"extern \"C\" __global__ void f_nvrtc(int *a, int n)\n"
	"{ int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"  if (i < n) a[i] += 3; }\n"
	"extern \"C\" __global__ void f_library(int *a, int n)\n"
	"{ int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"  if (i < n) a[i] += 5; }\n";

__global__ void __cluster_dims__(2, 1, 1) f_cluster(int *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += 7;
}

/* launched in clusters of 16: the non-portable size */
__global__ void f_cluster16(int *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += 13;
}

/* each block adds, then after a grid-wide sync reads its neighbour */
__global__ void f_coop(int *a, int *b, int n)
{
	cg::grid_group g = cg::this_grid();
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += 1;
	g.sync();
	if (i < n)
		b[i] = a[(i + BLOCK) % n];
}

#define BIGSMEM	(64 << 10)

/* needs cudaFuncSetAttribute(MaxDynamicSharedMemorySize) to launch */
__global__ void f_bigsmem(int *a, int n)
{
	extern __shared__ int sm[];
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	for (int j = threadIdx.x; j < BIGSMEM / 4; j += blockDim.x)
		sm[j] = 11;
	__syncthreads();
	if (i < n)
		a[i] += sm[BIGSMEM / 4 - 1 - threadIdx.x];
}

__global__ void f_stream(int *a, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += v;
}

static int rounds = 20;
static int *d_stream;

static void *stream_thread(void *arg)
{
	long t = (long)arg;
	cudaStream_t s[2];

	for (int j = 0; j < 2; j++)
		CK(cudaStreamCreateWithFlags(&s[j], cudaStreamNonBlocking));
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < 2; j++)	/* disjoint quarters */
			f_stream<<<GRID / 4, BLOCK, 0, s[j]>>>(
				d_stream + (t * 2 + j) * (N / 4), N / 4,
				(int)(t * 2 + j + 1));
	for (int j = 0; j < 2; j++) {
		CK(cudaStreamSynchronize(s[j]));
		CK(cudaStreamDestroy(s[j]));
	}
	return NULL;
}

/* ROUNDS launches of K on D through cudaLaunchKernelEx, in clusters of
 * CX blocks */
static void cluster_rounds(void (*k)(int *, int), int *d, unsigned cx)
{
	cudaLaunchConfig_t c = {};
	cudaLaunchAttribute at[1];
	int n = N;

	c.gridDim = dim3(GRID);
	c.blockDim = dim3(BLOCK);
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = cx;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	c.attrs = at;
	c.numAttrs = 1;
	for (int r = 0; r < rounds; r++)
		CK(cudaLaunchKernelEx(&c, k, d, n));
}

static void expect(const char *name, long long runs, long long grid)
{
	printf("expect %s runs %lld warps %lld threads %lld\n", name, runs,
	       runs * grid * (BLOCK / 32), runs * grid * BLOCK);
}

int main(int argc, char **argv)
{
	int *d_nvrtc, *d_lib, *d_cluster, *d_coop, *d_coop2, *d_big, *d_c16;
	int n = N;
	int *h = (int *)malloc(N * sizeof(int));
	unsigned long long sum = 0;
	bool ok = true;

	if (argc > 1)
		rounds = atoi(argv[1]);
	CK(cudaMalloc(&d_nvrtc, N * 4));
	CK(cudaMalloc(&d_lib, N * 4));
	CK(cudaMalloc(&d_cluster, N * 4));
	CK(cudaMalloc(&d_coop, N * 4));
	CK(cudaMalloc(&d_coop2, N * 4));
	CK(cudaMalloc(&d_stream, N * 4));
	CK(cudaMalloc(&d_big, N * 4));
	CK(cudaMalloc(&d_c16, N * 4));
	for (int *p : { d_nvrtc, d_lib, d_cluster, d_coop, d_coop2, d_stream,
			d_big, d_c16 })
		CK(cudaMemset(p, 0, N * 4));

	/* NVRTC -> PTX -> cuModuleLoadDataEx */
	{
		nvrtcProgram prog;
		const char *opts[] = { "--gpu-architecture=compute_90" };
		size_t len;
		char *ptx;
		CUmodule mod;
		CUfunction f;
		CUlibrary lib;
		CUkernel k;
		void *args_n[] = { &d_nvrtc, &n }, *args_l[] = { &d_lib, &n };

		NK(nvrtcCreateProgram(&prog, src, "forms.cu", 0, NULL, NULL));
		NK(nvrtcCompileProgram(prog, 1, opts));
		NK(nvrtcGetPTXSize(prog, &len));
		ptx = (char *)malloc(len);
		NK(nvrtcGetPTX(prog, ptx));
		NK(nvrtcDestroyProgram(&prog));
		DK(cuModuleLoadDataEx(&mod, ptx, 0, NULL, NULL));
		DK(cuModuleGetFunction(&f, mod, "f_nvrtc"));
		for (int r = 0; r < rounds; r++)
			DK(cuLaunchKernel(f, GRID, 1, 1, BLOCK, 1, 1, 0, NULL,
					  args_n, NULL));
		/* the library: a CUkernel launched as a CUfunction */
		DK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
		DK(cuLibraryGetKernel(&k, lib, "f_library"));
		for (int r = 0; r < rounds; r++)
			DK(cuLaunchKernel((CUfunction)k, GRID, 1, 1, BLOCK, 1, 1,
					  0, NULL, args_l, NULL));
		CK(cudaDeviceSynchronize());
		free(ptx);
	}
	expect("f_nvrtc", rounds, GRID);
	expect("f_library", rounds, GRID);

	/* cudaLaunchKernelEx with a cluster attribute */
	cluster_rounds(f_cluster, d_cluster, 2);
	expect("f_cluster", rounds, GRID);

	/* clusters of 16 blocks: more than 8 needs the attribute */
	CK(cudaFuncSetAttribute(f_cluster16,
				cudaFuncAttributeNonPortableClusterSizeAllowed,
				1));
	cluster_rounds(f_cluster16, d_c16, 16);
	expect("f_cluster16", rounds, GRID);

	/* a cooperative launch, every block resident */
	{
		void *args[] = { &d_coop, &d_coop2, &n };

		for (int r = 0; r < rounds; r++)
			CK(cudaLaunchCooperativeKernel((void *)f_coop,
						       dim3(GRID), dim3(BLOCK),
						       args, 0, 0));
	}
	expect("f_coop", rounds, GRID);

	/* 64 KB of dynamic shared memory: the limit raised first */
	CK(cudaFuncSetAttribute(f_bigsmem,
				cudaFuncAttributeMaxDynamicSharedMemorySize,
				BIGSMEM));
	for (int r = 0; r < rounds; r++) {
		f_bigsmem<<<GRID, BLOCK, BIGSMEM>>>(d_big, n);
		CK(cudaGetLastError());
	}
	expect("f_bigsmem", rounds, GRID);

	/* two threads, two streams each */
	{
		pthread_t t[2];

		for (long i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, stream_thread, (void *)i);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	}
	expect("f_stream", 4LL * rounds, GRID / 4);
	CK(cudaDeviceSynchronize());

	/* results */
	struct { int *d; int (*want)(int i); } chk[] = {
		{ d_nvrtc, [](int) { return 3 * rounds; } },
		{ d_lib, [](int) { return 5 * rounds; } },
		{ d_cluster, [](int) { return 7 * rounds; } },
		{ d_coop, [](int) { return rounds; } },
		{ d_coop2, [](int) { return rounds; } },
		{ d_stream, [](int i) { return (i / (N / 4) + 1) * rounds; } },
		{ d_big, [](int) { return 11 * rounds; } },
		{ d_c16, [](int) { return 13 * rounds; } },
	};
	for (auto &c : chk) {
		CK(cudaMemcpy(h, c.d, N * 4, cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++) {
			if (h[i] != c.want(i)) {
				printf("wrong [%d]: %d, want %d\n", i, h[i],
				       c.want(i));
				ok = false;
				break;
			}
			sum = sum * 31 + (unsigned)h[i];
		}
	}
	printf("checksum %llu\n", sum);
	printf(ok ? "results ok\n" : "results WRONG\n");
	free(h);
	return ok ? 0 : 1;
}
