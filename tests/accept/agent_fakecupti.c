// SPDX-License-Identifier: MIT
/*
 * A fake libcupti.so.13 for testing cuda:complete without a GPU
 * (tests/accept/cuda_complete.sh): the activity API calls the agent
 * makes, and fakecupti_kernel(), which the fake libcuda
 * (agent_fakecuda.c) calls for every kernel it "runs".  Each run becomes
 * a CUpti_ActivityKernel10 record that lasted FAKECUPTI_NS (1000 ns)
 * after FAKECUPTI_QUEUED_NS (250 ns) in the queue; with driver records
 * on (--timeline), a cuLaunchKernel record of 100 ns on the calling
 * thread comes before it, with the same correlation id.  Records are
 * handed to the agent's buffer callback at a flush, a few per buffer.
 * `queued` is recorded only with latency timestamps on; with
 * CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER set, a buffer that is
 * not all zeros aborts.  Like a library with
 * static objects it registers an exit handler as it loads; a flush
 * after that handler ran aborts.
 *
 * gpu:sample (tests/accept/gpu_sample.sh): the PC sampling API too.
 * Every run of a kernel while sampling is on in the context adds, at
 * period 2^20 (the default), FAKEPCS_LS samples of long_scoreboard at
 * PC 0x10, and at PC 0x20 FAKEPCS_MATH of math_pipe_throttle and
 * FAKEPCS_SEL of selected; a period of 2^p multiplies them by 2^(20-p)
 * (FAKEPCS_LSNI of the long_scoreboard samples are listed again under
 * long_scoreboard_not_issued, a subset, as a real CUPTI does)
 * (p >= 17).  CUPTI aggregates per (kernel, PC) until the samples are
 * taken; a take hands out at most collectNumPcs PCs.  With
 * FAKECUPTI_PCS=busy, Enable fails as with another client holding it;
 * FAKECUPTI_PCS=none, as on a GPU without PC sampling;
 * FAKECUPTI_PCS=full: the first take with samples says the hardware
 * buffer filled (CUPTI_ERROR_OUT_OF_MEMORY, the data handed over all
 * the same) and that it dropped FAKEPCS_DROPPED samples.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>
#include <sys/syscall.h>

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_pcsampling.h>
#include <cupti_version.h>

#define FAKECUPTI_NS		1000
#define FAKECUPTI_QUEUED_NS	250
#define MAXREC			4096

static CUpti_BuffersCallbackRequestFunc req;
static CUpti_BuffersCallbackCompleteFunc done;
static int enabled, driver;
/* records of either kind, each in a slot of the larger size */
union rec {
	CUpti_Activity a;
	CUpti_ActivityKernel10 k;
	CUpti_ActivityAPI api;
};
static union rec pend[MAXREC];
static int npend;
static uint32_t corr;
static uint64_t now = 1000000;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * One subscriber, as CUPTI: FAKECUPTI_HELD set, another client (a
 * profiler) holds it already.  Unsubscribing says so on stderr.
 */
static int subscribed;

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc f,
			   void *u)
{
	if (getenv("FAKECUPTI_HELD") || subscribed)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	subscribed = 1;
	*h = (CUpti_SubscriberHandle)&subscribed;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
	if (!subscribed || h != (CUpti_SubscriberHandle)&subscribed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	subscribed = 0;
	fprintf(stderr, "fakecupti: unsubscribed\n");
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetVersion(uint32_t *v)
{
	*v = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
					   CUpti_BuffersCallbackCompleteFunc d)
{
	req = r;
	done = d;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
		enabled = 1;
	else if (kind == CUPTI_ACTIVITY_KIND_DRIVER)
		driver = 1;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
		enabled = 0;
	else if (kind == CUPTI_ACTIVITY_KIND_DRIVER)
		driver = 0;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain dom, uint32_t cbid,
				 const char **name)
{
	if (dom != CUPTI_CB_DOMAIN_DRIVER_API ||
	    cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = "cuLaunchKernel";
	return CUPTI_SUCCESS;
}

/* `queued` is recorded only with these on, as by CUPTI (0: unknown);
 * said on stderr, for the test that they stay off unless needed */
static int latency;

CUptiResult cuptiActivityEnableLatencyTimestamps(uint8_t on)
{
	latency = on;
	if (on)
		fprintf(stderr, "fakecupti: latency timestamps on\n");
	return CUPTI_SUCCESS;
}

/* With the attribute set, a buffer handed to us must be all zeros, as
 * CUPTI then does not clear it: one that is not aborts. */
static int zeroed;

CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute a, size_t *len,
				      void *v)
{
	if (a != CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER ||
	    *len != sizeof(uint8_t))
		return CUPTI_ERROR_INVALID_PARAMETER;
	zeroed = *(uint8_t *)v;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s,
					      size_t *n)
{
	*n = 0;
	return CUPTI_SUCCESS;
}

void fakecupti_kernel(const char *name, const unsigned g[3],
		      const unsigned b[3]);

static volatile int torn;

/* What CUPTI's exit handlers leave: a flush after them aborts. */
static void fakecupti_teardown(void)
{
	torn = 1;
}

/* Tell the fake driver where to report its runs, when it is there (in
 * the global scope, or loaded privately: a library that ctypes opened
 * needs it); and register the exit handler as a library does, as it
 * loads. */
__attribute__((constructor)) static void fakecupti_init(void)
{
	void (*loaded)(void *) =
		(void (*)(void *))dlsym(RTLD_DEFAULT, "fakecuda_cupti_loaded");
	void *h;

	if (!loaded && (h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD))) {
		loaded = (void (*)(void *))dlsym(h, "fakecuda_cupti_loaded");
		dlclose(h);
	}
	if (loaded)
		loaded((void *)fakecupti_kernel);
	atexit(fakecupti_teardown);
}

/* The fake driver ran kernel NAME (a name that lives on). */
static void pcs_kernel(const char *name);

void fakecupti_kernel(const char *name, const unsigned g[3],
		      const unsigned b[3])
{
	CUpti_ActivityKernel10 *k;
	CUpti_ActivityAPI *a;

	pcs_kernel(name);
	pthread_mutex_lock(&lock);
	corr++;
	if (driver && npend < MAXREC) {
		a = &pend[npend++].api;
		memset(a, 0, sizeof(pend[0]));
		a->kind = CUPTI_ACTIVITY_KIND_DRIVER;
		a->cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
		a->start = now;
		a->end = now + 100;
		a->processId = (uint32_t)getpid();
		a->threadId = (uint32_t)syscall(SYS_gettid);
		a->correlationId = corr;
	}
	if (enabled && npend < MAXREC) {
		k = &pend[npend++].k;
		memset(k, 0, sizeof(pend[0]));
		k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k->queued = latency ? now : 0;
		k->start = now + FAKECUPTI_QUEUED_NS;
		k->end = k->start + FAKECUPTI_NS;
		now = k->end;
		k->gridX = (int)g[0];
		k->gridY = (int)g[1];
		k->gridZ = (int)g[2];
		k->blockX = (int)b[0];
		k->blockY = (int)b[1];
		k->blockZ = (int)b[2];
		k->streamId = 7;
		k->correlationId = corr;
		k->name = name;
	}
	pthread_mutex_unlock(&lock);
}

/*
 * The pending records in buffers of at most FAKECUPTI_PER_BUF records,
 * each asked for and handed back in turn, so that a client's second
 * buffer may be its first one again (reused buffers are checked).
 */
#define FAKECUPTI_PER_BUF	4

/* memcmp's speed, not a byte loop's: at 4 records a buffer a backlog is
 * a thousand buffers of 4 MiB, and a flush that took seconds kept the
 * agent's thread from seeing its tracer die (accept/agent_attach) */
static bool all_zero(const uint8_t *b, size_t n)
{
	return !n || (!b[0] && !memcmp(b, b + 1, n - 1));
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	if (torn) {
		fprintf(stderr, "fakecupti: flush after its exit handlers\n");
		abort();
	}
	for (;;) {
		uint8_t *buf = NULL;
		size_t size = 0, max = 0, n, k;

		pthread_mutex_lock(&lock);
		k = npend < FAKECUPTI_PER_BUF ? (size_t)npend : FAKECUPTI_PER_BUF;
		n = k * sizeof(pend[0]);
		if (n && req)
			req(&buf, &size, &max);
		if (buf && zeroed && !all_zero(buf, size)) {
			size_t i = 0;

			while (!buf[i])
				i++;
			fprintf(stderr, "fakecupti: a buffer said zeroed is not "
				"(byte %zu)\n", i);
			abort();
		}
		if (buf && size >= n) {
			memcpy(buf, pend, n);
			npend -= (int)k;
			memmove(pend, pend + k, (size_t)npend * sizeof(pend[0]));
		} else {
			n = 0;
		}
		pthread_mutex_unlock(&lock);
		if (buf && done)
			done(NULL, 0, buf, size, n);
		if (!n)
			return CUPTI_SUCCESS;
	}
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid,
				       CUpti_Activity **rec)
{
	uint8_t *p = *rec ? (uint8_t *)*rec + sizeof(pend[0]) : buf;

	if (p + sizeof(pend[0]) > buf + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}

/* ------------------------------------------------------ PC sampling -- */

#define FAKEPCS_LS	3
#define FAKEPCS_MATH	2
#define FAKEPCS_SEL	1
#define FAKEPCS_LSNI	2
#define PCS_MAX		64	/* (kernel, PC) pairs pending */
#define FAKEPCS_DROPPED	5

static const uint32_t stall_index[] = { 2, 7, 9, 3 };
static const char *const stall_names[] = {
	"smsp__pcsamp_warps_issue_stalled_long_scoreboard",
	"smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
	"smsp__pcsamp_warps_issue_stalled_selected",
	"smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
};
#define NSTALL	4
#define NI_STALL 3	/* a subset of stall 0: not in the total */

static struct pcs_pc {
	const char *name;
	uint64_t pc;
	uint32_t samples[NSTALL];
} pcs_pend[PCS_MAX];
static int pcs_npend, pcs_on;
static uint32_t pcs_period;
static CUpti_PCSamplingData *pcs_cfgbuf;

CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = r == CUPTI_ERROR_NOT_SUPPORTED ? "CUPTI_ERROR_NOT_SUPPORTED" :
	     r == CUPTI_ERROR_HARDWARE_BUSY ? "CUPTI_ERROR_HARDWARE_BUSY" :
	     "CUPTI_ERROR_FAKE";
	return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *p)
{
	const char *e = getenv("FAKECUPTI_PCS");

	if (!p || p->size < CUpti_PCSamplingEnableParamsSize || !p->ctx)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (e && !strcmp(e, "busy"))
		return CUPTI_ERROR_HARDWARE_BUSY;
	if (e && !strcmp(e, "none"))
		return CUPTI_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	pcs_on = 1;
	pcs_period = 0;		/* CUPTI's own default until configured */
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingGetNumStallReasons(
	CUpti_PCSamplingGetNumStallReasonsParams *p)
{
	if (!pcs_on || !p->numStallReasons)
		return CUPTI_ERROR_INVALID_OPERATION;
	*p->numStallReasons = NSTALL;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiPCSamplingGetStallReasons(
	CUpti_PCSamplingGetStallReasonsParams *p)
{
	if (!pcs_on || p->numStallReasons != NSTALL)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (int i = 0; i < NSTALL; i++) {
		p->stallReasonIndex[i] = stall_index[i];
		snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE,
			 "%s", stall_names[i]);
	}
	return CUPTI_SUCCESS;
}

/* What the agent must set: continuous, parsed, a buffer, a period. */
CUptiResult cuptiPCSamplingSetConfigurationAttribute(
	CUpti_PCSamplingConfigurationInfoParams *p)
{
	bool mode = false;

	if (!pcs_on)
		return CUPTI_ERROR_INVALID_OPERATION;
	for (size_t i = 0; i < p->numAttributes; i++) {
		CUpti_PCSamplingConfigurationInfo *a =
			&p->pPCSamplingConfigurationInfo[i];

		switch (a->attributeType) {
		case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
			if (a->attributeData.samplingPeriodData.samplingPeriod < 5 ||
			    a->attributeData.samplingPeriodData.samplingPeriod > 31)
				return CUPTI_ERROR_INVALID_PARAMETER;
			pcs_period = a->attributeData.samplingPeriodData.samplingPeriod;
			break;
		case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
			mode = a->attributeData.collectionModeData.collectionMode ==
			       CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
			break;
		case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
			pcs_cfgbuf = a->attributeData.samplingDataBufferData.samplingDataBuffer;
			break;
		default:
			break;
		}
	}
	return mode && pcs_cfgbuf && pcs_period ? CUPTI_SUCCESS :
	       CUPTI_ERROR_INVALID_PARAMETER;
}

static void pcs_add(const char *name, uint64_t pc, int stall, uint32_t n)
{
	int i;

	for (i = 0; i < pcs_npend; i++)
		if (pcs_pend[i].name == name && pcs_pend[i].pc == pc)
			break;
	if (i == pcs_npend) {
		if (i == PCS_MAX)
			return;
		memset(&pcs_pend[i], 0, sizeof(pcs_pend[i]));
		pcs_pend[i].name = name;
		pcs_pend[i].pc = pc;
		pcs_npend++;
	}
	pcs_pend[i].samples[stall] += n;
}

static void pcs_kernel(const char *name)
{
	uint32_t scale;

	pthread_mutex_lock(&lock);
	if (pcs_on && pcs_period >= 17 && pcs_period <= 20) {
		scale = 1u << (20 - pcs_period);
		pcs_add(name, 0x10, 0, FAKEPCS_LS * scale);
		pcs_add(name, 0x20, 1, FAKEPCS_MATH * scale);
		pcs_add(name, 0x20, 2, FAKEPCS_SEL * scale);
		pcs_add(name, 0x10, NI_STALL, FAKEPCS_LSNI * scale);
	}
	pthread_mutex_unlock(&lock);
}

/* Hand up to D->collectNumPcs pending PCs over (lock held). */
static void pcs_fill(CUpti_PCSamplingData *d)
{
	size_t n = 0;

	d->totalNumPcs = 0;
	d->totalSamples = 0;
	d->droppedSamples = 0;
	while (n < d->collectNumPcs && pcs_npend) {
		struct pcs_pc *s = &pcs_pend[--pcs_npend];
		CUpti_PCSamplingPCData *o = &d->pPcData[n++];
		size_t k = 0;

		o->pcOffset = s->pc;
		o->functionName = (char *)s->name;
		for (int j = 0; j < NSTALL; j++) {
			if (!s->samples[j])
				continue;
			o->stallReason[k].pcSamplingStallReasonIndex =
				stall_index[j];
			o->stallReason[k++].samples = s->samples[j];
			if (j != NI_STALL)
				d->totalSamples += s->samples[j];
		}
		o->stallReasonCount = k;
	}
	d->totalNumPcs = n;
	d->remainingNumPcs = (size_t)pcs_npend;
}

CUptiResult cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *p)
{
	CUpti_PCSamplingData *d = p->pcSamplingData;

	if (torn) {
		fprintf(stderr, "fakecupti: PC samples taken after its exit "
			"handlers\n");
		abort();
	}
	if (!pcs_on)
		return CUPTI_ERROR_INVALID_OPERATION;
	if (!d || !d->pPcData || !d->collectNumPcs)
		return CUPTI_ERROR_INVALID_PARAMETER;
	static int full_told;
	const char *e = getenv("FAKECUPTI_PCS");
	bool full;

	pthread_mutex_lock(&lock);
	pcs_fill(d);
	full = e && !strcmp(e, "full") && d->totalNumPcs && !full_told;
	if (full) {
		full_told = 1;
		d->droppedSamples = FAKEPCS_DROPPED;
	}
	pthread_mutex_unlock(&lock);
	return full ? CUPTI_ERROR_OUT_OF_MEMORY : CUPTI_SUCCESS;
}

/* What is left goes to the configuration's buffer. */
CUptiResult cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *p)
{
	char name[16];

	if (torn) {
		fprintf(stderr, "fakecupti: PC sampling disabled after its "
			"exit handlers\n");
		abort();
	}
	/* a detach turns it off on a launching thread, not the agent's
	 * (on a GPU that hung a PyTorch job) */
	if (pthread_getname_np(pthread_self(), name, sizeof(name)) == 0 &&
	    !strcmp(name, "gputrace-agent"))
		fprintf(stderr, "fakecupti: PC sampling disabled on the "
			"agent's thread\n");
	pthread_mutex_lock(&lock);
	if (pcs_on && pcs_cfgbuf)
		pcs_fill(pcs_cfgbuf);
	pcs_on = 0;
	pcs_npend = 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}
