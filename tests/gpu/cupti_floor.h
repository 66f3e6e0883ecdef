// SPDX-License-Identifier: MIT
/*
 * CUPTI alone, as cuda:complete uses it, without gputrace: for
 * bench/complete's floor rows (launches -C MODE -b SECONDS).  MODE:
 *   kernel   CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL records
 *   latency  the same with queued/submitted timestamps
 *            (cuptiActivityEnableLatencyTimestamps), which `queued` needs
 * Buffers of 8 MiB are handed out zeroed (the attribute says so, so
 * CUPTI does not clear them in the launching thread) and every record
 * is walked and counted, nothing else: what CUPTI costs a launch
 * whatever its client does.  libcupti is opened at run time, as the
 * agent opens it.  At the end, on stdout: "cupti: N kernel records, D
 * dropped".
 */
#include <dlfcn.h>
#include <cupti_activity.h>

#include "../../gpucode/cupti_open.h"

#define CF_BUF	(8u << 20)

static struct {
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*callbacks)(CUpti_BuffersCallbackRequestFunc,
				 CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*flush)(uint32_t);
	CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
	CUptiResult (*latency)(uint8_t);
	CUptiResult (*set_attr)(CUpti_ActivityAttribute, size_t *, void *);
} cf;
static unsigned long cf_records, cf_dropped;

static void CUPTIAPI cf_request(uint8_t **buf, size_t *size, size_t *max)
{
	*buf = (uint8_t *)calloc(1, CF_BUF);
	*size = *buf ? CF_BUF : 0;
	*max = 0;
}

static void CUPTIAPI cf_done(CUcontext ctx, uint32_t stream, uint8_t *buf,
			     size_t size, size_t valid)
{
	CUpti_Activity *a = NULL;
	size_t n = 0;

	while (valid && cf.next(buf, valid, &a) == CUPTI_SUCCESS)
		if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			__atomic_add_fetch(&cf_records, 1, __ATOMIC_RELAXED);
	if (cf.dropped && cf.dropped(ctx, stream, &n) == CUPTI_SUCCESS)
		__atomic_add_fetch(&cf_dropped, n, __ATOMIC_RELAXED);
	free(buf);
}

/* Before CUDA is initialised; 0, or 1 with the reason on stderr. */
static int cupti_floor_start(const char *mode)
{
	void *h = cupti_open_lib();
	uint8_t zeroed = 1;
	size_t len = sizeof(zeroed);

	if (strcmp(mode, "kernel") && strcmp(mode, "latency")) {
		fprintf(stderr, "launches: -C kernel or -C latency\n");
		return 1;
	}
	if (!h) {
		fprintf(stderr, "launches: no libcupti: %s\n", dlerror());
		return 1;
	}
#define CF_SYM(f, n) (*(void **)&cf.f = dlsym(h, n))
	if (!CF_SYM(enable, "cuptiActivityEnable") ||
	    !CF_SYM(callbacks, "cuptiActivityRegisterCallbacks") ||
	    !CF_SYM(next, "cuptiActivityGetNextRecord") ||
	    !CF_SYM(flush, "cuptiActivityFlushAll") ||
	    !CF_SYM(latency, "cuptiActivityEnableLatencyTimestamps") ||
	    !CF_SYM(set_attr, "cuptiActivitySetAttribute")) {
		fprintf(stderr, "launches: libcupti lacks the activity API\n");
		return 1;
	}
	CF_SYM(dropped, "cuptiActivityGetNumDroppedRecords");
#undef CF_SYM
	if (cf.set_attr(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &len,
			&zeroed) != CUPTI_SUCCESS)
		fprintf(stderr, "launches: CUPTI refused zeroed buffers (it "
			"clears them itself)\n");
	if (cf.callbacks(cf_request, cf_done) != CUPTI_SUCCESS ||
	    cf.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
		fprintf(stderr, "launches: CUPTI refused kernel records\n");
		return 1;
	}
	if (!strcmp(mode, "latency") && cf.latency(1) != CUPTI_SUCCESS) {
		fprintf(stderr, "launches: CUPTI refused latency timestamps\n");
		return 1;
	}
	return 0;
}

static void cupti_floor_stop(void)
{
	cudaDeviceSynchronize();
	cf.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	printf("cupti: %lu kernel records, %lu dropped\n",
	       __atomic_load_n(&cf_records, __ATOMIC_RELAXED),
	       __atomic_load_n(&cf_dropped, __ATOMIC_RELAXED));
}
