/* SPDX-License-Identifier: MIT */
/*
 * Host clauses at the agent's hooks other than launches (docs/hostpath.md):
 * cuda:malloc, cuda:free, cuda:memcpy, cuda:sync.  The allocation hooks
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

#ifndef AGENT_HOSTCALL_IMPL	/* only their addresses, for the table */
#define HC_DECL_(name, sym, kind) \
	void gt_hc_##name(void) __asm__(sym);
#define HC_HOOKED_(X)							\
	X(MALLOC_HOST, "cuMemAllocHost_v2", 0) X(HOST_ALLOC, "cuMemHostAlloc", 0) \
	X(FREE_HOST, "cuMemFreeHost", 0) X(HTOD, "cuMemcpyHtoD_v2", 0)	\
	X(HTOD_PTDS, "cuMemcpyHtoD_v2_ptds", 0)				\
	X(HTOD_ASYNC, "cuMemcpyHtoDAsync_v2", 0)			\
	X(HTOD_ASYNC_PTSZ, "cuMemcpyHtoDAsync_v2_ptsz", 0)		\
	X(DTOH, "cuMemcpyDtoH_v2", 0) X(DTOH_PTDS, "cuMemcpyDtoH_v2_ptds", 0) \
	X(DTOH_ASYNC, "cuMemcpyDtoHAsync_v2", 0)			\
	X(DTOH_ASYNC_PTSZ, "cuMemcpyDtoHAsync_v2_ptsz", 0)		\
	X(DTOD, "cuMemcpyDtoD_v2", 0) X(DTOD_PTDS, "cuMemcpyDtoD_v2_ptds", 0) \
	X(DTOD_ASYNC, "cuMemcpyDtoDAsync_v2", 0)			\
	X(DTOD_ASYNC_PTSZ, "cuMemcpyDtoDAsync_v2_ptsz", 0)		\
	X(MEMCPY, "cuMemcpy", 0) X(MEMCPY_PTDS, "cuMemcpy_ptds", 0)	\
	X(MEMCPY_ASYNC, "cuMemcpyAsync", 0)				\
	X(MEMCPY_ASYNC_PTSZ, "cuMemcpyAsync_ptsz", 0)			\
	X(CTX_SYNC, "cuCtxSynchronize", 0)				\
	X(CTX_SYNC_V2, "cuCtxSynchronize_v2", 0)			\
	X(STREAM_SYNC, "cuStreamSynchronize", 0)			\
	X(STREAM_SYNC_PTSZ, "cuStreamSynchronize_ptsz", 0)		\
	X(EVENT_SYNC, "cuEventSynchronize", 0)
HC_HOOKED_(HC_DECL_)
#undef HC_DECL_
#endif

/*
 * The hook table's entries (agent_hooks.c's H/HV), by the name
 * cuGetProcAddress is asked for, its per-thread variant and its ABI's
 * version range.
 */
#define HC_(name, sym, proc, ptsz, lo, hi) \
	{ sym, proc, ptsz, lo, hi, (void *)gt_hc_##name, \
	  &agent_hc_real[AGENT_HE_##name] }
#define AGENT_HOSTCALL_HOOKS						\
	HC_(MALLOC_HOST, "cuMemAllocHost_v2", "cuMemAllocHost", -1, 3020, 1 << 30), \
	HC_(HOST_ALLOC, "cuMemHostAlloc", "cuMemHostAlloc", -1, 0, 1 << 30), \
	HC_(FREE_HOST, "cuMemFreeHost", "cuMemFreeHost", -1, 0, 1 << 30), \
	HC_(HTOD, "cuMemcpyHtoD_v2", "cuMemcpyHtoD", 0, 3020, 1 << 30), \
	HC_(HTOD_PTDS, "cuMemcpyHtoD_v2_ptds", "cuMemcpyHtoD", 1, 3020, 1 << 30), \
	HC_(HTOD_ASYNC, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", 0, 3020, 1 << 30), \
	HC_(HTOD_ASYNC_PTSZ, "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync", 1, 3020, 1 << 30), \
	HC_(DTOH, "cuMemcpyDtoH_v2", "cuMemcpyDtoH", 0, 3020, 1 << 30), \
	HC_(DTOH_PTDS, "cuMemcpyDtoH_v2_ptds", "cuMemcpyDtoH", 1, 3020, 1 << 30), \
	HC_(DTOH_ASYNC, "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync", 0, 3020, 1 << 30), \
	HC_(DTOH_ASYNC_PTSZ, "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoHAsync", 1, 3020, 1 << 30), \
	HC_(DTOD, "cuMemcpyDtoD_v2", "cuMemcpyDtoD", 0, 3020, 1 << 30), \
	HC_(DTOD_PTDS, "cuMemcpyDtoD_v2_ptds", "cuMemcpyDtoD", 1, 3020, 1 << 30), \
	HC_(DTOD_ASYNC, "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync", 0, 3020, 1 << 30), \
	HC_(DTOD_ASYNC_PTSZ, "cuMemcpyDtoDAsync_v2_ptsz", "cuMemcpyDtoDAsync", 1, 3020, 1 << 30), \
	HC_(MEMCPY, "cuMemcpy", "cuMemcpy", 0, 4000, 1 << 30), \
	HC_(MEMCPY_PTDS, "cuMemcpy_ptds", "cuMemcpy", 1, 4000, 1 << 30), \
	HC_(MEMCPY_ASYNC, "cuMemcpyAsync", "cuMemcpyAsync", 0, 4000, 1 << 30), \
	HC_(MEMCPY_ASYNC_PTSZ, "cuMemcpyAsync_ptsz", "cuMemcpyAsync", 1, 4000, 1 << 30), \
	/* 13.0 gave cuCtxSynchronize a context argument */		\
	HC_(CTX_SYNC, "cuCtxSynchronize", "cuCtxSynchronize", -1, 0, 13000), \
	HC_(CTX_SYNC_V2, "cuCtxSynchronize_v2", "cuCtxSynchronize", -1, 13000, 1 << 30), \
	HC_(STREAM_SYNC, "cuStreamSynchronize", "cuStreamSynchronize", 0, 0, 1 << 30), \
	HC_(STREAM_SYNC_PTSZ, "cuStreamSynchronize_ptsz", "cuStreamSynchronize", 1, 0, 1 << 30), \
	HC_(EVENT_SYNC, "cuEventSynchronize", "cuEventSynchronize", -1, 0, 1 << 30)

#endif
