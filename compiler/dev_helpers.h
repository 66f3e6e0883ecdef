/* SPDX-License-Identifier: MIT */
/*
 * Device helpers: the eBPF `call IMM` targets that a device clause (gpu:*)
 * may use.  They are not kernel helpers: the device verifier accepts only
 * these, and the PTX lowering turns each into special-register reads or a
 * call into the device runtime.
 *
 * Calling convention is eBPF's: arguments in r1..r5, result in r0,
 * r1..r5 clobbered, r6..r9 and r10 preserved.
 */
#ifndef GT_DEV_HELPERS_H
#define GT_DEV_HELPERS_H

#include <stdbool.h>
#include <stdint.h>

#define GT_DH_BASE 0x4000

enum gt_dev_helper {
	/* builtins: no arguments, u64 result */
	GT_DH_SMID = GT_DH_BASE,
	GT_DH_NSMID,
	GT_DH_WARPID,
	GT_DH_LANEID,
	GT_DH_LANES,		/* popcount of the active mask (gpu:warp) */
	GT_DH_CTAID_X, GT_DH_CTAID_Y, GT_DH_CTAID_Z,	/* blockIdx */
	GT_DH_TID_X, GT_DH_TID_Y, GT_DH_TID_Z,		/* threadIdx */
	GT_DH_NTID_X, GT_DH_NTID_Y, GT_DH_NTID_Z,	/* blockDim */
	GT_DH_NCTAID_X, GT_DH_NCTAID_Y, GT_DH_NCTAID_Z,	/* gridDim */
	GT_DH_GTIME,		/* %globaltimer, ns */
	GT_DH_CLOCK,		/* %clock64 */
	GT_DH_DURATION,		/* :exit only: ns since entry */
	GT_DH_LAUNCH,		/* launch sequence number */
	GT_DH_LAUNCH_NS,	/* host time of the launch */
	GT_DH_GPU,		/* device ordinal */
	GT_DH_PID,
	GT_DH_KERNEL,		/* kernel id; the host maps ids to names */
	/* r1 = parameter index (constant); u64 result */
	GT_DH_ARG,
	/*
	 * Maps.  r1 = device map id (constant), r2 = pointer to the key on
	 * the stack (key_size initialised bytes) or 0 for a map without key,
	 * r3 = value where the helper takes one.
	 */
	GT_DH_MAP_LOOKUP,	/* r0 = pointer to value, or NULL */
	GT_DH_MAP_UPDATE,	/* r3 = pointer to value_size bytes on the stack */
	GT_DH_MAP_DELETE,
	GT_DH_AGG_COUNT,	/* no r3 */
	GT_DH_AGG_SUM,
	GT_DH_AGG_MIN,
	GT_DH_AGG_MAX,
	GT_DH_AGG_AVG,
	GT_DH_AGG_STATS,
	GT_DH_AGG_HIST,		/* bucket math is the runtime's */
	GT_DH_AGG_LHIST,	/* min/max/step come from the map's description */
	GT_DH_AGG_SMLOAD,	/* keyed implicitly by smid */
	/* r1 = format id (constant), r2 = pointer to args, r3 = size (constant) */
	GT_DH_PRINTF,
	/*
	 * r1 = stack buffer (already zeroed), r2 = its size (constant): the
	 * kernel's name is copied into it (the `kernel` builtin).
	 */
	GT_DH_KERNEL_NAME,
	/*
	 * r1 = stack buffer (zeroed), r2 = 1, 2, 4 or 8 (constant), r3 =
	 * device address: r2 bytes read into it when they lie inside an
	 * allocation the agent knows and are aligned, else left 0 and
	 * counted (docs/device-runtime.md, "Reading device memory").
	 */
	GT_DH_READ,
	/*
	 * gpu:mem builtins, no arguments, u64 result: what the splicer
	 * computed at the memory instruction (%gt_m* placeholders).
	 */
	GT_DH_MEM_ADDR,		/* lowest address the active lanes touch */
	GT_DH_MEM_SIZE,		/* bytes per lane */
	GT_DH_MEM_STORE,	/* 0 load, 1 store or atomic */
	GT_DH_MEM_SECTORS,	/* distinct 32-byte sectors */
	GT_DH_MEM_INSN,		/* the instruction's index in the kernel */
	GT_DH_MEM_LINE,		/* .loc line, or 0 */
	GT_DH_MEM_CONFLICTS,	/* :shared: bank conflicts */
	GT_DH_END_
};

enum gt_dh_arg {
	GT_DHA_NONE,
	GT_DHA_CONST,		/* known scalar constant */
	GT_DHA_MAP_ID,		/* constant naming a device map */
	GT_DHA_KEY,		/* stack pointer to key_size bytes, or 0 if key_size == 0 */
	GT_DHA_VALUE_PTR,	/* stack pointer to value_size bytes */
	GT_DHA_SCALAR,		/* any initialised scalar */
	GT_DHA_STACK_BUF,	/* stack pointer to r(i+1) bytes, next arg CONST size */
};

enum gt_dh_ret {
	GT_DHR_SCALAR,
	GT_DHR_VOID,		/* r0 unspecified after the call */
	GT_DHR_MAP_VALUE_OR_NULL,
};

struct gt_dev_helper_desc {
	enum gt_dev_helper id;
	const char *name;
	enum gt_dh_arg args[5];
	enum gt_dh_ret ret;
};

/* Description of helper ID, or NULL when ID is not a device helper. */
const struct gt_dev_helper_desc *gt_dev_helper(int32_t id);

/* A device map as the verifier and the lowering see it. */
struct gt_dev_map {
	int id;
	uint32_t key_size;
	uint32_t value_size;
	bool per_kernel;	/* count()/hist() keyed by the kernel only: no
				 * key passed, the keyless inline path */
};

#endif
