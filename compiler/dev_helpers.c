/* SPDX-License-Identifier: MIT */
/*
 * The device helper table: name, argument kinds and result kind of every
 * GT_DH_* id.  The verifier checks calls against it, the disassembler and
 * the lowering take names from it.
 */
#include "compiler/dev_helpers.h"

#include <stddef.h>

#define BUILTIN(id_, name_) \
	[(id_) - GT_DH_BASE] = { (id_), (name_), { GT_DHA_NONE }, GT_DHR_SCALAR }

/* map id, key, scalar value: every aggregation but count() */
#define AGG(id_, name_) \
	[(id_) - GT_DH_BASE] = { (id_), (name_), \
		{ GT_DHA_MAP_ID, GT_DHA_KEY, GT_DHA_SCALAR }, GT_DHR_VOID }

static const struct gt_dev_helper_desc dh_table[GT_DH_END_ - GT_DH_BASE] = {
	BUILTIN(GT_DH_SMID, "gt_smid"),
	BUILTIN(GT_DH_NSMID, "gt_nsmid"),
	BUILTIN(GT_DH_WARPID, "gt_warpid"),
	BUILTIN(GT_DH_LANEID, "gt_laneid"),
	BUILTIN(GT_DH_LANES, "gt_lanes"),
	BUILTIN(GT_DH_CTAID_X, "gt_ctaid_x"),
	BUILTIN(GT_DH_CTAID_Y, "gt_ctaid_y"),
	BUILTIN(GT_DH_CTAID_Z, "gt_ctaid_z"),
	BUILTIN(GT_DH_TID_X, "gt_tid_x"),
	BUILTIN(GT_DH_TID_Y, "gt_tid_y"),
	BUILTIN(GT_DH_TID_Z, "gt_tid_z"),
	BUILTIN(GT_DH_NTID_X, "gt_ntid_x"),
	BUILTIN(GT_DH_NTID_Y, "gt_ntid_y"),
	BUILTIN(GT_DH_NTID_Z, "gt_ntid_z"),
	BUILTIN(GT_DH_NCTAID_X, "gt_nctaid_x"),
	BUILTIN(GT_DH_NCTAID_Y, "gt_nctaid_y"),
	BUILTIN(GT_DH_NCTAID_Z, "gt_nctaid_z"),
	BUILTIN(GT_DH_GTIME, "gt_gtime"),
	BUILTIN(GT_DH_CLOCK, "gt_clock"),
	BUILTIN(GT_DH_DURATION, "gt_duration"),
	BUILTIN(GT_DH_LAUNCH, "gt_launch"),
	BUILTIN(GT_DH_LAUNCH_NS, "gt_launch_ns"),
	BUILTIN(GT_DH_GPU, "gt_gpu"),
	BUILTIN(GT_DH_PID, "gt_pid"),
	BUILTIN(GT_DH_KERNEL, "gt_kernel"),
	[GT_DH_ARG - GT_DH_BASE] = { GT_DH_ARG, "gt_arg",
		{ GT_DHA_CONST }, GT_DHR_SCALAR },
	[GT_DH_MAP_LOOKUP - GT_DH_BASE] = { GT_DH_MAP_LOOKUP, "gt_map_lookup",
		{ GT_DHA_MAP_ID, GT_DHA_KEY }, GT_DHR_MAP_VALUE_OR_NULL },
	[GT_DH_MAP_UPDATE - GT_DH_BASE] = { GT_DH_MAP_UPDATE, "gt_map_update",
		{ GT_DHA_MAP_ID, GT_DHA_KEY, GT_DHA_VALUE_PTR }, GT_DHR_VOID },
	[GT_DH_MAP_DELETE - GT_DH_BASE] = { GT_DH_MAP_DELETE, "gt_map_delete",
		{ GT_DHA_MAP_ID, GT_DHA_KEY }, GT_DHR_VOID },
	[GT_DH_AGG_COUNT - GT_DH_BASE] = { GT_DH_AGG_COUNT, "gt_agg_count",
		{ GT_DHA_MAP_ID, GT_DHA_KEY }, GT_DHR_VOID },
	AGG(GT_DH_AGG_SUM, "gt_agg_sum"),
	AGG(GT_DH_AGG_MIN, "gt_agg_min"),
	AGG(GT_DH_AGG_MAX, "gt_agg_max"),
	AGG(GT_DH_AGG_AVG, "gt_agg_avg"),
	AGG(GT_DH_AGG_STATS, "gt_agg_stats"),
	AGG(GT_DH_AGG_HIST, "gt_agg_hist"),
	AGG(GT_DH_AGG_LHIST, "gt_agg_lhist"),
	AGG(GT_DH_AGG_SMLOAD, "gt_agg_smload"),
	[GT_DH_PRINTF - GT_DH_BASE] = { GT_DH_PRINTF, "gt_printf",
		{ GT_DHA_CONST, GT_DHA_STACK_BUF, GT_DHA_CONST }, GT_DHR_VOID },
	[GT_DH_KERNEL_NAME - GT_DH_BASE] = { GT_DH_KERNEL_NAME, "gt_kernel_name",
		{ GT_DHA_STACK_BUF, GT_DHA_CONST }, GT_DHR_VOID },
	[GT_DH_READ - GT_DH_BASE] = { GT_DH_READ, "gt_read",
		{ GT_DHA_STACK_BUF, GT_DHA_CONST, GT_DHA_SCALAR }, GT_DHR_VOID },
	BUILTIN(GT_DH_MEM_ADDR, "gt_mem_addr"),
	BUILTIN(GT_DH_MEM_SIZE, "gt_mem_size"),
	BUILTIN(GT_DH_MEM_STORE, "gt_mem_store"),
	BUILTIN(GT_DH_MEM_SECTORS, "gt_mem_sectors"),
	BUILTIN(GT_DH_MEM_INSN, "gt_mem_insn"),
	BUILTIN(GT_DH_MEM_LINE, "gt_mem_line"),
	BUILTIN(GT_DH_MEM_CONFLICTS, "gt_mem_conflicts"),
};

const struct gt_dev_helper_desc *gt_dev_helper(int32_t id)
{
	const struct gt_dev_helper_desc *d;

	if (id < GT_DH_BASE || id >= GT_DH_END_)
		return NULL;
	d = &dh_table[id - GT_DH_BASE];
	/* a hole would mean an id added to the enum but not here */
	return d->name ? d : NULL;
}
