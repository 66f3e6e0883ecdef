// SPDX-License-Identifier: MIT
/*
 * A fake libcupti.so.13 for testing cuda:complete without a GPU
 * (tests/accept/cuda_complete.sh): the activity API calls the agent
 * makes, and fakecupti_kernel(), which the fake libcuda
 * (agent_fakecuda.c) calls for every kernel it "runs".  Each run becomes
 * a CUpti_ActivityKernel10 record that lasted FAKECUPTI_NS (1000 ns)
 * after FAKECUPTI_QUEUED_NS (250 ns) in the queue; records are handed
 * to the agent's buffer callback at a flush.  Like a library with
 * static objects it registers an exit handler as it loads; a flush
 * after that handler ran aborts.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_version.h>

#define FAKECUPTI_NS		1000
#define FAKECUPTI_QUEUED_NS	250
#define MAXREC			4096

static CUpti_BuffersCallbackRequestFunc req;
static CUpti_BuffersCallbackCompleteFunc done;
static int enabled;
static CUpti_ActivityKernel10 pend[MAXREC];
static int npend;
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
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
		enabled = 0;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnableLatencyTimestamps(uint8_t on)
{
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

/* Tell the fake driver where to report its runs, when it is there; and
 * register the exit handler as a library does, as it loads. */
__attribute__((constructor)) static void fakecupti_init(void)
{
	void (*loaded)(void *) =
		(void (*)(void *))dlsym(RTLD_DEFAULT, "fakecuda_cupti_loaded");

	if (loaded)
		loaded((void *)fakecupti_kernel);
	atexit(fakecupti_teardown);
}

/* The fake driver ran kernel NAME (a name that lives on). */
void fakecupti_kernel(const char *name, const unsigned g[3],
		      const unsigned b[3])
{
	CUpti_ActivityKernel10 *k;

	pthread_mutex_lock(&lock);
	if (enabled && npend < MAXREC) {
		k = &pend[npend++];
		memset(k, 0, sizeof(*k));
		k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k->queued = now;
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
		k->name = name;
	}
	pthread_mutex_unlock(&lock);
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	uint8_t *buf = NULL;
	size_t size = 0, max = 0, n;

	if (torn) {
		fprintf(stderr, "fakecupti: flush after its exit handlers\n");
		abort();
	}
	pthread_mutex_lock(&lock);
	n = (size_t)npend * sizeof(pend[0]);
	if (n && req)
		req(&buf, &size, &max);
	if (buf && size >= n) {
		memcpy(buf, pend, n);
		npend = 0;
	} else {
		n = 0;
	}
	pthread_mutex_unlock(&lock);
	if (buf && done)
		done(NULL, 0, buf, size, n);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid,
				       CUpti_Activity **rec)
{
	uint8_t *p = *rec ? (uint8_t *)*rec + sizeof(CUpti_ActivityKernel10) :
		     buf;

	if (p + sizeof(CUpti_ActivityKernel10) > buf + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}
