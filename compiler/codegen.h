/* SPDX-License-Identifier: MIT */
/*
 * eBPF code generation: one program per attach point, straight from the
 * typed tree.  Values: integers are computed into r0; strings and tuples
 * live in stack buffers at offsets known at compile time.
 */
#ifndef GT_CODEGEN_H
#define GT_CODEGEN_H

#include <stdint.h>

#include "compiler/program.h"
#include "compiler/sema.h"

/* The layout of a map as generated code stores it; decoding uses it too. */
struct map_layout {
	struct map_sym *sym;
	uint32_t key_size;	/* includes the hist bucket */
	uint32_t value_size;
	bool has_bucket;	/* hist/lhist: u64 bucket after the key */
};

struct cg_opts {
	uint64_t start_ns;	/* CLOCK_MONOTONIC at start, for `elapsed` */
	uint64_t cpid;
	uint32_t map_keys_max;	/* entries of a map, 0: 4096 */
	int helper_check;	/* -k: 1 map updates and deletes, -kk: 2 also
				 * reads of absent keys */
	/*
	 * hist()/lhist() also add their values to the sum beside the
	 * buckets (--metrics' _sum).  Off, the slot stays (one layout) but
	 * nothing updates it: an update costs what it did before the sum
	 * (docs/fleet.md).  Kept in gt_object.hist_sum for device_lower().
	 */
	bool hist_sum;
};

#define GT_EVENTS_MAP_SIZE (1u << 20)

/*
 * Build *OBJ (programs and maps) for unit U.  Maps: one per map symbol (in
 * index order), then ".events" (ring buffer) and ".lost" (per-CPU array).
 * Device clauses (gpu:) get programs too, in device eBPF (calls to the
 * device helpers of dev_helpers.h, maps named by their index), for the
 * device verifier and the PTX lowering; the loader skips them.
 * Returns 0 or -EINVAL after reporting through diag.
 */
int cg_build(struct unit *u, const struct cg_opts *opts, struct gt_object *obj);
void cg_free(struct gt_object *obj);

/* Index of the internal maps in obj->maps. */
int cg_events_map(const struct unit *u);
int cg_lost_map(const struct unit *u);

#endif
