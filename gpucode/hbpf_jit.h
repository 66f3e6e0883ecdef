/* SPDX-License-Identifier: MIT */
/*
 * hbpf_jit: verified host eBPF (gpucode/hbpf.h) compiled to x86-64, for
 * the agent's launch hook, where a run starts with cold caches and the
 * interpreter's dispatch is most of what a launch adds (docs/hostpath.md,
 * "JIT").  A run's results are hbpf_run's for every input: r0, the
 * error (-EFAULT, -E2BIG, -EINVAL), and the memory it writes, which is
 * checked against the same regions by the same code (gpucode/hbpf_int.h).
 */
#ifndef GT_HBPF_JIT_H
#define GT_HBPF_JIT_H

#include "gpucode/hbpf.h"

struct hbpf_jit;

/*
 * Native code for P (verified by hbpf_verify) calling the helpers of OPS
 * (kept: it must outlive the result; NULL: none).  P's instructions and
 * maps are copied.  NULL with the reason in ERR when the program is not
 * compiled (not x86-64, no memory, GPUTRACE_HBPF_JIT is for the caller):
 * the interpreter runs it then.
 */
struct hbpf_jit *hbpf_jit_compile(const struct hbpf_prog *p,
				  const struct hbpf_ops *ops, char *err,
				  size_t errlen);

/* hbpf_run(P, OPS, ARG, CTX, RET) for the P and OPS compiled.  MEMO:
 * NULL, or HBPF_MAX_MAPS struct hbpf_memo that OPS' lookup keeps (the
 * same results, fewer calls of it). */
int hbpf_jit_run(const struct hbpf_jit *j, void *arg, const void *ctx,
		 struct hbpf_memo *memo, uint64_t *ret);

/* The same on STACK (HBPF_STACK bytes, 8-aligned): for tests, which
 * compare it with hbpf_int_run_on() on one stack. */
int hbpf_jit_run_on(const struct hbpf_jit *j, void *arg, const void *ctx,
		    struct hbpf_memo *memo, uint64_t *stack, uint64_t *ret);

/* Bytes of native code. */
size_t hbpf_jit_size(const struct hbpf_jit *j);

void hbpf_jit_free(struct hbpf_jit *j);

#endif
