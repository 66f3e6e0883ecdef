// SPDX-License-Identifier: MIT
/*
 * Hooks on the driver's copies, synchronizations, host allocations and
 * graph launches, only so that cuda:memcpy, cuda:sync, cuda:malloc,
 * cuda:free and cuda:graph clauses run here rather than as kernel
 * uprobes (docs/hostpath.md).  Each
 * wrapper is one check (agent_host_on) and a call of the real entry
 * point when no clause runs at it.  Arguments are passed as the
 * integers they are in registers (pointers, CUdeviceptr, size_t,
 * handles): every one of these calls takes at most four, none a float.
 *
 * cuda:memcpy and cuda:free run at the entry, as their uprobes do;
 * cuda:malloc and cuda:sync at the return, with the entry's value the
 * kernel path keeps in .cuda_calls (the requested size; the time the
 * call began, for `duration`).
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#define AGENT_HOSTCALL_IMPL
#include "runtime/agent/agent_hostcall.h"
#include "runtime/agent/agent_priv.h"

#define EXPORT __attribute__((visibility("default")))

void *agent_hc_real[AGENT_HE_END_];

typedef CUresult (*hc1_fn)(uint64_t);
typedef CUresult (*hc2_fn)(uint64_t, uint64_t);
typedef CUresult (*hc3_fn)(uint64_t, uint64_t, uint64_t);
typedef CUresult (*hc4_fn)(uint64_t, uint64_t, uint64_t, uint64_t);

#define HC_REAL(E)							\
	do {								\
		if (agent_drv_ready())					\
			return CUDA_ERROR_NOT_INITIALIZED;		\
		if (!agent_hc_real[E])					\
			return CUDA_ERROR_NOT_SUPPORTED;		\
	} while (0)

/* cuda:memcpy: (dst, src, size[, stream]), at the entry */
#define COPY3(name, sym)						\
EXPORT CUresult gt_hc_##name(uint64_t, uint64_t, uint64_t) __asm__(sym); \
CUresult gt_hc_##name(uint64_t a, uint64_t b, uint64_t c)		\
{									\
	HC_REAL(AGENT_HE_##name);					\
	AGENT_HOST_ENTRY(AGENT_HE_##name, a, b, c);			\
	return ((hc3_fn)agent_hc_real[AGENT_HE_##name])(a, b, c);	\
}
#define COPY4(name, sym)						\
EXPORT CUresult gt_hc_##name(uint64_t, uint64_t, uint64_t, uint64_t)	\
	__asm__(sym);							\
CUresult gt_hc_##name(uint64_t a, uint64_t b, uint64_t c, uint64_t d)	\
{									\
	HC_REAL(AGENT_HE_##name);					\
	AGENT_HOST_ENTRY(AGENT_HE_##name, a, b, c, d);			\
	return ((hc4_fn)agent_hc_real[AGENT_HE_##name])(a, b, c, d);	\
}

COPY3(HTOD, "cuMemcpyHtoD_v2")
COPY3(HTOD_PTDS, "cuMemcpyHtoD_v2_ptds")
COPY4(HTOD_ASYNC, "cuMemcpyHtoDAsync_v2")
COPY4(HTOD_ASYNC_PTSZ, "cuMemcpyHtoDAsync_v2_ptsz")
COPY3(DTOH, "cuMemcpyDtoH_v2")
COPY3(DTOH_PTDS, "cuMemcpyDtoH_v2_ptds")
COPY4(DTOH_ASYNC, "cuMemcpyDtoHAsync_v2")
COPY4(DTOH_ASYNC_PTSZ, "cuMemcpyDtoHAsync_v2_ptsz")
COPY3(DTOD, "cuMemcpyDtoD_v2")
COPY3(DTOD_PTDS, "cuMemcpyDtoD_v2_ptds")
COPY4(DTOD_ASYNC, "cuMemcpyDtoDAsync_v2")
COPY4(DTOD_ASYNC_PTSZ, "cuMemcpyDtoDAsync_v2_ptsz")
COPY3(MEMCPY, "cuMemcpy")
COPY3(MEMCPY_PTDS, "cuMemcpy_ptds")
COPY4(MEMCPY_ASYNC, "cuMemcpyAsync")
COPY4(MEMCPY_ASYNC_PTSZ, "cuMemcpyAsync_ptsz")

/* cuda:sync: (nothing, or one handle), at the return with its start */
EXPORT CUresult gt_hc_CTX_SYNC(void) __asm__("cuCtxSynchronize");
CUresult gt_hc_CTX_SYNC(void)
{
	uint64_t t = 0;
	CUresult r;

	HC_REAL(AGENT_HE_CTX_SYNC);
	if (agent_host_on(AGENT_HE_CTX_SYNC))
		t = agent_host_now();
	r = ((CUresult (*)(void))agent_hc_real[AGENT_HE_CTX_SYNC])();
	AGENT_HOST_RET(AGENT_HE_CTX_SYNC, r, t, 0);
	return r;
}

#define SYNC1(name, sym)						\
EXPORT CUresult gt_hc_##name(uint64_t) __asm__(sym);			\
CUresult gt_hc_##name(uint64_t a)					\
{									\
	uint64_t t = 0;							\
	CUresult r;							\
									\
	HC_REAL(AGENT_HE_##name);					\
	if (agent_host_on(AGENT_HE_##name))				\
		t = agent_host_now();					\
	r = ((hc1_fn)agent_hc_real[AGENT_HE_##name])(a);		\
	AGENT_HOST_RET(AGENT_HE_##name, r, t, a);			\
	return r;							\
}
SYNC1(CTX_SYNC_V2, "cuCtxSynchronize_v2")
SYNC1(STREAM_SYNC, "cuStreamSynchronize")
SYNC1(STREAM_SYNC_PTSZ, "cuStreamSynchronize_ptsz")
SYNC1(EVENT_SYNC, "cuEventSynchronize")

/* cuda:malloc of host memory: (out, size[, flags]), at the return */
EXPORT CUresult gt_hc_MALLOC_HOST(uint64_t, uint64_t)
	__asm__("cuMemAllocHost_v2");
CUresult gt_hc_MALLOC_HOST(uint64_t p, uint64_t n)
{
	CUresult r;

	HC_REAL(AGENT_HE_MALLOC_HOST);
	r = ((hc2_fn)agent_hc_real[AGENT_HE_MALLOC_HOST])(p, n);
	AGENT_HOST_RET(AGENT_HE_MALLOC_HOST, r, n, p, n);
	return r;
}

EXPORT CUresult gt_hc_HOST_ALLOC(uint64_t, uint64_t, uint64_t)
	__asm__("cuMemHostAlloc");
CUresult gt_hc_HOST_ALLOC(uint64_t p, uint64_t n, uint64_t fl)
{
	CUresult r;

	HC_REAL(AGENT_HE_HOST_ALLOC);
	r = ((hc3_fn)agent_hc_real[AGENT_HE_HOST_ALLOC])(p, n, fl);
	AGENT_HOST_RET(AGENT_HE_HOST_ALLOC, r, n, p, n, fl);
	return r;
}

/* cuda:free of host memory: (pointer), at the entry */
EXPORT CUresult gt_hc_FREE_HOST(uint64_t) __asm__("cuMemFreeHost");
CUresult gt_hc_FREE_HOST(uint64_t p)
{
	HC_REAL(AGENT_HE_FREE_HOST);
	AGENT_HOST_ENTRY(AGENT_HE_FREE_HOST, p);
	return ((hc1_fn)agent_hc_real[AGENT_HE_FREE_HOST])(p);
}

/* cuda:graph: (graph exec, stream), at the entry */
#define GRAPH2(name, sym)						\
EXPORT CUresult gt_hc_##name(uint64_t, uint64_t) __asm__(sym);		\
CUresult gt_hc_##name(uint64_t g, uint64_t st)				\
{									\
	HC_REAL(AGENT_HE_##name);					\
	AGENT_HOST_ENTRY(AGENT_HE_##name, g, st);			\
	return ((hc2_fn)agent_hc_real[AGENT_HE_##name])(g, st);		\
}

GRAPH2(GRAPH, "cuGraphLaunch")
GRAPH2(GRAPH_PTSZ, "cuGraphLaunch_ptsz")

#endif /* GT_AGENT_SO */
