/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's PC sampling API (cupti_pcsampling.h) as gpu:sample uses it:
 * the entry points, found in an opened libcupti, a context's stall
 * reasons, the parsed-data buffers and the configuration of a context
 * (continuous mode, every stall reason, bounded buffers, PARSED records
 * into the caller's buffer).  Shared by the agent
 * (runtime/agent/agent_sample.c) and the CUPTI-alone floor of
 * bench/sample (tests/gpu/cupti_pcfloor.h, built as C++ into launches.cu
 * and as C into cupti_pcfloor_so.c), so that the floor is configured as
 * the agent is.
 */
#ifndef GT_CUPTI_PCS_H
#define GT_CUPTI_PCS_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_pcsampling.h>

#define CUPTI_PCS_PCS		2048	/* PCs per take; more: taken again */
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
 * CTX's stall reasons: *N of them, their indexes and their names
 * (CUPTI_STALL_REASON_STRING_SIZE bytes each) in arrays of *N + 1 that
 * the caller frees, also after a failure (cupti_pcs_stalls_free).
 */
static inline CUptiResult cupti_pcs_stalls(const struct cupti_pcs *a,
					   CUcontext ctx, size_t *n,
					   uint32_t **index, char ***names)
{
	CUpti_PCSamplingGetNumStallReasonsParams np;
	CUpti_PCSamplingGetStallReasonsParams sp;
	CUptiResult r;

	memset(&np, 0, sizeof(np));
	memset(&sp, 0, sizeof(sp));
	*n = 0;
	*index = NULL;
	*names = NULL;
	np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
	np.ctx = ctx;
	np.numStallReasons = n;
	r = a->nstalls(&np);
	if (r != CUPTI_SUCCESS)
		return r;
	*index = (uint32_t *)calloc(*n + 1, sizeof(**index));
	*names = (char **)calloc(*n + 1, sizeof(**names));
	if (!*index || !*names)
		return CUPTI_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < *n; i++)
		if (!((*names)[i] = (char *)calloc(1,
					CUPTI_STALL_REASON_STRING_SIZE)))
			return CUPTI_ERROR_OUT_OF_MEMORY;
	sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
	sp.ctx = ctx;
	sp.numStallReasons = *n;
	sp.stallReasonIndex = *index;
	sp.stallReasons = *names;
	return a->stalls(&sp);
}

static inline void cupti_pcs_stalls_free(size_t n, uint32_t *index,
					 char **names)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	free(index);
}

/* D: a parsed-data buffer of NPCS PCs, NSTALL stall reasons each; 0,
 * or -1 (what was allocated is for cupti_pcs_data_free all the same). */
static inline int cupti_pcs_data_alloc(CUpti_PCSamplingData *d, size_t npcs,
				       size_t nstall)
{
	memset(d, 0, sizeof(*d));
	d->size = sizeof(*d);
	d->collectNumPcs = npcs;
	d->pPcData = (CUpti_PCSamplingPCData *)calloc(npcs,
						      sizeof(*d->pPcData));
	if (!d->pPcData)
		return -1;
	for (size_t i = 0; i < npcs; i++) {
		d->pPcData[i].size = sizeof(d->pPcData[i]);
		d->pPcData[i].stallReason = (CUpti_PCSamplingStallReason *)
			calloc(nstall ? nstall : 1,
			       sizeof(*d->pPcData[i].stallReason));
		if (!d->pPcData[i].stallReason)
			return -1;
	}
	return 0;
}

static inline void cupti_pcs_data_free(CUpti_PCSamplingData *d)
{
	for (size_t i = 0; d->pPcData && i < d->collectNumPcs; i++)
		free(d->pPcData[i].stallReason);
	free(d->pPcData);
	d->pPcData = NULL;
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
