// SPDX-License-Identifier: MIT
/*
 * --timeline FILE: CUPTI's activity records written as a Chrome Trace
 * Event file (docs/timeline.md), streamed as the records come back.
 *
 * The agent writes the file itself, from the thread that hands CUPTI's
 * buffers back: the records never cross to the tracer, and what is on
 * disk is a JSON array that viewers load even when its end is missing
 * (the target killed).  Memory is bounded: CUPTI's buffers, a stdio
 * buffer, and launches whose kernel record has not come yet, or kernel
 * names whose launch record has not (CUPTI hands them back in separate
 * buffers, in either order: TL_PENDING, so that the CPU slice of a
 * launch can name its kernel); past that a launch is written without
 * the name.
 *
 * One clock: every timestamp is CUPTI's (ns), written in microseconds
 * since the first record of the session.  CPU tracks are the process's
 * threads; each GPU is a process of its own (pid TL_GPU_PID + device)
 * with one track per stream.  A flow ("s" on the launch, "f" on the
 * kernel run, CUPTI's correlation id) joins each launch to its run.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include "runtime/agent/agent_priv.h"

#define TL_GPU_PID	1000000000u	/* + device ordinal */
#define TL_PENDING	16384		/* launches waiting for their kernel */
#define TL_CBIDS	4096		/* driver callback ids classified */
#define TL_THREADS	1024		/* threads named */

enum { CB_UNKNOWN, CB_SKIP, CB_LAUNCH, CB_KEEP };

/* A launch call waiting for its kernel's name, or the name waiting for
 * the call (KERNEL set, FUNC NULL). */
struct pending {
	uint32_t corr;		/* 0: free */
	uint32_t tid;
	uint64_t start, end;
	const char *func;
	char *kernel;
};

static struct {
	FILE *f;
	pthread_mutex_t lock;
	CUptiResult (*cb_name)(CUpti_CallbackDomain, uint32_t, const char **);
	uint64_t t0;		/* first timestamp written */
	uint8_t cbid[2][TL_CBIDS];	/* driver, runtime */
	uint32_t named[TL_THREADS];
	int nnamed;
	uint32_t gpus;		/* bit d: GPU d named */
	int64_t mem[32];	/* device memory allocated, per GPU */
	struct pending pend[TL_PENDING];
	uint64_t events;
} tl = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * The calls that the cuda: provider knows, by name after the "cu" or
 * "cuda" prefix: driver calls (programs and libraries that use the
 * driver API, Triton's launches) and runtime calls (the CUDA runtime
 * reaches the driver through paths CUPTI records only in part).
 */
static int classify(const char *name)
{
	static const char *const keep[] = {
		"Memcpy", "Memset", "MemAlloc", "Malloc", "MemFree", "Free",
		"MemHostAlloc", "HostAlloc", "MemCreate", "CtxSynchronize",
		"DeviceSynchronize", "StreamSynchronize", "EventSynchronize",
		"GraphLaunch", "ModuleLoad", "LibraryLoad", "StreamWaitEvent",
	};

	if (!name || strncmp(name, "cu", 2))
		return CB_SKIP;
	name += strncmp(name, "cuda", 4) ? 2 : 4;
	if (!strncmp(name, "Launch", 6))
		return CB_LAUNCH;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (!strncmp(name, keep[i], strlen(keep[i])))
			return CB_KEEP;
	return CB_SKIP;
}

/* The call's name (runtime names lose their "_v3020" version), and its
 * class, cached per callback id. */
static const char *cb_name(bool runtime, uint32_t cbid, int *cls)
{
	static __thread char buf[96];
	const char *name = NULL, *v;

	if (tl.cb_name)
		tl.cb_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API :
			   CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name);
	if (cbid < TL_CBIDS) {
		if (tl.cbid[runtime][cbid] == CB_UNKNOWN)
			tl.cbid[runtime][cbid] = (uint8_t)classify(name);
		*cls = tl.cbid[runtime][cbid];
	} else {
		*cls = classify(name);
	}
	if (runtime && name && (v = strstr(name, "_v")) &&
	    (size_t)(v - name) < sizeof(buf)) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(v - name), name);
		name = buf;
	}
	return name;
}

/* JSON string body of S (quotes not included). */
static void put_str(const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(tl.f, "\\%c", c);
		else if (c < 0x20)
			fprintf(tl.f, "\\u%04x", c);
		else
			fputc(c, tl.f);
	}
}

/* Microseconds since the session's first record, ns kept. */
static void put_ts(const char *key, uint64_t ns)
{
	if (!tl.t0)
		tl.t0 = ns;
	ns = ns > tl.t0 ? ns - tl.t0 : 0;
	fprintf(tl.f, "\"%s\":%llu.%03llu", key,
		(unsigned long long)(ns / 1000),
		(unsigned long long)(ns % 1000));
}

static void put_dur(uint64_t start, uint64_t end)
{
	uint64_t d = end > start ? end - start : 0;

	fprintf(tl.f, "\"dur\":%llu.%03llu", (unsigned long long)(d / 1000),
		(unsigned long long)(d % 1000));
}

static void meta(uint32_t pid, uint32_t tid, const char *what,
		 const char *name)
{
	fprintf(tl.f, "{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"%s\","
		"\"args\":{\"name\":\"", pid, tid, what);
	put_str(name);
	fputs("\"}},\n", tl.f);
}

static void name_thread(uint32_t tid)
{
	char path[64], comm[64] = "";
	FILE *f;

	for (int i = 0; i < tl.nnamed; i++)
		if (tl.named[i] == tid)
			return;
	if (tl.nnamed == TL_THREADS)
		return;
	tl.named[tl.nnamed++] = tid;
	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	if ((f = fopen(path, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	/* viewers add the tid */
	meta((uint32_t)agent.pid, tid, "thread_name",
	     comm[0] ? comm : "thread");
}

static uint32_t gpu_pid(uint32_t dev)
{
	char name[32];

	if (dev < 32 && !(tl.gpus & (1u << dev))) {
		tl.gpus |= 1u << dev;
		snprintf(name, sizeof(name), "GPU %u", dev);
		meta(TL_GPU_PID + dev, 0, "process_name", name);
		fprintf(tl.f, "{\"ph\":\"M\",\"pid\":%u,\"name\":"
			"\"process_sort_index\",\"args\":{\"sort_index\":%u}},\n",
			TL_GPU_PID + dev, 100 + dev);
	}
	return TL_GPU_PID + dev;
}

static void stream_track(uint32_t dev, uint32_t stream)
{
	/* one name event per (GPU, stream) would need a set; viewers keep
	 * the last of repeated names, so name a stream at each of its
	 * first 64 ids cheaply: streams are few */
	static uint64_t seen[256];
	uint64_t key = ((uint64_t)dev << 32 | stream) + 1;
	char name[32];

	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		if (seen[i] == key)
			return;
		if (!seen[i]) {
			seen[i] = key;
			snprintf(name, sizeof(name), "stream %u", stream);
			meta(gpu_pid(dev), stream, "thread_name", name);
			return;
		}
	}
}

/* A CPU slice: a driver call on thread TID. */
static void cpu_slice(const char *func, uint32_t tid, uint64_t start,
		      uint64_t end, uint32_t corr, const char *kernel)
{
	name_thread(tid);
	fprintf(tl.f, "{\"ph\":\"X\",\"cat\":\"cuda\",\"name\":\"");
	put_str(func);
	fprintf(tl.f, "\",\"pid\":%d,\"tid\":%u,", (int)agent.pid, tid);
	put_ts("ts", start);
	fputc(',', tl.f);
	put_dur(start, end);
	fprintf(tl.f, ",\"args\":{\"correlation\":%u", corr);
	if (kernel) {
		fputs(",\"kernel\":\"", tl.f);
		put_str(kernel);
		fputc('"', tl.f);
	}
	fputs("}},\n", tl.f);
	tl.events++;
}

static struct pending *pend_slot(uint32_t corr)
{
	return &tl.pend[(corr * 2654435761u) % TL_PENDING];
}

/* Free slot P: what it held is written as it is (an unnamed launch;
 * a kernel name whose launch never came is dropped). */
static void pend_drop(struct pending *p)
{
	if (p->corr && p->func)
		cpu_slice(p->func, p->tid, p->start, p->end, p->corr, NULL);
	free(p->kernel);
	memset(p, 0, sizeof(*p));
}

/* A launch call with its kernel's name, and the flow's start. */
static void launch_named(const struct pending *p, const char *kernel)
{
	cpu_slice(p->func, p->tid, p->start, p->end, p->corr, kernel);
	fprintf(tl.f, "{\"ph\":\"s\",\"cat\":\"launch\",\"name\":"
		"\"launch\",\"id\":%u,\"pid\":%d,\"tid\":%u,", p->corr,
		(int)agent.pid, p->tid);
	put_ts("ts", p->start);
	fputs("},\n", tl.f);
}

static void api(const CUpti_ActivityAPI *a, bool runtime)
{
	struct pending *p, call;
	int cls;

	call = (struct pending){ a->correlationId, a->threadId, a->start,
				 a->end, cb_name(runtime, a->cbid, &cls),
				 NULL };
	if (cls == CB_SKIP)
		return;
	if (cls != CB_LAUNCH) {
		cpu_slice(call.func, a->threadId, a->start, a->end,
			  a->correlationId, NULL);
		return;
	}
	p = pend_slot(a->correlationId);
	if (p->corr == a->correlationId && p->kernel) {
		launch_named(&call, p->kernel);	/* its kernel came first */
		pend_drop(p);
		return;
	}
	pend_drop(p);		/* taken: the older one goes as it is */
	*p = call;
}

static void kernel(const CUpti_ActivityKernel10 *k)
{
	struct pending *p = pend_slot(k->correlationId);
	char *d = k->name ? agent_demangle(k->name) : NULL;
	/* `kernel`'s name: demangled, without the parameter list */
	char *name = d ? agent_base_name(d) :
		     k->name ? agent_simple_name(k->name) : NULL;
	const char *shown = name ? name : k->name ? k->name : "?";
	uint32_t pid = gpu_pid(k->deviceId);

	stream_track(k->deviceId, k->streamId);
	if (k->correlationId && !k->graphId) {
		if (p->corr == k->correlationId && p->func) {
			launch_named(p, shown);
			memset(p, 0, sizeof(*p));
		} else {	/* the launch comes later */
			pend_drop(p);
			p->corr = k->correlationId;
			p->kernel = strdup(shown);
		}
	}
	fputs("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"", tl.f);
	put_str(shown);
	fprintf(tl.f, "\",\"pid\":%u,\"tid\":%u,", pid, k->streamId);
	put_ts("ts", k->start);
	fputc(',', tl.f);
	put_dur(k->start, k->end);
	fprintf(tl.f, ",\"args\":{\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],"
		"\"shared\":%d,\"registers\":%u,\"stream\":%u,"
		"\"correlation\":%u,\"graph\":%u}},\n",
		k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
		k->staticSharedMemory + k->dynamicSharedMemory,
		(unsigned)k->registersPerThread, k->streamId, k->correlationId,
		k->graphId);
	/* graph nodes have no launch of their own: no flow */
	if (k->correlationId && !k->graphId) {
		fprintf(tl.f, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\","
			"\"name\":\"launch\",\"id\":%u,\"pid\":%u,\"tid\":%u,",
			k->correlationId, pid, k->streamId);
		put_ts("ts", k->start);
		fputs("},\n", tl.f);
	}
	tl.events++;
	free(name);
	free(d);
}

static const char *copy_kind(uint8_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
	default: return "copy";
	}
}

/* A copy or a memset on its stream's track. */
static void gpu_op(const char *name, uint32_t dev, uint32_t stream,
		   uint64_t start, uint64_t end, uint64_t bytes, uint32_t corr)
{
	uint32_t pid = gpu_pid(dev);

	stream_track(dev, stream);
	fprintf(tl.f, "{\"ph\":\"X\",\"cat\":\"memory\",\"name\":\"%s\","
		"\"pid\":%u,\"tid\":%u,", name, pid, stream);
	put_ts("ts", start);
	fputc(',', tl.f);
	put_dur(start, end);
	fprintf(tl.f, ",\"args\":{\"bytes\":%llu,\"stream\":%u,"
		"\"correlation\":%u}},\n", (unsigned long long)bytes, stream,
		corr);
	tl.events++;
}

static void memory(const CUpti_ActivityMemory4 *m)
{
	uint32_t dev = m->deviceId;

	if (dev >= 32 || m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
		return;
	if (m->memoryOperationType ==
	    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
		tl.mem[dev] += (int64_t)m->bytes;
	else if (m->memoryOperationType ==
		 CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
		tl.mem[dev] -= (int64_t)m->bytes;
	else
		return;
	fprintf(tl.f, "{\"ph\":\"C\",\"name\":\"device memory\",\"pid\":%u,",
		gpu_pid(dev));
	put_ts("ts", m->timestamp);
	fprintf(tl.f, ",\"args\":{\"bytes\":%lld}},\n", (long long)tl.mem[dev]);
}

bool agent_timeline_on(void)
{
	return tl.f != NULL;
}

/* One activity record from CUPTI's buffer (the agent's CUPTI thread). */
void agent_timeline_record(const void *rec)
{
	const CUpti_Activity *a = rec;

	if (!tl.f)
		return;
	pthread_mutex_lock(&tl.lock);
	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		api((const CUpti_ActivityAPI *)a,
		    a->kind == CUPTI_ACTIVITY_KIND_RUNTIME);
		break;
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		kernel((const CUpti_ActivityKernel10 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *c = (const void *)a;

		gpu_op(copy_kind(c->copyKind), c->deviceId, c->streamId,
		       c->start, c->end, c->bytes, c->correlationId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *s = (const void *)a;

		gpu_op("memset", s->deviceId, s->streamId, s->start, s->end,
		       s->bytes, s->correlationId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		memory((const CUpti_ActivityMemory4 *)a);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&tl.lock);
}

/*
 * Open the file and write its head; CB_NAME is CUPTI's
 * cuptiGetCallbackName.  0 or -errno (reported here).
 */
int agent_timeline_open(void *cb_name)
{
	char comm[64] = "", path[64];
	FILE *f;
	int fd;

	if (!agent.cfg.timeline || tl.f)
		return 0;
	fd = open(agent.cfg.timeline, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		  0644);
	if (fd < 0 || !(tl.f = fdopen(fd, "w"))) {
		int e = -errno;

		agent_report("--timeline: cannot write %s: %s",
			     agent.cfg.timeline, strerror(errno));
		if (fd >= 0)
			close(fd);
		return e;
	}
	*(void **)&tl.cb_name = cb_name;
	/* the array form: loadable without its closing bracket */
	fputs("[\n", tl.f);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)agent.pid);
	if ((f = fopen(path, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	meta((uint32_t)agent.pid, 0, "process_name",
	     comm[0] ? comm : "process");
	fflush(tl.f);
	return 0;
}

/* Records of this flush are on disk (a killed tracer loses none). */
void agent_timeline_sync(void)
{
	if (!tl.f)
		return;
	pthread_mutex_lock(&tl.lock);
	fflush(tl.f);
	pthread_mutex_unlock(&tl.lock);
}

/* The end: launches still waiting, the closing bracket. */
void agent_timeline_close(void)
{
	if (!tl.f)
		return;
	pthread_mutex_lock(&tl.lock);
	for (size_t i = 0; i < TL_PENDING; i++)
		pend_drop(&tl.pend[i]);
	/* the last element has no comma after it */
	fprintf(tl.f, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"gputrace\","
		"\"args\":{\"events\":%llu}}\n]\n", (int)agent.pid,
		(unsigned long long)tl.events);
	fclose(tl.f);
	tl.f = NULL;
	pthread_mutex_unlock(&tl.lock);
	agent_debug("--timeline: %llu events written to %s",
		    (unsigned long long)tl.events, agent.cfg.timeline);
}
/*
 * fork(): the file is the parent's.  What its buffer holds would be
 * written a second time at the child's exit; the child draws nothing
 * (its own run would truncate the parent's file).
 */
void agent_timeline_forked(void)
{
	pthread_mutex_init(&tl.lock, NULL);
	if (tl.f) {
		__fpurge(tl.f);
		fclose(tl.f);
		tl.f = NULL;
	}
	agent.cfg.timeline = NULL;
}

#endif /* GT_AGENT_SO */
