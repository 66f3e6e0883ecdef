/* SPDX-License-Identifier: MIT */
/*
 * Host clauses at the agent's hooks other than launches (docs/hostpath.md):
 * cuda:malloc, cuda:free, cuda:memcpy, cuda:sync, cuda:graph.  The allocation hooks
 * are agent_alloc.c's; the copies, synchronizations and host allocations
 * are hooked in agent_hostcall.c only for this (AGENT_HOSTCALL_HOOKS
 * goes at the end of agent_hooks.c's table).
 */
#ifndef GT_AGENT_HOSTCALL_H
#define GT_AGENT_HOSTCALL_H

#include <stdbool.h>
#include <stdint.h>

#include "gpucode/agent_proto.h"

/* Whether a host program runs at entry point E (one load, no lock). */
bool agent_host_on(uint32_t e);
/* CLOCK_MONOTONIC in ns, the programs' ktime (cuda:sync's start). */
uint64_t agent_host_now(void);
/*
 * Run E's programs: ARGS the first six arguments; at the return, RET
 * the result and SAVED the entry value (malloc: the size, sync: the
 * start); at the entry, RET NULL.
 */
void agent_host_call(uint32_t e, const uint64_t *args, const uint64_t *ret,
		     uint64_t saved);

/* At the entry of E, with its arguments (up to six, as integers). */
#define AGENT_HOST_ENTRY(e, ...)					\
	do {								\
		if (agent_host_on(e)) {					\
			uint64_t a_[6] = { __VA_ARGS__ };		\
									\
			agent_host_call(e, a_, NULL, 0);		\
		}							\
	} while (0)

/* At the return of E (result R, entry value SAVED), with its arguments. */
#define AGENT_HOST_RET(e, r, saved, ...)				\
	do {								\
		if (agent_host_on(e)) {					\
			uint64_t a_[6] = { __VA_ARGS__ };		\
			uint64_t r_ = (uint32_t)(r);			\
									\
			agent_host_call(e, a_, &r_, (saved));		\
		}							\
	} while (0)

/* The real entry points of the hooks below, by enum agent_hentry. */
extern void *agent_hc_real[AGENT_HE_END_];

/*
 * The hooked entry points: X(NAME, symbol, the name cuGetProcAddress is
 * asked for, its per-thread variant (1, 0; -1: none), its ABI's version
 * range).  The wrappers are agent_hostcall.c's gt_hc_NAME.
 */
#define AGENT_HOSTCALLS(X)						\
	X(MALLOC_HOST, "cuMemAllocHost_v2", "cuMemAllocHost", -1, 3020, 1 << 30) \
	X(HOST_ALLOC, "cuMemHostAlloc", "cuMemHostAlloc", -1, 0, 1 << 30) \
	X(FREE_HOST, "cuMemFreeHost", "cuMemFreeHost", -1, 0, 1 << 30)	\
	X(HTOD, "cuMemcpyHtoD_v2", "cuMemcpyHtoD", 0, 3020, 1 << 30)	\
	X(HTOD_PTDS, "cuMemcpyHtoD_v2_ptds", "cuMemcpyHtoD", 1, 3020, 1 << 30) \
	X(HTOD_ASYNC, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", 0, 3020, 1 << 30) \
	X(HTOD_ASYNC_PTSZ, "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync", 1, 3020, 1 << 30) \
	X(DTOH, "cuMemcpyDtoH_v2", "cuMemcpyDtoH", 0, 3020, 1 << 30)	\
	X(DTOH_PTDS, "cuMemcpyDtoH_v2_ptds", "cuMemcpyDtoH", 1, 3020, 1 << 30) \
	X(DTOH_ASYNC, "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync", 0, 3020, 1 << 30) \
	X(DTOH_ASYNC_PTSZ, "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoHAsync", 1, 3020, 1 << 30) \
	X(DTOD, "cuMemcpyDtoD_v2", "cuMemcpyDtoD", 0, 3020, 1 << 30)	\
	X(DTOD_PTDS, "cuMemcpyDtoD_v2_ptds", "cuMemcpyDtoD", 1, 3020, 1 << 30) \
	X(DTOD_ASYNC, "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync", 0, 3020, 1 << 30) \
	X(DTOD_ASYNC_PTSZ, "cuMemcpyDtoDAsync_v2_ptsz", "cuMemcpyDtoDAsync", 1, 3020, 1 << 30) \
	X(MEMCPY, "cuMemcpy", "cuMemcpy", 0, 4000, 1 << 30)		\
	X(MEMCPY_PTDS, "cuMemcpy_ptds", "cuMemcpy", 1, 4000, 1 << 30)	\
	X(MEMCPY_ASYNC, "cuMemcpyAsync", "cuMemcpyAsync", 0, 4000, 1 << 30) \
	X(MEMCPY_ASYNC_PTSZ, "cuMemcpyAsync_ptsz", "cuMemcpyAsync", 1, 4000, 1 << 30) \
	/* 13.0 gave cuCtxSynchronize a context argument */		\
	X(CTX_SYNC, "cuCtxSynchronize", "cuCtxSynchronize", -1, 0, 13000) \
	X(CTX_SYNC_V2, "cuCtxSynchronize_v2", "cuCtxSynchronize", -1, 13000, 1 << 30) \
	X(STREAM_SYNC, "cuStreamSynchronize", "cuStreamSynchronize", 0, 0, 1 << 30) \
	X(STREAM_SYNC_PTSZ, "cuStreamSynchronize_ptsz", "cuStreamSynchronize", 1, 0, 1 << 30) \
	X(EVENT_SYNC, "cuEventSynchronize", "cuEventSynchronize", -1, 0, 1 << 30) \
	X(GRAPH, "cuGraphLaunch", "cuGraphLaunch", 0, 10000, 1 << 30)	\
	X(GRAPH_PTSZ, "cuGraphLaunch_ptsz", "cuGraphLaunch", 1, 10000, 1 << 30)

#ifndef AGENT_HOSTCALL_IMPL	/* only their addresses, for the table */
#define HC_DECL_(name, sym, proc, ptsz, lo, hi) \
	void gt_hc_##name(void) __asm__(sym);
AGENT_HOSTCALLS(HC_DECL_)
#undef HC_DECL_
#endif

/* Their entries in agent_hooks.c's table. */
#define HC_(name, sym, proc, ptsz, lo, hi) \
	{ sym, proc, ptsz, lo, hi, (void *)gt_hc_##name, \
	  &agent_hc_real[AGENT_HE_##name] },
#define AGENT_HOSTCALL_HOOKS	AGENT_HOSTCALLS(HC_)

#endif
