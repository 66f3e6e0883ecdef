/* SPDX-License-Identifier: MIT */
/*
 * The driver entry points at which the agent runs host programs
 * (docs/hostpath.md): X(NAME, symbol, kind).  Kind: the cuda: event,
 * whose form tells when the program runs (launch, free, memcpy, graph:
 * at the entry; malloc, sync: at the return, with the entry's value, as the
 * kernel path's .cuda_calls holds it).  Append only within a kind's
 * group: the tracer and the agent are built together.
 */
#ifndef GT_AGENT_HENTRY_H
#define GT_AGENT_HENTRY_H

#define AGENT_HENTRIES(X)						\
	X(LAUNCH, "cuLaunchKernel", LAUNCH)				\
	X(LAUNCH_PTSZ, "cuLaunchKernel_ptsz", LAUNCH)			\
	X(COOP, "cuLaunchCooperativeKernel", LAUNCH)			\
	X(COOP_PTSZ, "cuLaunchCooperativeKernel_ptsz", LAUNCH)		\
	X(EX, "cuLaunchKernelEx", LAUNCH)				\
	X(EX_PTSZ, "cuLaunchKernelEx_ptsz", LAUNCH)			\
	X(MALLOC, "cuMemAlloc_v2", MALLOC)				\
	X(MALLOC_ASYNC, "cuMemAllocAsync", MALLOC)			\
	X(MALLOC_ASYNC_PTSZ, "cuMemAllocAsync_ptsz", MALLOC)		\
	X(MALLOC_POOL, "cuMemAllocFromPoolAsync", MALLOC)		\
	X(MALLOC_POOL_PTSZ, "cuMemAllocFromPoolAsync_ptsz", MALLOC)	\
	X(MALLOC_MANAGED, "cuMemAllocManaged", MALLOC)			\
	X(MALLOC_HOST, "cuMemAllocHost_v2", MALLOC)			\
	X(HOST_ALLOC, "cuMemHostAlloc", MALLOC)				\
	X(MALLOC_PITCH, "cuMemAllocPitch_v2", MALLOC)			\
	X(FREE, "cuMemFree_v2", FREE)					\
	X(FREE_ASYNC, "cuMemFreeAsync", FREE)				\
	X(FREE_ASYNC_PTSZ, "cuMemFreeAsync_ptsz", FREE)			\
	X(FREE_HOST, "cuMemFreeHost", FREE)				\
	X(HTOD, "cuMemcpyHtoD_v2", MEMCPY)				\
	X(HTOD_PTDS, "cuMemcpyHtoD_v2_ptds", MEMCPY)			\
	X(HTOD_ASYNC, "cuMemcpyHtoDAsync_v2", MEMCPY)			\
	X(HTOD_ASYNC_PTSZ, "cuMemcpyHtoDAsync_v2_ptsz", MEMCPY)		\
	X(DTOH, "cuMemcpyDtoH_v2", MEMCPY)				\
	X(DTOH_PTDS, "cuMemcpyDtoH_v2_ptds", MEMCPY)			\
	X(DTOH_ASYNC, "cuMemcpyDtoHAsync_v2", MEMCPY)			\
	X(DTOH_ASYNC_PTSZ, "cuMemcpyDtoHAsync_v2_ptsz", MEMCPY)		\
	X(DTOD, "cuMemcpyDtoD_v2", MEMCPY)				\
	X(DTOD_PTDS, "cuMemcpyDtoD_v2_ptds", MEMCPY)			\
	X(DTOD_ASYNC, "cuMemcpyDtoDAsync_v2", MEMCPY)			\
	X(DTOD_ASYNC_PTSZ, "cuMemcpyDtoDAsync_v2_ptsz", MEMCPY)		\
	X(MEMCPY, "cuMemcpy", MEMCPY)					\
	X(MEMCPY_PTDS, "cuMemcpy_ptds", MEMCPY)				\
	X(MEMCPY_ASYNC, "cuMemcpyAsync", MEMCPY)			\
	X(MEMCPY_ASYNC_PTSZ, "cuMemcpyAsync_ptsz", MEMCPY)		\
	X(CTX_SYNC, "cuCtxSynchronize", SYNC)				\
	X(CTX_SYNC_V2, "cuCtxSynchronize_v2", SYNC)			\
	X(STREAM_SYNC, "cuStreamSynchronize", SYNC)			\
	X(STREAM_SYNC_PTSZ, "cuStreamSynchronize_ptsz", SYNC)		\
	X(EVENT_SYNC, "cuEventSynchronize", SYNC)			\
	X(GRAPH, "cuGraphLaunch", GRAPH)				\
	X(GRAPH_PTSZ, "cuGraphLaunch_ptsz", GRAPH)

/* The kinds (the cuda: event of an entry point). */
enum agent_hkind {
	AGENT_HK_LAUNCH,
	AGENT_HK_MALLOC,
	AGENT_HK_FREE,
	AGENT_HK_MEMCPY,
	AGENT_HK_SYNC,
	AGENT_HK_GRAPH,
};

#endif
