// SPDX-License-Identifier: MIT
/*
 * CUPTI's PC sampling alone, as gpu:sample configures it (the same
 * gpucode/cupti_pcs.h), without gputrace: bench/sample's CUPTI-alone
 * floor, for its launch row (launches -C pcs:PERIOD -b SECONDS) and
 * its whole programs (cupti_pcfloor_so.c, preloaded).  Every stall
 * reason, turned on in a context once CUDA is up (PC sampling is per
 * context), and a thread that takes the data every 100 ms with
 * cuptiPCSamplingGetData, as the agent's thread does: what PC sampling
 * costs whatever its client does.  libcupti is opened at run time, as
 * the agent opens it; driver API only, so that C can include it.
 * At the stop, on the FILE given: "cupti: N samples, D dropped".
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "../../gpucode/cupti_open.h"
#include "../../gpucode/cupti_pcs.h"

static struct {
	struct cupti_pcs api;
	uint32_t period;
	CUcontext ctx;
	size_t nstall;
	uint32_t *index;
	char **names;
	CUpti_PCSamplingData cfg, take;
	unsigned long samples, dropped;
	pthread_t thread;
	pthread_mutex_t lock;
	volatile int quit;
} pf = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Before CUDA is initialised: MODE "pcs:PERIOD" (the caller's period,
 * so that no second default beside the agent's can drift); 0, or 1. */
static int cupti_pcfloor_open(const char *mode)
{
	void *h = cupti_open_lib();

	if (strncmp(mode, "pcs:", 4) || !(pf.period = (uint32_t)atoi(mode + 4))) {
		fprintf(stderr, "pcfloor: the mode is pcs:PERIOD\n");
		return 1;
	}
	if (!h) {
		fprintf(stderr, "pcfloor: no libcupti: %s\n", dlerror());
		return 1;
	}
	if (cupti_pcs_load(h, &pf.api)) {
		fprintf(stderr, "pcfloor: libcupti lacks PC sampling\n");
		return 1;
	}
	return 0;
}

/* What CUPTI holds, counted (pf.lock held). */
static void pf_take(void)
{
	CUpti_PCSamplingGetDataParams p = {};

	p.size = CUpti_PCSamplingGetDataParamsSize;
	p.ctx = pf.ctx;
	p.pcSamplingData = &pf.take;
	for (int t = 0; t < 64; t++) {
		pf.take.totalNumPcs = pf.take.remainingNumPcs = 0;
		pf.take.totalSamples = pf.take.droppedSamples = 0;
		CUptiResult r = pf.api.get_data(&p);

		if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY)
			return;
		pf.samples += pf.take.totalSamples;
		pf.dropped += pf.take.droppedSamples;
		if (!pf.take.remainingNumPcs)
			return;
	}
}

static void *pf_taker(void *arg)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	(void)arg;
	while (!pf.quit) {
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&pf.lock);
		pf_take();
		pthread_mutex_unlock(&pf.lock);
	}
	return NULL;
}

/* In the current context, CUDA up: PC sampling on; 0, or 1. */
static int cupti_pcfloor_start(void)
{
	CUpti_PCSamplingEnableParams ep = {};

	if (cuCtxGetCurrent(&pf.ctx) != CUDA_SUCCESS || !pf.ctx) {
		fprintf(stderr, "pcfloor: no current context\n");
		return 1;
	}
	ep.size = CUpti_PCSamplingEnableParamsSize;
	ep.ctx = pf.ctx;
	if (pf.api.enable(&ep) != CUPTI_SUCCESS) {
		fprintf(stderr, "pcfloor: CUPTI refused PC sampling\n");
		return 1;
	}
	if (cupti_pcs_stalls(&pf.api, pf.ctx, &pf.nstall, &pf.index,
			     &pf.names) != CUPTI_SUCCESS ||
	    cupti_pcs_data_alloc(&pf.cfg, CUPTI_PCS_PCS, pf.nstall) ||
	    cupti_pcs_data_alloc(&pf.take, CUPTI_PCS_PCS, pf.nstall)) {
		fprintf(stderr, "pcfloor: no stall reasons\n");
		return 1;
	}
	if (cupti_pcs_configure(&pf.api, pf.ctx, pf.period, pf.nstall, pf.index,
				&pf.cfg) != CUPTI_SUCCESS) {
		fprintf(stderr, "pcfloor: CUPTI refused the configuration\n");
		return 1;
	}
	if (pthread_create(&pf.thread, NULL, pf_taker, NULL)) {
		fprintf(stderr, "pcfloor: no thread\n");
		return 1;
	}
	return 0;
}

static void cupti_pcfloor_stop(FILE *out)
{
	CUpti_PCSamplingDisableParams dp = {};

	cuCtxSynchronize();
	pf.quit = 1;
	pthread_join(pf.thread, NULL);
	pf_take();
	dp.size = CUpti_PCSamplingDisableParamsSize;
	dp.ctx = pf.ctx;
	pf.api.disable(&dp);
	fprintf(out, "cupti: %lu samples, %lu dropped\n", pf.samples,
		pf.dropped);
	cupti_pcs_data_free(&pf.cfg);
	cupti_pcs_data_free(&pf.take);
	cupti_pcs_stalls_free(pf.nstall, pf.index, pf.names);
}
