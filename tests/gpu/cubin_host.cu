// SPDX-License-Identifier: MIT
/*
 * Loads CUBIN (tests/gpu/cubin_kernels.cu, built by cubin_ptx.sh) the way
 * HOW says and launches its kernels; prints what a tracer should count
 * and a checksum of the results.
 *
 *	cubin_host CUBIN module|library|file|libfile LAUNCHES
 *
 * module: cuModuleLoadData; library: cuLibraryLoadData (kernels through
 * cuLibraryGetKernel/cuKernelGetFunction); file: cuModuleLoad; libfile:
 * cuLibraryLoadFromFile.  scale_add: LAUNCHES launches of 37 x 96
 * threads, then a graph of one such launch (stream capture) run twice;
 * smem_rev: LAUNCHES launches of (5, 3) x (32, 4) threads with 80 KB of
 * dynamic shared memory (its limit raised first).
 *
 *	cubin_host CUBIN triton LAUNCHES
 *
 * CUBIN is tests/cubin/triton_add.ptx assembled for sm_90a: LAUNCHES
 * launches (cuModuleLoadData, as Triton loads its kernels) of
 * triton_poi_fused_add_0 over N floats, 32 blocks of 128 threads
 * (its .reqntid), 512 bytes of dynamic shared memory (its extern array).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N	4096
#define SMEM	(80 * 1024)

#define CK(x)								\
	do {								\
		CUresult r_ = (x);					\
		if (r_ != CUDA_SUCCESS) {				\
			const char *s_ = NULL;				\
			cuGetErrorString(r_, &s_);			\
			fprintf(stderr, "%s: %s\n", #x, s_ ? s_ : "?");	\
			exit(1);					\
		}							\
	} while (0)

static void *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *p;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) || !(p = (char *)malloc(n + 1)) ||
	    fread(p, 1, n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	p[n] = 0;
	fclose(f);
	return p;
}

static CUfunction get(const char *how, CUmodule mod, CUlibrary lib,
		      const char *name)
{
	CUfunction f;
	CUkernel k;

	if (lib) {
		CK(cuLibraryGetKernel(&k, lib, name));
		CK(cuKernelGetFunction(&f, k));
	} else {
		CK(cuModuleGetFunction(&f, mod, name));
	}
	return f;
}

static int triton(const char *path, int launches)
{
	CUmodule mod;
	CUfunction f;
	CUdeviceptr a, b, c;
	static float ha[N], hb[N];
	unsigned long long sum = 0;
	int n = N;
	void *p[] = { &a, &b, &c, &n };

	CK(cuModuleLoadData(&mod, read_all(path)));
	CK(cuModuleGetFunction(&f, mod, "triton_poi_fused_add_0"));
	for (int i = 0; i < N; i++) {
		ha[i] = (float)(i % 7) * 0.5f;
		hb[i] = (float)(i % 11) * 0.125f;
	}
	CK(cuMemAlloc(&a, sizeof(ha)));
	CK(cuMemAlloc(&b, sizeof(hb)));
	CK(cuMemAlloc(&c, sizeof(ha)));
	CK(cuMemcpyHtoD(a, ha, sizeof(ha)));
	CK(cuMemcpyHtoD(b, hb, sizeof(hb)));
	for (int i = 0; i < launches; i++)
		CK(cuLaunchKernel(f, N / 128, 1, 1, 128, 1, 1, 512, NULL, p,
				  NULL));
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(ha, c, sizeof(ha)));
	for (int i = 0; i < N; i++) {
		unsigned v;

		memcpy(&v, &ha[i], 4);
		sum = sum * 1000003ull + v;
	}
	printf("expect triton_poi_fused_add_0 threads %d warps %d\n",
	       launches * N, launches * N / 32);
	printf("checksum %llx\n", sum);
	return 0;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod = NULL;
	CUlibrary lib = NULL;
	CUfunction sa, sr;
	CUdeviceptr out, in, out2;
	CUstream st;
	CUgraph g;
	CUgraphExec ge;
	static float h[N], h2[N];
	unsigned long long sum = 0;
	float k = 1.5f;
	int n = N, launches;
	const char *how;

	if (argc != 4) {
		fprintf(stderr, "usage: cubin_host CUBIN HOW LAUNCHES\n");
		return 2;
	}
	how = argv[2];
	launches = atoi(argv[3]);
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	if (!strcmp(how, "triton"))
		return triton(argv[1], launches);
	if (!strcmp(how, "module"))
		CK(cuModuleLoadData(&mod, read_all(argv[1])));
	else if (!strcmp(how, "file"))
		CK(cuModuleLoad(&mod, argv[1]));
	else if (!strcmp(how, "library"))
		CK(cuLibraryLoadData(&lib, read_all(argv[1]), NULL, NULL, 0,
				     NULL, NULL, 0));
	else if (!strcmp(how, "libfile"))
		CK(cuLibraryLoadFromFile(&lib, argv[1], NULL, NULL, 0, NULL,
					 NULL, 0));
	else
		return 2;
	sa = get(how, mod, lib, "scale_add");
	sr = get(how, mod, lib, "smem_rev");
	CK(cuFuncSetAttribute(sr, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
			      SMEM));
	for (int i = 0; i < N; i++)
		h[i] = (float)(i % 13) * 0.25f;
	CK(cuMemAlloc(&out, N * sizeof(float)));
	CK(cuMemAlloc(&out2, N * sizeof(float)));
	CK(cuMemAlloc(&in, N * sizeof(float)));
	CK(cuMemcpyHtoD(in, h, sizeof(h)));
	CK(cuMemcpyHtoD(out, h, sizeof(h)));
	CK(cuMemcpyHtoD(out2, h, sizeof(h)));
	CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	{
		void *pa[] = { &out, &in, &k, &n };
		void *pr[] = { &out2, &in, &n };

		for (int i = 0; i < launches; i++) {
			CK(cuLaunchKernel(sa, 37, 1, 1, 96, 1, 1, 0, st, pa,
					  NULL));
			CK(cuLaunchKernel(sr, 5, 3, 1, 32, 4, 1, SMEM, st, pr,
					  NULL));
		}
		CK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
		CK(cuLaunchKernel(sa, 37, 1, 1, 96, 1, 1, 0, st, pa, NULL));
		CK(cuStreamEndCapture(st, &g));
		CK(cuGraphInstantiate(&ge, g, 0));
		CK(cuGraphLaunch(ge, st));
		CK(cuGraphLaunch(ge, st));
	}
	CK(cuStreamSynchronize(st));
	CK(cuMemcpyDtoH(h, out, sizeof(h)));
	CK(cuMemcpyDtoH(h2, out2, sizeof(h2)));
	for (int i = 0; i < N; i++) {
		unsigned a, b;

		memcpy(&a, &h[i], 4);
		memcpy(&b, &h2[i], 4);
		sum = sum * 1000003ull + a;
		sum = sum * 1000003ull + b;
	}
	printf("expect scale_add threads %d warps %d\n",
	       (launches + 2) * 37 * 96, (launches + 2) * 37 * 3);
	printf("expect smem_rev threads %d warps %d\n",
	       launches * 15 * 128, launches * 15 * 4);
	printf("checksum %llx\n", sum);
	return 0;
}
