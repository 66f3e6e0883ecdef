// SPDX-License-Identifier: MIT
/*
 * A fake CUDA driver for the cuda: provider's tests (no GPU needed):
 * libcuda.so.1 with the entry points that tests/progs/cuda_stub.c calls.
 * Unlike the toolkit's stub, whose functions all fail, these succeed and
 * fill their out-parameters, so the handle -> kernel name path (which
 * records only successful calls) can be checked.  Built -O0 -fno-inline:
 * every function is a real one at its own address.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void *CUfunction, *CUkernel, *CUmodule, *CUlibrary, *CUstream;
typedef void *CUevent, *CUgraphExec, *CUcontext, *CUmemoryPool;
typedef unsigned long long CUdeviceptr;

/* A handle per name, stable for the process: the address of a slot. */
static char slots[64][16];
static char names[64][512];

static void *handle_of(const char *name)
{
	int i;

	for (i = 0; i < 64 && names[i][0]; i++)
		if (!strcmp(names[i], name))
			return slots[i];
	if (i == 64)
		return NULL;
	strncpy(names[i], name, sizeof(names[i]) - 1);
	return slots[i];
}

static void nap(void)
{
	struct timespec ts = { 0, 2000000 };	/* 2 ms */

	nanosleep(&ts, NULL);
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	*f = handle_of(name);
	return 0;
}

CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
	*k = handle_of(name);
	return 0;
}

/* The function of a kernel is another handle: the slot's second half. */
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
	*f = (char *)k + 8;
	return 0;
}

#define LAUNCH(name)							\
CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz,	\
	      unsigned bx, unsigned by, unsigned bz, unsigned shmem,	\
	      CUstream s, void **params, void **extra)			\
{									\
	return 0;							\
}
LAUNCH(cuLaunchKernel)
LAUNCH(cuLaunchKernel_ptsz)

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
				   unsigned gz, unsigned bx, unsigned by,
				   unsigned bz, unsigned shmem, CUstream s,
				   void **params)
{
	return 0;
}

CUresult cuLaunchKernelEx(const void *config, CUfunction f, void **params,
			  void **extra)
{
	return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	*p = 0x7000000000ull + size;
	return 0;
}

CUresult cuMemAllocManaged(CUdeviceptr *p, size_t size, unsigned flags)
{
	*p = 0x7100000000ull + size;
	return 0;
}

CUresult cuMemAllocHost_v2(void **p, size_t size)
{
	*p = (void *)(uintptr_t)(0x7200000000ull + size);
	return 0;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width,
			    size_t height, unsigned elt)
{
	*pitch = (width + 511) & ~(size_t)511;
	*p = 0x7300000000ull;
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	return 0;
}

CUresult cuMemFreeHost(void *p)
{
	return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n)
{
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n)
{
	return 0;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n)
{
	return 0;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n,
			      CUstream s)
{
	return 0;
}

CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n)
{
	return 0;
}

CUresult cuCtxSynchronize(void)
{
	nap();
	return 0;
}

CUresult cuStreamSynchronize(CUstream s)
{
	nap();
	return 0;
}

CUresult cuGraphLaunch(CUgraphExec g, CUstream s)
{
	return 0;
}

/*
 * The other copy, allocation and synchronization entry points, for
 * tests/progs/cuda_calls.c (tests/accept/cuda_hostcalls.sh).  An
 * allocation of 1 TiB or more fails with CUDA_ERROR_OUT_OF_MEMORY (2),
 * so that `retval` has more than one value.
 */
static CUresult fake_alloc(CUdeviceptr *p, size_t size)
{
	if (size >= 1ull << 40)
		return 2;
	*p = 0x7400000000ull + size;
	return 0;
}

#define FAKE_COPY3(name)						\
CUresult name(uint64_t d, uint64_t s, size_t n) { return 0; }
#define FAKE_COPY4(name)						\
CUresult name(uint64_t d, uint64_t s, size_t n, CUstream st) { return 0; }
FAKE_COPY3(cuMemcpyHtoD_v2_ptds)
FAKE_COPY4(cuMemcpyHtoDAsync_v2_ptsz)
FAKE_COPY3(cuMemcpyDtoH_v2_ptds)
FAKE_COPY4(cuMemcpyDtoHAsync_v2)
FAKE_COPY4(cuMemcpyDtoHAsync_v2_ptsz)
FAKE_COPY3(cuMemcpyDtoD_v2_ptds)
FAKE_COPY4(cuMemcpyDtoDAsync_v2)
FAKE_COPY4(cuMemcpyDtoDAsync_v2_ptsz)
FAKE_COPY3(cuMemcpy_ptds)
FAKE_COPY4(cuMemcpyAsync)
FAKE_COPY4(cuMemcpyAsync_ptsz)

CUresult cuMemAllocAsync(CUdeviceptr *p, size_t size, CUstream s)
{
	return fake_alloc(p, size);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t size, CUstream s)
{
	return fake_alloc(p, size);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t size,
				 CUmemoryPool pool, CUstream s)
{
	return fake_alloc(p, size);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t size,
				      CUmemoryPool pool, CUstream s)
{
	return fake_alloc(p, size);
}

CUresult cuMemHostAlloc(void **p, size_t size, unsigned flags)
{
	CUdeviceptr d = 0;
	CUresult r = fake_alloc(&d, size);

	*p = (void *)(uintptr_t)d;
	return r;
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	return 0;
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
	return 0;
}

CUresult cuCtxSynchronize_v2(CUcontext c)
{
	nap();
	return c ? 0 : 201;	/* CUDA_ERROR_INVALID_CONTEXT */
}

CUresult cuStreamSynchronize_ptsz(CUstream s)
{
	nap();
	return 0;
}

CUresult cuEventSynchronize(CUevent e)
{
	nap();
	return e ? 0 : 400;	/* CUDA_ERROR_INVALID_HANDLE */
}
