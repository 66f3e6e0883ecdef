/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's PC sampling API (cupti_pcsampling.h) as gpu:sample uses it:
 * the entry points, found in an opened libcupti, and the configuration
 * of a context (continuous mode, every stall reason, bounded buffers,
 * PARSED records into the caller's buffer).  Shared by the agent
 * (runtime/agent/agent_sample.c) and the CUPTI-alone floor of
 * bench/sample (tests/gpu/cupti_pcfloor.h, built by nvcc as C++), so
 * that the floor is configured as the agent is.
 */
#ifndef GT_CUPTI_PCS_H
#define GT_CUPTI_PCS_H

#include <dlfcn.h>
#include <string.h>

#include <cupti_pcsampling.h>

#define CUPTI_PCS_SCRATCH	(2u << 20)
#define CUPTI_PCS_HW		(64u << 20)	/* CUPTI's default: 512 MiB */

struct cupti_pcs {
	CUptiResult (*enable)(CUpti_PCSamplingEnableParams *);
	CUptiResult (*disable)(CUpti_PCSamplingDisableParams *);
	CUptiResult (*set_attr)(CUpti_PCSamplingConfigurationInfoParams *);
	CUptiResult (*get_data)(CUpti_PCSamplingGetDataParams *);
	CUptiResult (*nstalls)(CUpti_PCSamplingGetNumStallReasonsParams *);
	CUptiResult (*stalls)(CUpti_PCSamplingGetStallReasonsParams *);
	CUptiResult (*result_string)(CUptiResult, const char **);
};

/* A's entry points from libcupti handle H; 0, or -1 when one is missing
 * (result_string is optional). */
static inline int cupti_pcs_load(void *h, struct cupti_pcs *a)
{
#define CUPTI_PCS_SYM(f, n) (*(void **)&a->f = dlsym(h, n))
	if (!CUPTI_PCS_SYM(enable, "cuptiPCSamplingEnable") ||
	    !CUPTI_PCS_SYM(disable, "cuptiPCSamplingDisable") ||
	    !CUPTI_PCS_SYM(set_attr, "cuptiPCSamplingSetConfigurationAttribute") ||
	    !CUPTI_PCS_SYM(get_data, "cuptiPCSamplingGetData") ||
	    !CUPTI_PCS_SYM(nstalls, "cuptiPCSamplingGetNumStallReasons") ||
	    !CUPTI_PCS_SYM(stalls, "cuptiPCSamplingGetStallReasons"))
		return -1;
	CUPTI_PCS_SYM(result_string, "cuptiGetResultString");
#undef CUPTI_PCS_SYM
	return 0;
}

/*
 * Sampling in CTX every 2^PERIOD cycles, the NSTALL stall reasons of
 * INDEX, records parsed into BUF (which CUPTI fills at the disable),
 * start/stop control off: sampling runs from the enable on.
 */
static inline CUptiResult cupti_pcs_configure(const struct cupti_pcs *a,
					      CUcontext ctx, uint32_t period,
					      size_t nstall, uint32_t *index,
					      CUpti_PCSamplingData *buf)
{
	CUpti_PCSamplingConfigurationInfo c[8];
	CUpti_PCSamplingConfigurationInfoParams p;
	int n = 0;

	memset(c, 0, sizeof(c));
	memset(&p, 0, sizeof(p));
#define CUPTI_PCS_ATTR(t) (c[n].attributeType = \
		CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_##t, &c[n++].attributeData)
	CUPTI_PCS_ATTR(SAMPLING_PERIOD)->samplingPeriodData.samplingPeriod =
		period;
	CUPTI_PCS_ATTR(STALL_REASON)->stallReasonData.stallReasonCount = nstall;
	c[n - 1].attributeData.stallReasonData.pStallReasonIndex = index;
	CUPTI_PCS_ATTR(SCRATCH_BUFFER_SIZE)->scratchBufferSizeData
		.scratchBufferSize = CUPTI_PCS_SCRATCH;
	CUPTI_PCS_ATTR(HARDWARE_BUFFER_SIZE)->hardwareBufferSizeData
		.hardwareBufferSize = CUPTI_PCS_HW;
	CUPTI_PCS_ATTR(COLLECTION_MODE)->collectionModeData.collectionMode =
		CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
	CUPTI_PCS_ATTR(ENABLE_START_STOP_CONTROL)->enableStartStopControlData
		.enableStartStopControl = 0;
	CUPTI_PCS_ATTR(OUTPUT_DATA_FORMAT)->outputDataFormatData
		.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
	CUPTI_PCS_ATTR(SAMPLING_DATA_BUFFER)->samplingDataBufferData
		.samplingDataBuffer = buf;
#undef CUPTI_PCS_ATTR
	p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
	p.ctx = ctx;
	p.numAttributes = n;
	p.pPCSamplingConfigurationInfo = c;
	return a->set_attr(&p);
}

#endif
