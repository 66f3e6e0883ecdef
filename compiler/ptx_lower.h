/* SPDX-License-Identifier: MIT */
/*
 * Lowering verified device eBPF (gpu:kernel, gpu:warp clauses) to PTX.
 * Each clause becomes one `.func __gt_probe_K(ctx, t0, arg0..)` that the
 * splicer (gpucode/ptx.h) calls from every matched kernel; maps,
 * aggregations and printf go to the device runtime (gpucode/devrt.h,
 * devrt.cu).  docs/device-runtime.md has the design.
 */
#ifndef GT_PTX_LOWER_H
#define GT_PTX_LOWER_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>

#include "compiler/dev_helpers.h"

/* The lowest .version the probe functions and the runtime need. */
#define PL_PTX_MIN_MAJOR 7	/* 7.4: L1 eviction priorities */
#define PL_PTX_MIN_MINOR 4

enum pl_mode {
	PL_THREAD,		/* gpu:kernel: every thread runs the clause */
	PL_WARP,		/* gpu:warp: the lowest active lane runs it */
};

struct pl_opts {
	int index;		/* K: the function is __gt_probe_K */
	enum pl_mode mode;
	bool no_promote;	/* keep every stack slot in .local memory */
	/*
	 * An entry clause pasted inline (pl_inline_text): its inline map
	 * updates are applied at the thread's exit by pl_func.flush.
	 */
	bool defer;
	/* a gpu:mem clause (PL_WARP): elect from the site's mask */
	bool mem;
	/*
	 * hist()/lhist() add to the sum word after the buckets too
	 * (cg_opts.hist_sum, --metrics); off, the word is left alone and
	 * the update is what it was before there was one.
	 */
	bool hist_sum;
};

/* Words of the launch parameter (gpucode/agent_proto.h) a probe reads. */
#define PL_W_LAUNCH	(1u << 1)
#define PL_W_LAUNCH_NS	(1u << 2)
#define PL_W_KERNEL	(1u << 3)
/* Not a word: the thread's shard index %gt_shard, passed after the args */
#define PL_W_SHARD	(1u << 31)

struct pl_func {
	char *text;		/* the .func definition (malloc'd) */
	int index;		/* K */
	int nargs;		/* 1 + highest kernel argument read; 0: none */
	unsigned words;		/* PL_W_*: passed after t0, in that order */
	unsigned mem;		/* gpu:mem builtins: passed last, in
				 * pl_mem_names order (bit i: name i) */
	int frame;		/* bytes of .local stack; 0: none */
	int promoted;		/* 8-byte stack slots kept in registers */
	/*
	 * With pl_opts.defer: the splicer's exit text that applies the
	 * deferred updates (malloc'd), or NULL when there are none.
	 */
	char *flush;
};

/*
 * Lower N instructions, which vf_verify() accepted with the same MAPS.
 * A device map's id is its index in the context's descriptor table
 * (struct devrt_ctx); MAPS give key and value sizes.  0 and *OUT on
 * success; -ENOTSUP (a construct the lowering cannot express: a kernel
 * argument index that is not a constant, an atomic through a pointer
 * that may point to the stack or to a map), -EINVAL or -ENOMEM with a
 * message "probe K: insn N: ..." in ERR.
 */
int pl_lower(const struct bpf_insn *insns, size_t n,
	     const struct gt_dev_map *maps, int nmaps,
	     const struct pl_opts *opts, struct pl_func *out,
	     char *err, size_t errlen);
void pl_func_free(struct pl_func *f);

/*
 * gpu:mem builtins as the lowering reads them: parameter __gt_pm<NAME>
 * of the probe function, placeholder %gt_m<NAME> of the splicer
 * (gpucode/ptx_mem.c), indexed by GT_DH_MEM_* - GT_DH_MEM_ADDR.
 */
#define PL_MEM_N 8
/*
 * Not a builtin: the site's lane mask (the splicer's %gt_mm, read once
 * before the site's clauses), from which a gpu:mem clause elects its
 * lane.  A clause's own activemask would see only the lanes that got
 * there together: lanes that skipped an earlier clause may run ahead
 * and elect a second lane (docs/ptx-splice.md, "Memory instructions").
 */
#define PL_MEM_MASK 7
extern const char *const pl_mem_names[PL_MEM_N];

/*
 * The splicer's entry/exit text that runs probe F: "call __gt_probe_K,
 * (%gt_ctx, %gt_t0[, %gt_launch, %gt_launch_ns, %gt_kernel as F->words
 * says], %gt_arg0, ...[, %gt_shard]);\n" (malloc'd; NULL when out of
 * memory).
 */
char *pl_call_text(const struct pl_func *f);
/*
 * The same probe as splicer text to paste in place of the call: F's body
 * with its registers renamed (%gq_*), its parameters read from the
 * placeholders and its labels made unique per site (%gt_uniq); no call,
 * no ABI, so a probe whose predicate fails costs a few instructions.
 * malloc'd; NULL when out of memory.
 */
char *pl_inline_text(const struct pl_func *f);

/*
 * The module-scope text to splice once per module (ptx_splice_req.decls):
 * the device runtime, then the N probe functions (malloc'd; NULL when out
 * of memory).  With the runtime missing (built without nvcc) the text
 * has the probes only and does not link: check pl_runtime_available().
 */
char *pl_decls(const struct pl_func *funcs, int n);
bool pl_runtime_available(void);

#endif
