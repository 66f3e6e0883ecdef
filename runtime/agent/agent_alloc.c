// SPDX-License-Identifier: MIT
/*
 * Device allocations, for probes that read device memory (`*(float
 * *)(arg0 + 4 * threadIdx.x)` in a gpu: clause).  A load from an address
 * that is not mapped, or misaligned, would fault the program's context;
 * so the device runtime reads only inside allocations listed in a table
 * the agent keeps in each context's device state (devrt.h), and counts
 * the rest (read as 0).  The hooks below keep the list: cuMemAlloc,
 * cuMemAllocPitch, cuMemAllocManaged, cuMemAllocAsync and
 * cuMemAllocFromPoolAsync add, cuMemFree and cuMemFreeAsync remove
 * (before the real call: no probe launched afterwards reads it).  Only
 * when the configuration says probes read (cfg.reads); else they pass
 * straight through.  Allocations made on a stream being captured are
 * not listed (graph memory is mapped only while its graph runs), nor
 * those made before the agent came (-p).
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agent/agent_hostcall.h"
#include "runtime/agent/agent_priv.h"

#define EXPORT __attribute__((visibility("default")))

struct span {
	uint64_t base, end;
	int dev;		/* -1: managed, any device reads it */
};

static pthread_mutex_t alock = PTHREAD_MUTEX_INITIALIZER;
static struct span *spans;	/* sorted by base */
static size_t nspans, cap;
static bool full_told;

static bool tracking(void)
{
	return agent_tracing() && agent.cfg.reads;
}

static size_t find(uint64_t base)
{
	size_t lo = 0, hi = nspans;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (spans[mid].base < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void changed(void)
{
	CUstreamCaptureMode mode = agent_capture_relax();

	agent_in_hook++;
	agent_ctx_push_allocs();
	agent_in_hook--;
	agent_capture_restore(mode);
}

static void note(CUdeviceptr p, size_t n, bool managed)
{
	CUdevice dev = -1;
	size_t i;

	if (!p || !n)
		return;
	if (!managed && agent_drv.ctx_get_device(&dev) != CUDA_SUCCESS)
		return;
	pthread_mutex_lock(&alock);
	if (nspans == cap) {
		size_t nc = cap ? 2 * cap : 256;
		struct span *v = realloc(spans, nc * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&alock);
			return;
		}
		spans = v;
		cap = nc;
	}
	i = find((uint64_t)p);
	memmove(spans + i + 1, spans + i, (nspans - i) * sizeof(*spans));
	spans[i] = (struct span){ (uint64_t)p, (uint64_t)p + n,
				  managed ? -1 : (int)dev };
	nspans++;
	pthread_mutex_unlock(&alock);
	changed();
}

static void forget(CUdeviceptr p)
{
	size_t i;
	bool found;

	pthread_mutex_lock(&alock);
	i = find((uint64_t)p);
	found = i < nspans && spans[i].base == (uint64_t)p;
	if (found) {
		memmove(spans + i, spans + i + 1,
			(nspans - i - 1) * sizeof(*spans));
		nspans--;
	}
	pthread_mutex_unlock(&alock);
	if (found)
		changed();
}

size_t agent_alloc_table(int dev, uint64_t *tab)
{
	uint64_t n = 0;

	pthread_mutex_lock(&alock);
	for (size_t i = 0; i < nspans && n < DEVRT_ALLOC_CAP; i++)
		if (spans[i].dev == dev || spans[i].dev < 0) {
			tab[2 + 2 * n] = spans[i].base;
			tab[3 + 2 * n] = spans[i].end;
			n++;
		}
	if (n == DEVRT_ALLOC_CAP && nspans > n && !full_told) {
		full_told = true;
		agent_report("more than %u device allocations: probes read 0 "
			     "from the others", DEVRT_ALLOC_CAP);
	}
	pthread_mutex_unlock(&alock);
	tab[0] = n;
	tab[1] = 0;
	return 16 + 16 * (size_t)n;
}

/* Not capturing: an allocation made in a capture is graph memory. */
static bool plain_stream(CUstream s)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	return !agent_drv.stream_is_capturing ||
	       (agent_drv.stream_is_capturing(s, &st) == CUDA_SUCCESS &&
		st == CU_STREAM_CAPTURE_STATUS_NONE);
}

EXPORT CUresult gt_mem_alloc(CUdeviceptr *, size_t) __asm__("cuMemAlloc_v2");
CUresult gt_mem_alloc(CUdeviceptr *p, size_t n)
{
	CUresult r;

	REAL(mem_alloc);
	r = agent_drv.mem_alloc(p, n);
	if (r == CUDA_SUCCESS && p && tracking())
		note(*p, n, false);
	AGENT_HOST_RET(AGENT_HE_MALLOC, r, n, (uintptr_t)p, n);
	return r;
}

EXPORT CUresult gt_mem_alloc_pitch(CUdeviceptr *, size_t *, size_t, size_t,
				   unsigned) __asm__("cuMemAllocPitch_v2");
CUresult gt_mem_alloc_pitch(CUdeviceptr *p, size_t *pitch, size_t w, size_t h,
			    unsigned e)
{
	CUresult r;

	REAL(mem_alloc_pitch);
	r = agent_drv.mem_alloc_pitch(p, pitch, w, h, e);
	if (r == CUDA_SUCCESS && p && pitch && tracking())
		note(*p, *pitch * h, false);
	/* the requested bytes, as the kernel path saves them */
	AGENT_HOST_RET(AGENT_HE_MALLOC_PITCH, r, (uint64_t)w * h, (uintptr_t)p,
		       (uintptr_t)pitch, w, h, e);
	return r;
}

EXPORT CUresult gt_mem_alloc_managed(CUdeviceptr *, size_t, unsigned)
	__asm__("cuMemAllocManaged");
CUresult gt_mem_alloc_managed(CUdeviceptr *p, size_t n, unsigned fl)
{
	CUresult r;

	REAL(mem_alloc_managed);
	r = agent_drv.mem_alloc_managed(p, n, fl);
	if (r == CUDA_SUCCESS && p && tracking())
		note(*p, n, true);
	AGENT_HOST_RET(AGENT_HE_MALLOC_MANAGED, r, n, (uintptr_t)p, n, fl);
	return r;
}

EXPORT CUresult gt_mem_free(CUdeviceptr) __asm__("cuMemFree_v2");
CUresult gt_mem_free(CUdeviceptr p)
{
	REAL(mem_free);
	AGENT_HOST_ENTRY(AGENT_HE_FREE, p);
	if (tracking())
		forget(p);
	return agent_drv.mem_free(p);
}

/* the stream-ordered ones, legacy and per-thread default stream */
#define ASYNC_ALLOC(name, sym, f, he)					\
EXPORT CUresult name(CUdeviceptr *, size_t, CUstream) __asm__(sym);	\
CUresult name(CUdeviceptr *p, size_t n, CUstream s)			\
{									\
	CUresult r;							\
									\
	REAL(f);							\
	r = agent_drv.f(p, n, s);					\
	if (r == CUDA_SUCCESS && p && tracking() && plain_stream(s))	\
		note(*p, n, false);					\
	AGENT_HOST_RET(he, r, n, (uintptr_t)p, n, (uintptr_t)s);	\
	return r;							\
}
ASYNC_ALLOC(gt_mem_alloc_async, "cuMemAllocAsync", mem_alloc_async,
	    AGENT_HE_MALLOC_ASYNC)
ASYNC_ALLOC(gt_mem_alloc_async_ptsz, "cuMemAllocAsync_ptsz",
	    mem_alloc_async_ptsz, AGENT_HE_MALLOC_ASYNC_PTSZ)

#define POOL_ALLOC(name, sym, f, he)					\
EXPORT CUresult name(CUdeviceptr *, size_t, CUmemoryPool, CUstream)	\
	__asm__(sym);							\
CUresult name(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)	\
{									\
	CUresult r;							\
									\
	REAL(f);							\
	r = agent_drv.f(p, n, pool, s);					\
	if (r == CUDA_SUCCESS && p && tracking() && plain_stream(s))	\
		note(*p, n, false);					\
	AGENT_HOST_RET(he, r, n, (uintptr_t)p, n, (uintptr_t)pool,	\
		       (uintptr_t)s);					\
	return r;							\
}
POOL_ALLOC(gt_mem_alloc_pool, "cuMemAllocFromPoolAsync", mem_alloc_pool,
	   AGENT_HE_MALLOC_POOL)
POOL_ALLOC(gt_mem_alloc_pool_ptsz, "cuMemAllocFromPoolAsync_ptsz",
	   mem_alloc_pool_ptsz, AGENT_HE_MALLOC_POOL_PTSZ)

#define ASYNC_FREE(name, sym, f, he)					\
EXPORT CUresult name(CUdeviceptr, CUstream) __asm__(sym);		\
CUresult name(CUdeviceptr p, CUstream s)				\
{									\
	REAL(f);							\
	AGENT_HOST_ENTRY(he, p, (uintptr_t)s);				\
	if (tracking())							\
		forget(p);						\
	return agent_drv.f(p, s);					\
}
ASYNC_FREE(gt_mem_free_async, "cuMemFreeAsync", mem_free_async,
	   AGENT_HE_FREE_ASYNC)
ASYNC_FREE(gt_mem_free_async_ptsz, "cuMemFreeAsync_ptsz", mem_free_async_ptsz,
	   AGENT_HE_FREE_ASYNC_PTSZ)

/* fork(): the parent's device allocations are not ours. */
void agent_alloc_forked(void)
{
	pthread_mutex_init(&alock, NULL);
	nspans = 0;
	full_told = false;
}

#endif /* GT_AGENT_SO */
