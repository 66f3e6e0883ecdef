// SPDX-License-Identifier: MIT
/*
 * A CUDA driver API workload without a GPU, for the cuda: provider's
 * tests.  It calls the driver's entry points directly with known
 * arguments; at run time LD_LIBRARY_PATH gives it a libcuda.so.1: the
 * toolkit's stub (every call fails with CUDA_ERROR_STUB_LIBRARY, 34) or
 * build/progs/fakecuda/libcuda.so.1 (calls succeed, handles are filled).
 *
 *   cuda_stub [-n ROUNDS] [-w SYM,...] [-k]
 *
 * Each round (the order is what the tests print):
 *   launches: cuLaunchKernel(vadd, grid 4, block 128)
 *             cuLaunchKernel(vadd) again, every 32-bit argument passed
 *               with garbage in its upper half (grid 4, block 128)
 *             cuLaunchKernel_ptsz(gt::scale, grid 8x2x1, block 64x2x3,
 *               shmem 256, stream 0x5) x3: the last three on the stack
 *             cuLaunchCooperativeKernel(reduce_sum, grid 16, block 32) x5
 *             cuLaunchKernelEx({grid 2x3x4, block 256, shmem 1024,
 *               stream 0x7}, CUkernel of gt::vadd<int>) x6
 *             cuLaunchKernel(CUfunction of that kernel, grid 1, block 32)
 *             cuLaunchKernel(a handle never looked up, grid 3, block 1) x9
 *             cuLaunchKernel(hz::detail::stencil_...<float, 3>, grid 6) x2
 *             cuLaunchKernel(hz::detail::stencil_...<double, 3>, grid 6)
 *               (mangled names of 77 bytes, equal in their first 65)
 *             cuLaunchKernel(__gputrace_clock, grid 5) x3: named like
 *               the agent's own kernels, which cuda:launch never shows
 * so that per round vadd runs 2 times, gt::scale 3, reduce_sum 5,
 * gt::vadd<int> 7, the unknown kernel 9, the stencils 2 and 1.
 *   memcpy:   HtoD 100, DtoH 200, DtoD 300, HtoDAsync 1000, any 4000
 *   malloc:   cuMemAlloc_v2 4096, cuMemAllocHost_v2 8192,
 *             cuMemAllocPitch_v2 100 x 10, cuMemAllocManaged 65536
 *   free:     cuMemFree_v2 x2, cuMemFreeHost x1
 *   sync:     cuCtxSynchronize, cuStreamSynchronize
 *   graph:    cuGraphLaunch x1
 * Handles are looked up once, before the first round; cuda_stub_done()
 * is called at the end.
 *
 * -w: first wait (up to 10 s) until a uprobe breakpoint (int3) sits at
 * each SYM (dlsym: the driver's functions), then 200 ms more.
 * -k: after the rounds, wait for a signal instead of exiting.
 *
 * It also carries a small fatbin (section .nv_fatbin, one PTX entry)
 * naming the four kernels, as nvcc would embed: cuda:launch:GLOB matches
 * kernel names against the target's fatbins.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe_wait.h"

typedef int CUresult;
typedef void *CUfunction, *CUkernel, *CUstream;
typedef unsigned long long CUdeviceptr;

/* cuda.h's CUlaunchConfig */
typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned numAttrs;
} CUlaunchConfig;

CUresult cuModuleGetFunction(CUfunction *f, void *m, const char *name);
CUresult cuLibraryGetKernel(CUkernel *k, void *lib, const char *name);
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			unsigned bx, unsigned by, unsigned bz, unsigned shmem,
			CUstream s, void **params, void **extra);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
			     unsigned gz, unsigned bx, unsigned by,
			     unsigned bz, unsigned shmem, CUstream s,
			     void **params, void **extra);
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
				   unsigned gz, unsigned bx, unsigned by,
				   unsigned bz, unsigned shmem, CUstream s,
				   void **params);
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f,
			  void **params, void **extra);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size);
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t size, unsigned flags);
CUresult cuMemAllocHost_v2(void **p, size_t size);
CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width,
			    size_t height, unsigned elt);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemFreeHost(void *p);
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n);
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n);
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n,
			      CUstream s);
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n);
CUresult cuCtxSynchronize(void);
CUresult cuStreamSynchronize(CUstream s);
CUresult cuGraphLaunch(void *g, CUstream s);

/* cuLaunchKernel as if every argument were 64 bits wide */
typedef CUresult (*launch_wide_fn)(CUfunction, uint64_t, uint64_t, uint64_t,
				   uint64_t, uint64_t, uint64_t, uint64_t,
				   CUstream, void **, void **);

/* hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<T, 3> */
#define STENCIL(t) \
	"_ZN2hz6detail49stencil_kernel_with_a_name_long_enough_to_pass_64I" \
	t "Li3EEEvPT_i"

#define PTX								\
	".version 8.0\n.target sm_90\n.address_size 64\n"		\
	".visible .entry _Z4vaddPfS_S_i()\n{\n\tret;\n}\n"		\
	".visible .entry _ZN2gt5scaleEPfi()\n{\n\tret;\n}\n"		\
	".visible .entry reduce_sum()\n{\n\tret;\n}\n"			\
	".visible .entry _ZN2gt4vaddIiEEvPKT_S3_PS1_i()\n{\n\tret;\n}\n"	\
	".visible .entry " STENCIL("f") "()\n{\n\tret;\n}\n"		\
	".visible .entry " STENCIL("d") "()\n{\n\tret;\n}\n"
#define PTX_LEN		((sizeof(PTX) + 7) & ~7ul)

/* docs/fatbin.md: a 16-byte header, a 64-byte entry header, the PTX */
struct fake_fatbin {
	uint32_t magic;
	uint16_t version, hsize;
	uint64_t size;
	uint16_t kind, one;
	uint32_t ehsize;
	uint64_t stored;
	uint32_t zsize, opts;
	uint16_t minor, major;
	uint32_t arch, name_off, name_len;
	uint64_t flags, key, plain;
	char ptx[PTX_LEN];
};

__attribute__((used, section(".nv_fatbin"), aligned(8)))
const struct fake_fatbin cuda_stub_fatbin = {
	.magic = 0xBA55ED50, .version = 1, .hsize = 16,
	.size = 64 + PTX_LEN,
	.kind = 1, .one = 0x0101, .ehsize = 64, .stored = PTX_LEN,
	.minor = 0, .major = 8, .arch = 90, .flags = 0x11,
	.ptx = PTX,
};

void cuda_stub_done(void)
{
}

int main(int argc, char **argv)
{
	/* the stub fills nothing: distinct handles to start with */
	CUfunction vadd = (CUfunction)0x100, scale = (CUfunction)0x200;
	CUfunction reduce = (CUfunction)0x300, vaddi_f = (CUfunction)0x400;
	CUfunction stray = (CUfunction)0xdead0;
	CUfunction sf = (CUfunction)0x600, sd = (CUfunction)0x700;
	CUfunction clk = (CUfunction)0x800;
	CUkernel vaddi = (CUkernel)0x500;
	CUlaunchConfig cfg = {
		2, 3, 4, 256, 1, 1, 1024, (CUstream)0x7, NULL, 0,
	};
	const uint64_t hi = 0xabcd000000000000ull;
	launch_wide_fn wide = (launch_wide_fn)(void (*)(void))cuLaunchKernel;
	CUstream s5 = (CUstream)0x5;
	char host[64];
	CUdeviceptr d = 0x1000;
	void *hp = NULL;
	size_t pitch;
	struct probe_opts o = { .rounds = 2 };
	int r, i;

	if (probe_opts(argc, argv, &o,
		       "usage: cuda_stub [-n ROUNDS] [-w SYM,...] [-k]"))
		return 2;
	if (o.wait && wait_probes("cuda_stub", o.wait))
		return 1;
	cuModuleGetFunction(&vadd, NULL, "_Z4vaddPfS_S_i");
	cuModuleGetFunction(&scale, NULL, "_ZN2gt5scaleEPfi");
	cuModuleGetFunction(&reduce, NULL, "reduce_sum");
	cuLibraryGetKernel(&vaddi, NULL, "_ZN2gt4vaddIiEEvPKT_S3_PS1_i");
	cuKernelGetFunction(&vaddi_f, vaddi);
	cuModuleGetFunction(&sf, NULL, STENCIL("f"));
	cuModuleGetFunction(&sd, NULL, STENCIL("d"));
	cuModuleGetFunction(&clk, NULL, "__gputrace_clock");
	for (r = 0; r < o.rounds; r++) {
		cuLaunchKernel(vadd, 4, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL);
		wide(vadd, hi | 4, hi | 1, hi | 1, hi | 128, hi | 1, hi | 1,
		     hi, NULL, NULL, NULL);
		for (i = 0; i < 3; i++)
			cuLaunchKernel_ptsz(scale, 8, 2, 1, 64, 2, 3, 256, s5,
					    NULL, NULL);
		for (i = 0; i < 5; i++)
			cuLaunchCooperativeKernel(reduce, 16, 1, 1, 32, 1, 1, 0,
						  NULL, NULL);
		for (i = 0; i < 6; i++)
			cuLaunchKernelEx(&cfg, vaddi, NULL, NULL);
		cuLaunchKernel(vaddi_f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
		for (i = 0; i < 9; i++)
			cuLaunchKernel(stray, 3, 1, 1, 1, 1, 1, 0, NULL, NULL,
				       NULL);
		for (i = 0; i < 2; i++)
			cuLaunchKernel(sf, 6, 1, 1, 1, 1, 1, 0, NULL, NULL,
				       NULL);
		cuLaunchKernel(sd, 6, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		for (i = 0; i < 3; i++)
			cuLaunchKernel(clk, 5, 1, 1, 1, 1, 1, 0, NULL, NULL,
				       NULL);

		cuMemcpyHtoD_v2(d, host, 100);
		cuMemcpyDtoH_v2(host, d, 200);
		cuMemcpyDtoD_v2(d, d, 300);
		cuMemcpyHtoDAsync_v2(d, host, 1000, s5);
		cuMemcpy(d, d, 4000);

		cuMemAlloc_v2(&d, 4096);
		cuMemAllocHost_v2(&hp, 8192);
		cuMemAllocPitch_v2(&d, &pitch, 100, 10, 4);
		cuMemAllocManaged(&d, 65536, 1);

		cuMemFree_v2(d);
		cuMemFree_v2(d);
		cuMemFreeHost(hp);

		cuCtxSynchronize();
		cuStreamSynchronize(s5);
		cuGraphLaunch(NULL, s5);
	}
	cuda_stub_done();
	if (o.keep)
		pause();
	return 0;
}
