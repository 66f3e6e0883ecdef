// SPDX-License-Identifier: MIT
/*
 * Device state per CUcontext: one allocation holding the devrt context
 * (struct devrt_ctx + map descriptors), the maps, the printf rings and
 * the kernel-name table, all written once through the agent's own
 * non-blocking stream.  Snapshots and printf draining copy through that
 * stream and wait for it alone: the application's streams are never
 * synchronized (except at exit, when the program is done with them).
 *
 *	base:	devrt_ctx | descriptors	(devrt_ctx_bytes, 256-aligned)
 *		map 0 | map 1 | ...	(each 256-aligned)
 *		rings			(devrt_rings_bytes)
 *		names			(AGENT_MAX_KERNELS x 64 bytes)
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpucode/kname.h"
#include "runtime/agent/agent_priv.h"

pthread_mutex_t agent_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct agent_actx *ctxs;
static char (*knames)[AGENT_NAME_BYTES];	/* names by kernel id */

static size_t align256(size_t x)
{
	return (x + 255) & ~(size_t)255;
}

static bool rings_ok(void)
{
	uint32_t rb = agent.cfg.ring_bytes;

	return agent.cfg.nrings && rb >= 64 && !(rb & (rb - 1));
}

/* Fill in what the tracer left to us: shards and SMs of this device. */
static int complete_maps(struct agent_actx *a, char *err, size_t errlen)
{
	a->descs = calloc((size_t)agent.cfg.nmaps + 1, sizeof(*a->descs));
	if (!a->descs)
		return -ENOMEM;
	for (int i = 0; i < agent.cfg.nmaps; i++) {
		struct devrt_map_desc *d = &a->descs[i];

		*d = agent.cfg.maps[i];
		d->base = 0;
		if (!d->nshards)
			d->nshards = d->kind == DEVRT_K_PLAIN ? 1 :
				     (uint32_t)a->sm_count;
		if (d->kind == DEVRT_K_SMLOAD && !d->nwords)
			d->nwords = (uint32_t)a->sm_count;
		if (devrt_map_layout(d) < 0) {
			snprintf(err, errlen, "device map %d: bad layout", i);
			return -EINVAL;
		}
	}
	return 0;
}

/* A kernel that stores %globaltimer: the clock probes see as gtime.
 * Named like every agent kernel, so that cuda:launch skips it. */
#define AGENT_CLOCK	KNAME_AGENT_PREFIX "_clock"
static const char clock_ptx[] =
	".version 6.0\n.target sm_50\n.address_size 64\n"
	".visible .entry " AGENT_CLOCK "(.param .u64 out)\n{\n"
	"\t.reg .b64 %r<3>;\n"
	"\tld.param.u64 %r1, [out];\n"
	"\tcvta.to.global.u64 %r1, %r1;\n"
	"\tmov.u64 %r2, %globaltimer;\n"
	"\tst.global.u64 [%r1], %r2;\n"
	"\tret;\n}\n";

/*
 * Whether a clause reads the launch time, the only user of the offset:
 * else no compile and no round trips for it (a cold compile of even
 * this kernel costs milliseconds before the first instrumented launch).
 */
static bool uses_launch_ns(void)
{
	for (int i = 0; i < agent.cfg.nclauses; i++)
		if (agent.cfg.clauses[i].call &&
		    strstr(agent.cfg.clauses[i].call, "%gt_launch_ns"))
			return true;
	return false;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/*
 * How far the GPU's %globaltimer is ahead of the host's CLOCK_REALTIME
 * (it is kept near it, but may lag by microseconds).  Each read happens
 * before the host sees the kernel done, so GPU time minus the host time
 * after the sync is a lower bound of the offset; the best of a few runs
 * is kept.  Launch times handed to probes get it added, so gtime -
 * launch_ns is never negative.  On any failure the offset stays 0.
 */
static void calibrate(struct agent_actx *a)
{
	CUmodule mod = NULL;
	CUfunction fn;
	CUdeviceptr out = 0;
	int64_t best = INT64_MIN;
	CUresult r;

	/* PTX: a compile, which the exit must not tear down under it */
	if (agent_jit_enter() < 0)
		return;
	r = agent_drv.module_load_data(&mod, clock_ptx);
	agent_jit_leave();
	if (r != CUDA_SUCCESS ||
	    agent_drv.module_get_function(&fn, mod, AGENT_CLOCK) != CUDA_SUCCESS ||
	    agent_drv.mem_alloc(&out, 8) != CUDA_SUCCESS)
		goto out;
	for (int i = 0; i < 5; i++) {
		void *params[] = { &out };
		uint64_t gpu = 0;
		int64_t after;

		if (agent_drv.launch(fn, 1, 1, 1, 1, 1, 1, 0, a->stream, params,
				     NULL) != CUDA_SUCCESS ||
		    agent_drv.dtoh_async(&gpu, out, 8, a->stream) != CUDA_SUCCESS ||
		    agent_drv.stream_sync(a->stream) != CUDA_SUCCESS)
			goto out;
		after = realtime_ns();
		if ((int64_t)gpu - after > best)
			best = (int64_t)gpu - after;
	}
	a->clock_off = best;
	agent_debug("gpu %d: %%globaltimer - CLOCK_REALTIME >= %lld ns",
		    a->gpu, (long long)best);
out:
	if (out)
		agent_drv.mem_free(out);
	if (mod && agent_drv.module_unload)
		agent_drv.module_unload(mod);
}

/*
 * Copy N bytes at SRC (ours until the stream is synchronized: kept in
 * HELD) to device address DST.
 */
static CUresult put(struct agent_actx *a, CUdeviceptr dst, void *src,
		    size_t n, void **held, int *nheld)
{
	held[(*nheld)++] = src;
	return agent_drv.htod_async(dst, src, n, a->stream);
}

static int setup(struct agent_actx *a, char *err, size_t errlen)
{
	uint32_t nmaps = (uint32_t)agent.cfg.nmaps;
	uint32_t nrings = rings_ok() ? agent.cfg.nrings : 0;
	uint32_t rb = nrings ? agent.cfg.ring_bytes : 0;
	size_t off, hdr_bytes, rings_off, names_off, scratch_off;
	size_t allocs_off = 0, *moff;
	struct devrt_ctx *c;
	CUdevice dev;
	uint8_t *hdr;
	void **held;
	int nheld = 0;
	CUresult r;
	int e;

	if (agent_drv.ctx_get_device(&dev) != CUDA_SUCCESS ||
	    agent_drv.device_get_attribute(&a->sm_count,
			CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) {
		snprintf(err, errlen, "cannot query the device");
		return -EIO;
	}
	a->gpu = (int)dev;
	if ((e = complete_maps(a, err, errlen)) < 0)
		return e;
	moff = calloc(nmaps + 1, sizeof(*moff));
	/* the header, keyless min/max maps, names, the allocation table */
	held = calloc(nmaps + 4, sizeof(*held));
	if (!moff || !held) {
		free(moff);
		free(held);
		return -ENOMEM;
	}
	off = hdr_bytes = align256(devrt_ctx_bytes(nmaps));
	for (uint32_t i = 0; i < nmaps; i++) {
		moff[i] = off;
		if (a->descs[i].kind != DEVRT_K_NONE)
			off += align256(devrt_map_bytes(&a->descs[i]));
	}
	rings_off = off;
	off += align256(devrt_rings_bytes(nrings, rb));
	names_off = off;
	off += (size_t)AGENT_MAX_KERNELS * AGENT_NAME_BYTES;
	/* a hist's words past a slot header: where slotless kernels add */
	scratch_off = off;
	off += align256(DEVRT_LINE + 16 + DEVRT_HIST_WORDS * 8);
	if (agent.cfg.reads) {	/* probes read device memory */
		allocs_off = off;
		off += align256(DEVRT_ALLOC_BYTES);
	}
	a->bytes = off;
	hdr = calloc(1, hdr_bytes);
	a->tails = calloc(nrings + 1, sizeof(*a->tails));
	a->hdrs = calloc(nrings + 1, sizeof(*a->hdrs));
	a->rbuf = malloc(DEVRT_LINE + rb);
	r = CUDA_ERROR_OUT_OF_MEMORY;
	if (hdr && a->tails && a->hdrs && a->rbuf)
		r = agent_drv.stream_create(&a->stream, CU_STREAM_NON_BLOCKING);
	if (r == CUDA_SUCCESS)
		r = agent_drv.mem_alloc(&a->base, off);
	if (r != CUDA_SUCCESS) {
		snprintf(err, errlen, "%zu bytes of device memory: %s", off,
			 agent_cu_str(r));
		free(hdr);
		free(moff);
		free(held);
		return -ENOMEM;
	}
	a->d_ctx = a->base;
	a->d_rings = a->base + rings_off;
	a->d_names = a->base + names_off;
	a->d_scratch = a->base + scratch_off;
	/*
	 * Most of the state starts zero (a per-kernel map and the rings
	 * are 16 MB): zeroed on the device, the rest copied over it.
	 */
	r = agent_drv.memset_d8_async(a->base, 0, off, a->stream);
	c = (struct devrt_ctx *)hdr;
	c->magic = DEVRT_MAGIC;
	c->gpu = (uint64_t)a->gpu;
	c->pid = (uint64_t)getpid();
	c->nmaps = nmaps;
	c->nrings = nrings;
	c->ring_bytes = rb;
	c->rings = (uint64_t)a->d_rings;
	c->names = (uint64_t)a->d_names;
	if (allocs_off) {
		uint8_t *t = calloc(1, DEVRT_ALLOC_BYTES);

		a->d_allocs = a->base + allocs_off;
		a->alloc_active = 0;
		c->allocs = (uint64_t)a->d_allocs;
		if (!t) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else if (r != CUDA_SUCCESS) {
			free(t);
		} else {
			agent_alloc_table(a->gpu, (uint64_t *)(t + DEVRT_LINE));
			r = put(a, a->d_allocs, t, DEVRT_ALLOC_BYTES, held,
				&nheld);
		}
	}
	for (uint32_t i = 0; i < nmaps; i++) {
		struct devrt_map_desc *d = &a->descs[i];

		if (d->kind != DEVRT_K_NONE) {
			d->base = (uint64_t)a->base + moff[i];
			if (!devrt_map_zero_init(d) && r == CUDA_SUCCESS) {
				void *m = malloc(devrt_map_bytes(d));

				if (!m) {
					r = CUDA_ERROR_OUT_OF_MEMORY;
				} else {
					devrt_map_init(d, m);
					r = put(a, d->base, m,
						devrt_map_bytes(d), held,
						&nheld);
				}
			}
		}
		memcpy(hdr + DEVRT_CTX_SIZE + (size_t)i * DEVRT_DESC_SIZE, d,
		       sizeof(*d));
	}
	devrt_hot_words(a->descs, (int)nmaps, a->hot);
	if (knames && r == CUDA_SUCCESS) {
		void *n = malloc((size_t)AGENT_MAX_KERNELS * AGENT_NAME_BYTES);

		if (!n) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			memcpy(n, knames,
			       (size_t)AGENT_MAX_KERNELS * AGENT_NAME_BYTES);
			r = put(a, a->d_names, n, (size_t)AGENT_MAX_KERNELS *
				AGENT_NAME_BYTES, held, &nheld);
		}
	}
	if (r == CUDA_SUCCESS)
		r = put(a, a->base, hdr, hdr_bytes, held, &nheld);
	else
		free(hdr);
	if (r == CUDA_SUCCESS)
		r = agent_drv.stream_sync(a->stream);
	else
		agent_drv.stream_sync(a->stream);
	while (nheld)
		free(held[--nheld]);
	free(held);
	free(moff);
	if (r != CUDA_SUCCESS) {
		snprintf(err, errlen, "initialising device memory: %s",
			 agent_cu_str(r));
		return -EIO;
	}
	agent_debug("gpu %d: device state %zu bytes (%u maps, %u rings)",
		    a->gpu, off, nmaps, nrings);
	if (uses_launch_ns())
		calibrate(a);
	return 0;
}

struct agent_actx *agent_ctx_get(CUcontext ctx, char *err, size_t errlen)
{
	struct agent_actx *a;
	bool started = false;

	pthread_mutex_lock(&agent_ctx_lock);
	for (a = ctxs; a && (a->ctx != ctx || a->dead); a = a->next)
		;
	if (!a && (a = calloc(1, sizeof(*a)))) {
		a->ctx = ctx;
		if (setup(a, err, errlen) < 0) {
			a->failed = true;
			agent_report("no device probes in this context: %s", err);
		}
		a->next = ctxs;
		ctxs = a;
		started = !a->failed;
	}
	pthread_mutex_unlock(&agent_ctx_lock);
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (a->failed) {
		snprintf(err, errlen, "setting up this context failed");
		return NULL;
	}
	if (started)
		agent_serve_start();	/* printf draining */
	return a;
}

/*
 * The pitched copy C between host and device on A's stream: in one call,
 * or a row at a time where the driver refuses it.
 */
static CUresult copy_2d(struct agent_actx *a, const CUDA_MEMCPY2D *c)
{
	CUresult r = CUDA_ERROR_NOT_SUPPORTED;

	if (agent_drv.memcpy2d_async)
		r = agent_drv.memcpy2d_async(c, a->stream);
	if (r == CUDA_SUCCESS)
		return r;
	r = CUDA_SUCCESS;
	for (size_t y = 0; y < c->Height && r == CUDA_SUCCESS; y++)
		r = c->dstMemoryType == CU_MEMORYTYPE_DEVICE ?
		    agent_drv.htod_async(c->dstDevice + y * c->dstPitch,
					 (const uint8_t *)c->srcHost +
					 y * c->srcPitch, c->WidthInBytes,
					 a->stream) :
		    agent_drv.dtoh_async((uint8_t *)c->dstHost +
					 y * c->dstPitch,
					 c->srcDevice + y * c->srcPitch,
					 c->WidthInBytes, a->stream);
	return r;
}

/*
 * Claim slot I of per-kernel map D for key KEY in every shard: state
 * (full, the key's hash), live 0, the key.  Nothing on the device probes
 * these tables (every update comes through the hot words), so the slot
 * is simply the next free one.  Under agent_ctx_lock, A's context current.
 */
static int write_kslot(struct agent_actx *a, const struct devrt_map_desc *d,
		       uint32_t i, const uint8_t *key)
{
	size_t row = 16 + d->key_size;
	CUDA_MEMCPY2D c = { 0 };
	CUresult r;
	uint64_t st, h = 0;
	uint8_t *rows;

	if (d->key_size > AGENT_NAME_BYTES)
		return -EINVAL;
	rows = calloc(d->nshards, row);
	if (!rows)
		return -ENOMEM;
	for (uint32_t k = 0; k < d->key_size; k++)
		h = (h ^ key[k]) * 0x100000001b3ull;
	st = h | DEVRT_SLOT_FULL;
	for (uint32_t s = 0; s < d->nshards; s++) {
		memcpy(rows + s * row, &st, 8);
		memcpy(rows + s * row + 16, key, d->key_size);
	}
	/* the slot in every shard */
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = rows;
	c.srcPitch = row;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = d->base + DEVRT_LINE + (CUdeviceptr)i * d->slot_bytes;
	c.dstPitch = d->shard_bytes;
	c.WidthInBytes = row;
	c.Height = d->nshards;
	r = copy_2d(a, &c);
	/* rows are ours: the copies finish before they are freed */
	if (agent_drv.stream_sync(a->stream) != CUDA_SUCCESS)
		r = CUDA_ERROR_UNKNOWN;
	free(rows);
	return r == CUDA_SUCCESS ? 0 : -EIO;
}

void agent_ctx_kernel_hot(struct agent_actx *a, int id, const char *name,
			  uint64_t hot[2 * DEVRT_HOT_MAPS])
{
	uint8_t key[AGENT_NAME_BYTES];
	int nmaps = agent.cfg.nmaps < DEVRT_HOT_MAPS ? agent.cfg.nmaps :
		    DEVRT_HOT_MAPS;

	memcpy(hot, a->hot, sizeof(a->hot));
	kname_key(key, sizeof(key), name);
	pthread_mutex_lock(&agent_ctx_lock);
	for (int m = 0; m < nmaps; m++) {
		const struct devrt_map_desc *d = &a->descs[m];
		uint32_t slot = 0;

		if (!(d->flags & DEVRT_F_KERNEL) || d->kind == DEVRT_K_NONE)
			continue;
		if (!a->kslot)
			a->kslot = calloc(DEVRT_HOT_MAPS, sizeof(*a->kslot));
		if (a->kslot && id >= 0 && id < AGENT_MAX_KERNELS)
			slot = a->kslot[m][id];
		if (!slot && a->kslot && id >= 0 && id < AGENT_MAX_KERNELS &&
		    a->kused[m] < d->capacity &&
		    write_kslot(a, d, a->kused[m], key) == 0)
			slot = a->kslot[m][id] = (uint16_t)++a->kused[m];
		if (!slot) {
			agent_report_once("%s is not counted in map %d: no slot "
					  "left for another kernel", name, m);
			/* shard stride 0: every update lands in the scratch */
			hot[2 * m] = a->d_scratch - DEVRT_LINE - 16;
			hot[2 * m + 1] = 0;
			continue;
		}
		/* the inline update adds at base + shard + LINE + 16: the
		 * slot's value words follow its state, live and key */
		hot[2 * m] = d->base + (uint64_t)(slot - 1) * d->slot_bytes +
			     devrt_key_bytes(d);
		hot[2 * m + 1] = d->shard_bytes |
				 (uint64_t)(d->nshards - 1) << 32;
	}
	pthread_mutex_unlock(&agent_ctx_lock);
}

void agent_ctx_push_allocs(void)
{
	uint64_t *tab = malloc(DEVRT_ALLOC_TABLE);
	CUcontext old;

	if (!tab)
		return;
	pthread_mutex_lock(&agent_ctx_lock);
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		uint32_t next = a->alloc_active ^ 1;
		size_t n;

		if (a->dead || a->failed || !a->d_allocs ||
		    agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS)
			continue;
		/* the other table, then the flip: probes see one or the
		 * other whole */
		n = agent_alloc_table(a->gpu, tab);
		if (agent_drv.htod_async(a->d_allocs + DEVRT_LINE +
					 (CUdeviceptr)next * DEVRT_ALLOC_TABLE,
					 tab, n, a->stream) == CUDA_SUCCESS &&
		    agent_drv.htod_async(a->d_allocs, &next, sizeof(next),
					 a->stream) == CUDA_SUCCESS &&
		    agent_drv.stream_sync(a->stream) == CUDA_SUCCESS)
			a->alloc_active = next;
		agent_drv.ctx_pop(&old);
	}
	pthread_mutex_unlock(&agent_ctx_lock);
	free(tab);
}

void agent_ctx_report_reads(void)
{
	CUcontext old;

	pthread_mutex_lock(&agent_ctx_lock);
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		uint64_t bad = 0;

		if (!a->d_allocs || a->failed)
			continue;
		if (a->dead) {
			if (a->saved)
				memcpy(&bad, a->saved + DEVRT_CTX_BAD_READS, 8);
		} else if (agent_drv.ctx_push(a->ctx) == CUDA_SUCCESS) {
			if (agent_drv.dtoh_async(&bad, a->d_ctx +
						 DEVRT_CTX_BAD_READS, 8,
						 a->stream) != CUDA_SUCCESS ||
			    agent_drv.stream_sync(a->stream) != CUDA_SUCCESS)
				bad = 0;
			agent_drv.ctx_pop(&old);
		}
		if (bad)
			agent_report("gpu %d: %llu device memory reads found no "
				     "allocation the agent knows (or were "
				     "misaligned) and read 0", a->gpu,
				     (unsigned long long)bad);
	}
	pthread_mutex_unlock(&agent_ctx_lock);
}

void agent_ctx_name(int id, const char *name)
{
	char buf[AGENT_NAME_BYTES];
	CUcontext old;

	if (id < 0 || id >= AGENT_MAX_KERNELS)
		return;
	/* `kernel` holds a key; the tracer prints the name (kname.h) */
	kname_key(buf, sizeof(buf), name);
	pthread_mutex_lock(&agent_ctx_lock);
	if (!knames)
		knames = calloc(AGENT_MAX_KERNELS, sizeof(*knames));
	if (knames && !memcmp(knames[id], buf, sizeof(buf))) {
		pthread_mutex_unlock(&agent_ctx_lock);
		return;		/* every context has it already */
	}
	if (knames)
		memcpy(knames[id], buf, sizeof(buf));
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		if (a->dead || a->failed ||
		    agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS)
			continue;
		agent_drv.htod_async(a->d_names + (CUdeviceptr)id *
				     AGENT_NAME_BYTES, buf, sizeof(buf),
				     a->stream);
		agent_drv.stream_sync(a->stream);
		agent_drv.ctx_pop(&old);
	}
	pthread_mutex_unlock(&agent_ctx_lock);
}

/* ---- printf ---- */

struct batch {
	uint8_t *buf;
	size_t len, cap;
	int gpu;
};

static void flush(struct batch *b)
{
	if (b->len)
		agent_send(AGENT_MSG_PRINTF, 0, b->buf, b->len);
	b->len = 0;
}

static void on_record(uint32_t fmt, const void *args, uint32_t size,
		      void *arg)
{
	struct batch *b = arg;
	size_t need = sizeof(struct agent_printf_rec) + ((size + 7u) & ~7u);
	struct agent_printf_rec rec = { fmt, size };

	if (agent.standalone) {
		char line[1024];
		int n = snprintf(line, sizeof(line), "printf [gpu %d] fmt %u:",
				 b->gpu, fmt);

		for (uint32_t i = 0; i + 8 <= size && n > 0 &&
		     (size_t)n < sizeof(line) - 24; i += 8) {
			uint64_t w;

			memcpy(&w, (const uint8_t *)args + i, 8);
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      " %#" PRIx64, w);
		}
		agent_report("%s", line);
		return;
	}
	if (b->len + need > b->cap)
		flush(b);
	if (need > b->cap)
		return;		/* cannot happen: cap >= a whole ring */
	memcpy(b->buf + b->len, &rec, sizeof(rec));
	memcpy(b->buf + b->len + sizeof(rec), args, size);
	memset(b->buf + b->len + sizeof(rec) + size, 0,
	       need - sizeof(rec) - size);
	b->len += need;
}

/* Under agent_ctx_lock, A's context current. */
static void drain_one(struct agent_actx *a, struct batch *b)
{
	uint32_t n = agent.cfg.nrings, rb = agent.cfg.ring_bytes;
	uint64_t stride = DEVRT_LINE + rb, drops = 0;
	CUDA_MEMCPY2D c = { 0 };
	bool wrote = false;

	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = a->d_rings;
	c.srcPitch = stride;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = a->hdrs;
	c.dstPitch = sizeof(*a->hdrs);
	c.WidthInBytes = 3 * sizeof(uint64_t);	/* head, tail, drops */
	c.Height = n;
	if (copy_2d(a, &c) != CUDA_SUCCESS ||
	    agent_drv.stream_sync(a->stream) != CUDA_SUCCESS)
		return;
	b->gpu = a->gpu;
	for (uint32_t i = 0; i < n; i++) {
		CUdeviceptr ring = a->d_rings + i * stride;

		drops += a->hdrs[i].drops;
		if (a->hdrs[i].head == a->tails[i])
			continue;
		if (agent_drv.dtoh_async(a->rbuf + DEVRT_LINE,
					 ring + DEVRT_LINE, rb,
					 a->stream) != CUDA_SUCCESS ||
		    agent_drv.stream_sync(a->stream) != CUDA_SUCCESS)
			break;
		memcpy(a->rbuf, &a->hdrs[i], DEVRT_LINE);
		devrt_ring_read(a->rbuf, rb, &a->tails[i], on_record, b);
		agent_drv.htod_async(ring + offsetof(struct devrt_ring_hdr,
						     tail),
				     &a->tails[i], sizeof(a->tails[i]),
				     a->stream);
		wrote = true;
	}
	if (wrote)
		agent_drv.stream_sync(a->stream);
	if (drops > a->drops)
		agent_report("gpu %d: %" PRIu64 " printf records lost (ring "
			     "full)", a->gpu, drops - a->drops);
	a->drops = drops;
}

/*
 * Under agent_ctx_lock: relaxed capture mode for copying out of the
 * contexts (agent_capture_relax); with no context the driver may not
 * even be loaded, and nothing is copied.
 */
static CUstreamCaptureMode relax_for_copies(void)
{
	return ctxs ? agent_capture_relax() : CU_STREAM_CAPTURE_MODE_RELAXED;
}

void agent_ctx_drain(void)
{
	struct batch b = { 0 };
	CUstreamCaptureMode mode;
	CUcontext old;

	if (!rings_ok())
		return;
	b.cap = agent.cfg.ring_bytes + 64 > 65536 ?
		agent.cfg.ring_bytes + 64 : 65536;
	b.buf = malloc(b.cap);
	if (!b.buf)
		return;
	pthread_mutex_lock(&agent_ctx_lock);
	mode = relax_for_copies();
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		if (a->dead || a->failed ||
		    agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS)
			continue;
		drain_one(a, &b);
		agent_drv.ctx_pop(&old);
	}
	agent_capture_restore(mode);
	flush(&b);
	pthread_mutex_unlock(&agent_ctx_lock);
	free(b.buf);
}

/* ---- maps ---- */

static size_t maps_bytes(const struct agent_actx *a)
{
	return (size_t)(a->d_rings - a->base);
}

/*
 * The layout of a host copy of map I of A: of a map kept per kernel, the
 * slots claimed so far (agent_ctx_kernel_hot claims them for the first
 * DEVRT_HOT_MAPS maps), else the whole map.
 */
static void image_desc(const struct agent_actx *a, int i,
		       struct devrt_map_desc *out)
{
	devrt_map_used(&a->descs[i], i < DEVRT_HOT_MAPS ? a->kused[i] : 0,
		       out);
}

/* Host copy of map I of A into DST, laid out as image_desc() says (OUT):
 * live (A's context current, on its stream) or saved. */
static int copy_map(struct agent_actx *a, int i, void *dst,
		    const struct devrt_map_desc *out)
{
	const struct devrt_map_desc *d = &a->descs[i];
	CUDA_MEMCPY2D c = { 0 };
	uint8_t *to = dst;

	if (a->dead) {
		const uint8_t *from = a->saved;

		if (!from)
			return -ENOENT;
		from += d->base - a->base;
		for (uint32_t s = 0; s < d->nshards; s++)
			memcpy(to + s * out->shard_bytes,
			       from + s * d->shard_bytes, out->shard_bytes);
		return 0;
	}
	if (out->shard_bytes == d->shard_bytes)
		return agent_drv.dtoh_async(dst, d->base, devrt_map_bytes(d),
					    a->stream) == CUDA_SUCCESS ?
		       0 : -EIO;
	/* the front of every shard */
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d->base;
	c.srcPitch = d->shard_bytes;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = dst;
	c.dstPitch = out->shard_bytes;
	c.WidthInBytes = out->shard_bytes;
	c.Height = d->nshards;
	return copy_2d(a, &c) == CUDA_SUCCESS ? 0 : -EIO;
}

void agent_ctx_sync_all(void)
{
	CUcontext old;

	pthread_mutex_lock(&agent_ctx_lock);
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		if (a->dead || a->failed ||
		    agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS)
			continue;
		agent_drv.ctx_sync();
		agent_drv.ctx_pop(&old);
	}
	pthread_mutex_unlock(&agent_ctx_lock);
}

/* A hash of every live context's maps as they are now; 0 when none. */
static uint64_t maps_hash(void)
{
	CUstreamCaptureMode mode;
	uint64_t h = 0;
	CUcontext old;

	pthread_mutex_lock(&agent_ctx_lock);
	mode = relax_for_copies();
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		size_t n = maps_bytes(a) / 8;
		uint64_t *buf;

		if (a->dead || a->failed || !n ||
		    agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS)
			continue;
		buf = malloc(n * 8);
		if (buf && agent_drv.dtoh_async(buf, a->base, n * 8,
						a->stream) == CUDA_SUCCESS &&
		    agent_drv.stream_sync(a->stream) == CUDA_SUCCESS)
			for (size_t i = 0; i < n; i++)
				h = (h ^ buf[i]) * 0x100000001b3ull;
		free(buf);
		agent_drv.ctx_pop(&old);
	}
	agent_capture_restore(mode);
	pthread_mutex_unlock(&agent_ctx_lock);
	return h;
}

/*
 * The session's last snapshot comes next, and no launch is instrumented
 * any more (agent_detach): let the launches already made finish their
 * updates, or a kernel that cuda:launch counted just before would be
 * missing from the device maps.  Waiting for the application's streams
 * could capture into or break its graphs, so: until the maps stay the
 * same over SETTLE_STEPS steps of SETTLE_MS, SETTLE_MAX_MS at most.
 */
#define SETTLE_MS	10
#define SETTLE_STEPS	2
#define SETTLE_MAX_MS	500

void agent_ctx_settle(void)
{
	struct timespec step = { 0, SETTLE_MS * 1000000L };
	uint64_t end = agent_now_ms() + SETTLE_MAX_MS, prev = maps_hash(), h;

	/* wall time, not steps: copying large maps takes time too */
	for (int same = 0; same < SETTLE_STEPS && agent_now_ms() < end;) {
		nanosleep(&step, NULL);
		h = maps_hash();
		same = h == prev ? same + 1 : 0;
		prev = h;
	}
}

int agent_ctx_snapshot(uint64_t seq, bool final)
{
	struct agent_seg_hdr *h;
	uint32_t n = 0, j = 0, nhost;
	CUstreamCaptureMode mode;
	size_t off;
	CUcontext old;
	int ret = 0;

	pthread_mutex_lock(&agent_ctx_lock);
	/* no CUDA here (a shell wrapper): no region taken from the others */
	if ((!ctxs && !agent_host_nimages()) || !agent_seg_claim()) {
		pthread_mutex_unlock(&agent_ctx_lock);
		return -EBUSY;
	}
	h = (struct agent_seg_hdr *)agent.seg;
	for (struct agent_actx *a = ctxs; a; a = a->next)
		for (int i = 0; !a->failed && i < agent.cfg.nmaps; i++)
			n += a->descs[i].kind != DEVRT_K_NONE;
	nhost = agent_host_nimages();
	n += nhost;
	off = (sizeof(*h) + (size_t)n * sizeof(h->images[0]) + 7) & ~7ul;
	if (off > agent.seg_len) {
		pthread_mutex_unlock(&agent_ctx_lock);
		agent_report_once("the map segment is too small");
		return -ENOSPC;
	}
	/*
	 * Being written: the tracer may be copying the last snapshot (a
	 * DONE it has not read yet, before this final one): seq 0 until
	 * the end tells it the copy is torn (agentctl.c's seg_copy).
	 */
	__atomic_store_n(&h->seq, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	mode = relax_for_copies();
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		bool live = !a->dead, first = true;

		if (a->failed || (live &&
				  agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS))
			continue;
		for (int i = 0; i < agent.cfg.nmaps && j < n; i++) {
			struct devrt_map_desc u;
			size_t bytes;

			if (a->descs[i].kind == DEVRT_K_NONE)
				continue;
			image_desc(a, i, &u);
			bytes = devrt_map_bytes(&u);
			if (off + bytes > agent.seg_len) {
				agent_report_once("the map segment is full: "
						  "some maps are missing");
				ret = -ENOSPC;
				break;
			}
			if (copy_map(a, i, agent.seg + off, &u) < 0) {
				ret = -EIO;
				continue;
			}
			h->images[j] = (struct agent_seg_map){
				.map = (uint32_t)i, .gpu = (uint32_t)a->gpu,
				.offset = off, .bytes = bytes,
				.drops = first ? a->drops : 0, .desc = u,
			};
			first = false;
			j++;
			off = (off + bytes + 7) & ~7ul;
		}
		if (live) {
			if (agent_drv.stream_sync(a->stream) != CUDA_SUCCESS)
				ret = -EIO;
			agent_drv.ctx_pop(&old);
		}
	}
	agent_capture_restore(mode);
	/* host clauses' maps (agent_host.c), each thread's */
	if (nhost && agent_host_write(h, &j, n, &off))
		agent_report_once("the map segment is full: some maps are "
				  "missing");
	h->magic = AGENT_SEG_MAGIC;
	h->nimages = j;
	h->pad = 0;
	__atomic_store_n(&h->seq, seq, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&agent_ctx_lock);
	if (ret == -EIO)
		agent_report_once("copying device maps failed%s",
				  final ? " at exit" : "");
	return ret == -EIO ? ret : 0;
}

struct print_arg {
	int map, gpu;
	const struct devrt_map_desc *d;
};

static int print_entry(const void *key, const uint64_t *val, void *arg)
{
	const struct print_arg *p = arg;
	char line[1024];
	int n = snprintf(line, sizeof(line), "map %d [gpu %d]", p->map,
			 p->gpu);

	if (key) {
		n += snprintf(line + n, sizeof(line) - (size_t)n, " key ");
		for (uint32_t i = 0; i < p->d->key_size && (size_t)n <
		     sizeof(line) - 64; i++)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      "%02x", ((const uint8_t *)key)[i]);
	}
	n += snprintf(line + n, sizeof(line) - (size_t)n, ":");
	for (uint32_t i = 0; i < p->d->nwords && (size_t)n <
	     sizeof(line) - 32; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %" PRIu64,
			      val[i]);
	agent_report("%s", line);
	return 0;
}

void agent_ctx_print_maps(void)
{
	CUcontext old;

	pthread_mutex_lock(&agent_ctx_lock);
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		bool live = !a->dead;

		if (a->failed || (live &&
				  agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS))
			continue;
		for (int i = 0; i < agent.cfg.nmaps; i++) {
			struct devrt_map_desc u;
			struct print_arg p = { i, a->gpu, &u };
			void *img;

			if (a->descs[i].kind == DEVRT_K_NONE)
				continue;
			image_desc(a, i, &u);
			img = malloc(devrt_map_bytes(&u));
			if (!img)
				continue;
			if (copy_map(a, i, img, &u) == 0 &&
			    (!live || agent_drv.stream_sync(a->stream) ==
			     CUDA_SUCCESS) &&
			    devrt_map_foreach(&u, img, print_entry, &p) == 0)
				agent_report("map %d [gpu %d]: empty", i,
					     a->gpu);
			free(img);
		}
		if (live)
			agent_drv.ctx_pop(&old);
	}
	pthread_mutex_unlock(&agent_ctx_lock);
}

/* Under agent_ctx_lock: keep A's maps and printf before it goes. */
static void retire(struct agent_actx *a)
{
	struct batch b = { 0 };
	size_t n = maps_bytes(a);
	CUcontext old;

	if (a->dead || a->failed ||
	    agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS)
		return;
	agent_drv.ctx_sync();	/* it is being destroyed: nothing waits */
	if (rings_ok()) {
		b.cap = agent.cfg.ring_bytes + 64 > 65536 ?
			agent.cfg.ring_bytes + 64 : 65536;
		b.buf = malloc(b.cap);
		if (b.buf) {
			drain_one(a, &b);
			flush(&b);
			free(b.buf);
		}
	}
	a->saved = malloc(n);
	if (a->saved &&
	    (agent_drv.dtoh_async(a->saved, a->base, n, a->stream) !=
	     CUDA_SUCCESS ||
	     agent_drv.stream_sync(a->stream) != CUDA_SUCCESS)) {
		free(a->saved);
		a->saved = NULL;
	}
	agent_drv.ctx_pop(&old);
	a->dead = true;
	agent_debug("gpu %d: context destroyed, its maps saved", a->gpu);
}

void agent_ctx_retire(CUcontext ctx)
{
	agent_prefetch_forget_ctx(ctx);
	pthread_mutex_lock(&agent_ctx_lock);
	for (struct agent_actx *a = ctxs; a; a = a->next)
		if (a->ctx == ctx && !a->dead)
			retire(a);
	pthread_mutex_unlock(&agent_ctx_lock);
	agent_kernel_forget_ctx(ctx);
}

void agent_ctx_retire_device(CUdevice dev)
{
	CUcontext pc = NULL;

	/* the primary context's handle: retain + release leaves it as is */
	if (!agent_drv.primary_retain || !agent_drv.primary_release ||
	    agent_drv.primary_retain(&pc, dev) != CUDA_SUCCESS)
		return;
	agent_drv.primary_release(dev);
	agent_ctx_retire(pc);
}

void agent_ctx_stop_all(void)
{
	static const uint32_t one = 1;
	CUcontext old;

	pthread_mutex_lock(&agent_ctx_lock);
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		if (a->dead || a->failed ||
		    agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS)
			continue;
		agent_drv.htod_async(a->d_ctx + DEVRT_CTX_STOP, &one,
				     sizeof(one), a->stream);
		agent_drv.stream_sync(a->stream);
		agent_drv.ctx_pop(&old);
	}
	pthread_mutex_unlock(&agent_ctx_lock);
}
/*
 * A new attach (-p): the previous session's device state goes.  Its
 * launches ended long ago in practice (their stop flag was set at the
 * detach, cuMemFree waits for the device, and a launch prepared across
 * the detach runs the original: agent_launch); its host records stay
 * allocated, a thread that raced the detach may still hold one.  The
 * injector's thread is not inside the driver here (runtime/inject_safe.c).
 */
void agent_ctx_reset(void)
{
	CUcontext old;

	pthread_mutex_lock(&agent_ctx_lock);
	for (struct agent_actx *a = ctxs; a; a = a->next) {
		if (a->dead || a->failed || !agent_drv.mem_free ||
		    agent_drv.ctx_push(a->ctx) != CUDA_SUCCESS)
			continue;
		agent_drv.mem_free(a->base);
		agent_drv.ctx_pop(&old);
	}
	ctxs = NULL;
	pthread_mutex_unlock(&agent_ctx_lock);
}
/* fork(): the contexts are the parent's; nothing to free through a
 * driver that is not ours. */
void agent_ctx_forked(void)
{
	pthread_mutex_init(&agent_ctx_lock, NULL);
	ctxs = NULL;
}

#endif /* GT_AGENT_SO */
