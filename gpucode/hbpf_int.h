/* SPDX-License-Identifier: MIT */
/*
 * hbpf internals shared by the interpreter (gpucode/hbpf.c) and the JIT
 * (gpucode/hbpf_jit.c): one run's state, its memory check and its helper
 * calls, so that both check exactly the same regions the same way.  Not
 * for other users.
 */
#ifndef GT_HBPF_INT_H
#define GT_HBPF_INT_H

#include "gpucode/hbpf.h"

struct hbpf_run {
	const struct hbpf_prog *p;
	uint8_t *stack;		/* HBPF_STACK bytes, r10 at the end */
	const uint8_t *ctx;
	/* the last value handed out, checked inline: a program reads the
	 * value it just looked up (a kernel name's 64 bytes, a count) */
	uintptr_t last;
	uint64_t lsize;
	int nvals;
	uint8_t *vals[HBPF_VALS];	/* map values handed out, ring order */
	uint32_t vsize[HBPF_VALS];
};

/* Host pointer for N bytes at ADDR, or NULL when no region of R holds
 * them (the context only if !WRITE). */
void *hbpf_int_mem(struct hbpf_run *r, uint64_t addr, uint64_t n, bool write);

/* Helper ID with the registers in REG (r1-r4 read, r0 written): 0, or
 * the run's error. */
int hbpf_int_call(struct hbpf_run *r, const struct hbpf_ops *o, void *arg,
		  int id, uint64_t *reg);

/* V, map MI's value, one of R's regions (what a lookup returned). */
static inline void hbpf_int_keep(struct hbpf_run *r, int mi, void *v)
{
	unsigned s = (unsigned)r->nvals++ % HBPF_VALS;

	r->vals[s] = v;
	r->vsize[s] = r->p->maps[mi].value_size;
	r->last = (uintptr_t)v;
	r->lsize = r->vsize[s];
}

/* map_lookup_elem once its arguments are known good: map MI (not the
 * ring), KEY inside a region for the key's size. */
void *hbpf_int_lookup(struct hbpf_run *r, const struct hbpf_ops *o,
		      void *arg, int mi, const void *key);

/* The interpreter from PC with BUDGET instructions left, on the state of
 * R and REG (the JIT's way out when a block would pass the budget). */
int hbpf_int_resume(struct hbpf_run *r, const struct hbpf_ops *o, void *arg,
		    uint64_t *reg, size_t pc, long budget, uint64_t *ret);

/* hbpf_run on STACK (HBPF_STACK bytes, 8-aligned) rather than its own:
 * the tests compare it with the JIT on one stack. */
int hbpf_int_run_on(const struct hbpf_prog *p, const struct hbpf_ops *ops,
		    void *arg, const void *ctx, uint64_t *stack,
		    uint64_t *ret);

#endif
