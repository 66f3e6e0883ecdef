// SPDX-License-Identifier: MIT
/*
 * The tracer's side of the agent: the config file (round trip, garbage
 * and truncations refused), a fake agent in a thread that speaks the
 * protocol and writes hand-made map images into the segment (merged into
 * out_maps and checked value by value, clear() included), and the
 * dry-run splice of a binary that nvcc builds here (SKIP without nvcc),
 * whose modules ptxas must accept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpucode/ptx.h"
#include "probes/provider.h"
#include "runtime/agentctl.h"
#include "runtime/dryrun.h"
#include "runtime/maps.h"
#include "tests/unit/unit.h"

static char tmpdir[64];

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 &&
	    !fseek(f, 0, SEEK_SET) && (p = malloc(n + 1))) {
		if (fread(p, 1, n, f) != (size_t)n) {
			free(p);
			p = NULL;
		} else {
			p[n] = 0;
			if (len)
				*len = n;
		}
	}
	fclose(f);
	return p;
}

static int spit(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(p, 1, n, f) == n;

	if (f)
		ok &= !fclose(f);
	return ok;
}

/* -------------------------------------------------- the test program -- */

/* What sema would make of a program using maps 0..9 (see test_merge). */
static struct type t_i64 = { .kind = T_INT, .is_signed = true, .size = 8 };
static struct type t_u64 = { .kind = T_INT, .size = 8 };
static struct type t_str = { .kind = T_STR, .size = 64 };
static struct type *ke_i[] = { &t_i64 }, *ke_s[] = { &t_str };
static struct type *pe[] = { &t_i64 };
static int k_off[] = { 0 };
static struct type t_key_i = { .kind = T_TUPLE, .nelems = 1, .elems = ke_i,
			       .offsets = k_off, .size = 8 };
static struct type t_key_s = { .kind = T_TUPLE, .nelems = 1, .elems = ke_s,
			       .offsets = k_off, .size = 64 };
static struct type t_pargs = { .kind = T_TUPLE, .nelems = 1, .elems = pe,
			       .offsets = k_off, .size = 8 };
static struct type a_count = { .kind = T_AGG, .agg = AGG_COUNT, .size = 8 };
static struct type a_hist = { .kind = T_AGG, .agg = AGG_HIST, .size = 8 };
static struct type a_lhist = { .kind = T_AGG, .agg = AGG_LHIST, .size = 8 };
static struct type a_smload = { .kind = T_AGG, .agg = AGG_SMLOAD, .size = 8 };
static struct type a_max = { .kind = T_AGG, .agg = AGG_MAX, .is_signed = true,
			     .size = 8 };
static struct type a_avg = { .kind = T_AGG, .agg = AGG_AVG, .size = 8 };

enum { M_C, M_K, M_H, M_S, M_X, M_P, M_N, M_V, M_A, M_L, NMAPS };

static struct map_sym syms[NMAPS] = {
	[M_C] = { .name = "@c", .val = &a_count, .host = true, .device = true },
	[M_K] = { .name = "@k", .key = &t_key_i, .val = &a_count, .device = true },
	[M_H] = { .name = "@h", .val = &a_hist, .host = true, .device = true },
	[M_S] = { .name = "@s", .val = &a_smload, .device = true },
	[M_X] = { .name = "@x", .val = &a_max, .host = true, .device = true },
	[M_P] = { .name = "@p", .val = &t_u64, .host = true },
	[M_N] = { .name = "@n", .key = &t_key_s, .val = &a_count, .device = true },
	[M_V] = { .name = "@v", .key = &t_key_i, .val = &t_i64, .device = true },
	[M_A] = { .name = "@a", .val = &a_avg, .device = true },
	[M_L] = { .name = "@l", .val = &a_lhist, .lmin = 0, .lmax = 100,
		  .lstep = 10, .device = true },
};

static struct event_desc events[] = {
	{ .kind = EV_PRINTF, .fmt = "v=%d\n", .args = &t_pargs },
	{ .kind = EV_TIME },
};

static struct unit unit = { .events = events, .nevents = 2 };

static struct probe probes[2] = {
	{ .name = "gpu:kernel:vadd", .func = "vadd" },
	{ .name = "gpu:warp:ns::scale*:exit", .func = "ns::scale*",
	  .warp = true, .retprobe = true },
};

/* each probe function, and the module-scope text they make */
#define TEST_PROBE0 \
	".func __gt_probe_0(.param .b64 c, .param .b64 t, .param .b64 a)\n" \
	"{\n" \
	"\t.reg .b64 %q<3>;\n" \
	"\tld.param.b64 %q0, [c];\n" \
	"\tld.param.b64 %q2, [a];\n" \
	"\tcvta.to.global.u64 %q0, %q0;\n" \
	"\tatom.global.add.u64 %q1, [%q0], %q2;\n" \
	"\tret;\n" \
	"}\n"
#define TEST_PROBE1 \
	".func __gt_probe_1(.param .b64 c, .param .b64 t)\n" \
	"{\n" \
	"\t.reg .b64 %q<3>;\n" \
	"\tld.param.b64 %q0, [c];\n" \
	"\tld.param.b64 %q1, [t];\n" \
	"\tmov.u64 %q2, %globaltimer;\n" \
	"\tsub.u64 %q2, %q2, %q1;\n" \
	"\tcvta.to.global.u64 %q0, %q0;\n" \
	"\tatom.global.add.u64 %q1, [%q0+8], %q2;\n" \
	"\tret;\n" \
	"}\n"

static const char test_decls[] = "// test probes\n" TEST_PROBE0 TEST_PROBE1;

static struct device_probe dprobes[2] = {
	{ .probe = &probes[0], .func = { .index = 0, .nargs = 1,
					  .text = TEST_PROBE0 },
	  .call = "call __gt_probe_0, (%gt_ctx, %gt_t0, %gt_arg0);\n" },
	{ .probe = &probes[1], .func = { .index = 1, .text = TEST_PROBE1 },
	  .call = "call __gt_probe_1, (%gt_ctx, %gt_t0);\n" },
};

static struct device_set dset = { .v = dprobes, .n = 2,
				  .decls = (char *)test_decls };

static void setup_unit(void)
{
	for (int i = 0; i < NMAPS; i++) {
		syms[i].index = i;
		syms[i].next = i + 1 < NMAPS ? &syms[i + 1] : NULL;
	}
	unit.maps = syms;
	unit.nmaps = NMAPS;
}

/* -------------------------------------------------------- the config -- */

static bool same_config(const struct agent_config *a,
			const struct agent_config *b)
{
	if (a->nmaps != b->nmaps || a->nclauses != b->nclauses ||
	    a->ptx_major != b->ptx_major || a->ptx_minor != b->ptx_minor ||
	    a->nrings != b->nrings || a->ring_bytes != b->ring_bytes ||
	    a->verbose != b->verbose || strcmp(a->decls, b->decls))
		return false;
	if (a->nmaps && memcmp(a->maps, b->maps, a->nmaps * sizeof(*a->maps)))
		return false;
	if (a->nsamples != b->nsamples || a->sample_period != b->sample_period)
		return false;
	for (int i = 0; i < a->nsamples; i++)
		if (strcmp(a->samples[i], b->samples[i]))
			return false;
	for (int i = 0; i < a->nclauses; i++) {
		const struct agent_clause *x = &a->clauses[i], *y = &b->clauses[i];

		if (x->id != y->id || x->warp != y->warp || x->exit != y->exit ||
		    x->mem != y->mem ||
		    strcmp(x->glob, y->glob) || strcmp(x->call, y->call))
			return false;
	}
	return true;
}

static uint32_t rng = 12345;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 1103515245 + 12345;
	return (rng >> 8) % n;
}

static void test_config(void)
{
	static const char *const sglobs[] = { "vadd", "ns::*" };
	struct agentctl_opts o = { .verbose = true, .samples = sglobs,
				   .nsamples = 2, .sample_period = 19 };
	struct agent_config c, r;
	char path[128];
	size_t len;
	char *text, *buf;
	int accepted = 0, ok;

	snprintf(path, sizeof(path), "%s/cfg", tmpdir);
	CHECK(!agentctl_build(&unit, &dset, &o, &c), "config/build");
	CHECK(c.nmaps == NMAPS && c.nclauses == 2, "config/build counts");
	CHECK(c.maps[M_C].kind == DEVRT_K_COUNT && c.maps[M_C].nshards == 1024 &&
	      c.maps[M_C].capacity == 1 && !c.maps[M_C].key_size,
	      "config/unkeyed count: 1024 shards, 1 slot");
	CHECK(c.maps[M_K].kind == DEVRT_K_COUNT && c.maps[M_K].key_size == 8 &&
	      c.maps[M_K].capacity == 4096, "config/keyed count");
	CHECK(c.maps[M_P].kind == DEVRT_K_NONE, "config/host-only map: NONE");
	CHECK(c.maps[M_V].kind == DEVRT_K_PLAIN && c.maps[M_V].nshards == 1 &&
	      c.maps[M_V].value_size == 8 &&
	      (c.maps[M_V].flags & DEVRT_F_SIGNED), "config/plain map");
	CHECK(c.maps[M_X].kind == DEVRT_K_MAX &&
	      (c.maps[M_X].flags & DEVRT_F_SIGNED), "config/signed max");
	CHECK(c.maps[M_S].kind == DEVRT_K_SMLOAD && !c.maps[M_S].nwords &&
	      c.maps[M_S].nshards == DEVRT_SMLOAD_SHARDS,
	      "config/smload: agent sets SMs, a line per SM");
	CHECK(c.maps[M_L].kind == DEVRT_K_LHIST && c.maps[M_L].lmax == 100 &&
	      c.maps[M_L].lstep == 10, "config/lhist bounds");
	CHECK(c.maps[M_N].nshards * (uint64_t)c.maps[M_N].capacity *
	      (16 + 64 + 8) <= (16u << 20) + 128u * 32,
	      "config/string-keyed map fits the budget");
	CHECK(c.clauses[1].warp && c.clauses[1].exit && c.clauses[1].id == 1 &&
	      !strcmp(c.clauses[1].glob, "ns::scale*") &&
	      !c.clauses[0].warp && !c.clauses[0].exit, "config/clauses");
	CHECK(c.nsamples == 2 && c.sample_period == 19 &&
	      !strcmp(c.samples[1], "ns::*"), "config/gpu:sample GLOBs, period");
	CHECK(c.ptx_major == PL_PTX_MIN_MAJOR && c.nrings == 16 &&
	      c.ring_bytes == 256u << 10, "config/defaults");
	/* awkward contents survive */
	c.maps[M_L].lmin = -50;
	free(c.clauses[0].glob);
	c.clauses[0].glob = strdup("blob glob 3\n\nend\n");
	/* a gpu:mem clause's classes travel in the warp field's high bits */
	c.clauses[1].mem = PTX_MEM_SHARED | PTX_MEM_STORE;
	CHECK(!agent_config_write(&c, path), "config/write");
	ok = !agent_config_read(path, &r);
	CHECK(ok && same_config(&c, &r), "config/round trip");
	if (ok)
		agent_config_free(&r);
	text = slurp(path, &len);
	CHECK(text != NULL, "config/readable");
	if (!text) {
		agent_config_free(&c);
		return;
	}
	/* every strict prefix is refused */
	ok = 1;
	for (size_t n = 0; n < len; n++) {
		spit(path, text, n);
		if (!agent_config_read(path, &r)) {
			agent_config_free(&r);
			ok = 0;
		}
	}
	CHECK(ok, "config/every truncation refused");
	/* a newer version, a count too big, a blob past the end */
	{
		static const char *const bad[] = {
			"gputrace-agent-config 4\n",
			"gputrace-agent-config 3\nverbose 0\nptx 6 3\nrings 16 262144\n"
			"maps 99999999\n",
			"gputrace-agent-config 3\nverbose 0\nptx 6 3\nrings 16 262144\n"
			"maps 0\nclauses 1\nclause 0 1 0\nblob glob 999\nabc\n",
			"gputrace-agent-config 3\nverbose 0\nptx 6 3\nrings 16 1000\n",
			"gputrace-agent-config 3\nverbose 0\nptx 6 3\nrings 16 262144\n"
			"maps 1\nmap 99 0 0 0 1 1 0 0 0 0\n",
			"gputrace-agent-config 3\nverbose  0\n",
			"gputrace-agent-config 3\nverbose -0\n",
		};

		ok = 1;
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			spit(path, bad[i], strlen(bad[i]));
			if (!agent_config_read(path, &r)) {
				agent_config_free(&r);
				ok = 0;
			}
		}
		CHECK(ok, "config/bad headers refused");
	}
	/* random damage: errors or a valid config, never a crash (ASan) */
	buf = malloc(len + 1);
	for (int run = 0; run < 2000 && buf; run++) {
		memcpy(buf, text, len);
		for (int k = 0; k <= (int)rnd(3); k++)
			buf[rnd(len)] = "0123456789 \n-x\0"[rnd(15)];
		spit(path, buf, len);
		if (!agent_config_read(path, &r)) {
			accepted++;
			agent_config_free(&r);
		}
	}
	printf("# config fuzz: %d of 2000 damaged files still parse\n", accepted);
	for (int run = 0; run < 200 && buf; run++) {
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)rnd(256);
		spit(path, buf, len);
		if (!agent_config_read(path, &r)) {
			agent_config_free(&r);
			accepted = -1;
		}
	}
	CHECK(accepted >= 0, "config/random bytes refused");
	free(buf);
	free(text);
	CHECK(agent_config_read("/nonexistent/x", &r) == -ENOENT,
	      "config/missing file");
	unlink(path);
	agent_config_free(&c);
}

/*
 * Maps kept per kernel (keyed by `kernel` alone, a 64-byte name): 1024
 * shards halved until they fit 48 MiB, so a count (1024 slots of 88
 * bytes in each shard) gets 512 and a hist (35 words a slot) 128; maps
 * without key fit 16 MiB.
 */
static void test_kernel_maps(void)
{
	struct agentctl_opts o = { 0 };
	struct map_sym c = syms[M_C], h = syms[M_H];
	struct agent_config cfg;
	bool ok;

	syms[M_C].key = syms[M_H].key = &t_key_s;
	syms[M_C].per_kernel = syms[M_H].per_kernel = true;
	ok = !agentctl_build(&unit, &dset, &o, &cfg);
	CHECK(ok, "kernel maps/build");
	if (ok) {
		const struct devrt_map_desc *dc = &cfg.maps[M_C];
		const struct devrt_map_desc *dh = &cfg.maps[M_H];

		CHECK(dc->nshards == 512 && dc->capacity == 1024 &&
		      (dc->flags & DEVRT_F_KERNEL),
		      "kernel maps/count: halved to 512 shards of 1024 kernel slots");
		CHECK(dh->nshards == 128 && dh->capacity == 1024,
		      "kernel maps/hist: halved to 128 shards (48 MiB)");
		CHECK(cfg.maps[M_A].nshards == 1024,
		      "kernel maps/avg without key: 1024 shards");
		agent_config_free(&cfg);
	}
	syms[M_C] = c;
	syms[M_H] = h;
}

/* ------------------------------------------------------ a fake agent -- */

struct fake {
	const char *sock, *cfg_path;
	int seg_fd;
	bool passive;		/* no CUDA in this process: writes nothing */
	bool second;		/* a process of its own GPU: region 1, @c only */
	int snapshots;
	int hello;
	int ok;			/* everything it expected came */
	int acked;		/* its BYE naming a region was acknowledged */
};

static void send_msg(int fd, uint32_t type, uint64_t seq, const void *p,
		     uint32_t len)
{
	uint8_t buf[4096];
	struct agent_msg m = { .type = type, .len = len, .seq = seq };

	memcpy(buf, &m, sizeof(m));
	if (len)
		memcpy(buf + sizeof(m), p, len);
	send(fd, buf, sizeof(m) + len, MSG_NOSIGNAL);
}

struct segw {
	uint8_t *seg;
	uint64_t off;
	uint32_t n;
	const struct agent_config *c;
};

/* A new image of map MAP (the config's descriptor, completed). */
static uint8_t *img(struct segw *w, uint32_t map, uint32_t gpu,
		    uint32_t sms, uint64_t drops, struct devrt_map_desc *d)
{
	struct agent_seg_hdr *h = (void *)w->seg;
	struct agent_seg_map *im = &h->images[w->n++];
	uint8_t *p;

	*d = w->c->maps[map];
	if (d->kind == DEVRT_K_SMLOAD)
		d->nwords = sms;
	if (devrt_map_layout(d))
		return NULL;
	p = w->seg + w->off;
	devrt_map_init(d, p);
	im->map = map;
	im->gpu = gpu;
	im->offset = w->off;
	im->bytes = devrt_map_bytes(d);
	im->drops = drops;
	im->desc = *d;
	w->off += (im->bytes + 4095) & ~4095ull;
	return p;
}

static void slot(const struct devrt_map_desc *d, uint8_t *image,
		 uint32_t shard, uint32_t i, const void *key,
		 const uint64_t *w, int nw)
{
	uint8_t *p = image + shard * d->shard_bytes + DEVRT_LINE +
		     (uint64_t)i * d->slot_bytes;
	uint64_t st = d->key_size ? (0x1234 + i) | DEVRT_SLOT_FULL : 0, live = 1;

	/* the lowering's inline count/hist/smload leave live at 0 */
	if (!d->key_size && (d->kind == DEVRT_K_COUNT ||
			     d->kind == DEVRT_K_HIST || d->kind == DEVRT_K_SMLOAD))
		live = 0;

	memcpy(p, &st, 8);
	memcpy(p + 8, &live, 8);
	if (d->key_size && key)
		memcpy(p + 16, key, d->key_size);
	memcpy(p + 16 + devrt_key_bytes(d), w, nw * 8);
}

static void write_snapshot(const struct agent_config *c, uint8_t *seg,
			   int phase, uint64_t seq)
{
	struct segw w = { .seg = seg, .off = 65536, .c = c };
	struct agent_seg_hdr *h = (void *)seg;
	struct devrt_map_desc d;
	uint64_t key;
	uint8_t *p;
	char skey[64] = "vadd";

	h->magic = AGENT_SEG_MAGIC;
	/* @c: 3 + 4 (100 + 4 at the end); printf drops ride on map 0 */
	p = img(&w, M_C, 0, 0, 7, &d);
	slot(&d, p, 0, 0, NULL, (uint64_t[]){ phase == 3 ? 100 : 3 }, 1);
	slot(&d, p, 7, 0, NULL, (uint64_t[]){ 4 }, 1);
	/* @k[1]: 2 + 3 (3 + 3 in phase 2); @k[2]: 10; 2 updates dropped */
	p = img(&w, M_K, 0, 0, 0, &d);
	key = 1;
	slot(&d, p, 0, 5, &key, (uint64_t[]){ phase >= 2 ? 3 : 2 }, 1);
	slot(&d, p, 1, 9, &key, (uint64_t[]){ 3 }, 1);
	key = 2;
	slot(&d, p, 2, 0, &key, (uint64_t[]){ 10 }, 1);
	memcpy(p + 3 * d.shard_bytes, (uint64_t[]){ 2 }, 8);
	/* @h: bucket 3: 2 + 1, bucket 5: 7; the sum word after the
	 * buckets: 4 + 6 in shard 0, 5 + 7 * 20 in shard 1 */
	p = img(&w, M_H, 0, 0, 0, &d);
	{
		uint64_t b0[35] = { [3] = 2, [34] = 10 },
			 b1[35] = { [3] = 1, [5] = 7, [34] = 145 };

		slot(&d, p, 0, 0, NULL, b0, 35);
		slot(&d, p, 1, 0, NULL, b1, 35);
	}
	/* @s on two GPUs of 4 and 6 SMs */
	p = img(&w, M_S, 0, 4, 0, &d);
	slot(&d, p, 0, 0, NULL, (uint64_t[]){ 1, 2, 3, 4 }, 4);
	p = img(&w, M_S, 1, 6, 0, &d);
	slot(&d, p, 0, 0, NULL, (uint64_t[]){ 10, 0, 0, 0, 0, 6 }, 6);
	/* @x: max(-5, -3), a shard never set holds 100 */
	p = img(&w, M_X, 0, 0, 0, &d);
	slot(&d, p, 0, 0, NULL, (uint64_t[]){ (uint64_t)-5, 1 }, 2);
	slot(&d, p, 1, 0, NULL, (uint64_t[]){ (uint64_t)-3, 1 }, 2);
	slot(&d, p, 2, 0, NULL, (uint64_t[]){ 100, 0 }, 2);
	/* @n["vadd"]: 4 */
	p = img(&w, M_N, 0, 0, 0, &d);
	slot(&d, p, 4, 3, skey, &(uint64_t){ 4 }, 1);
	/* @v[3] = 42, @v[4] = 9 */
	p = img(&w, M_V, 0, 0, 0, &d);
	key = 3;
	slot(&d, p, 0, 1, &key, &(uint64_t){ 42 }, 1);
	key = 4;
	slot(&d, p, 0, 2, &key, &(uint64_t){ 9 }, 1);
	/* @a: (2, 10) + (1, 5) */
	p = img(&w, M_A, 0, 0, 0, &d);
	slot(&d, p, 0, 0, NULL, (uint64_t[]){ 2, 10 }, 2);
	slot(&d, p, 9, 0, NULL, (uint64_t[]){ 1, 5 }, 2);
	/* @l: below min 1, at/above max 2 */
	p = img(&w, M_L, 0, 0, 0, &d);
	{
		/* -3; 100, 250: the sum, word 12 */
		uint64_t b[13] = { [0] = 1, [11] = 2, [12] = 347 };

		slot(&d, p, 0, 0, NULL, b, 13);
	}
	h->nimages = w.n;
	h->seq = seq;
}

/* The second process: @c = 1000 on its GPU (1), in its region. */
static void write_second(const struct agent_config *c, uint8_t *seg,
			 uint64_t seq)
{
	struct segw w = { .seg = seg, .off = 65536, .c = c };
	struct agent_seg_hdr *h = (void *)seg;
	struct devrt_map_desc d;
	uint8_t *p = img(&w, M_C, 1, 0, 0, &d);

	h->magic = AGENT_SEG_MAGIC;
	slot(&d, p, 5, 0, NULL, (uint64_t[]){ 1000 }, 1);
	h->nimages = w.n;
	h->seq = seq;
}

static void *fake_agent(void *arg)
{
	struct fake *f = arg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct agent_config c;
	uint8_t buf[256], *seg;
	uint32_t pid = 4242, region = f->second ? 1 : 0;
	int fd, phase = 0;

	if (agent_config_read(f->cfg_path, &c))
		return NULL;
	seg = mmap(NULL, AGENT_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		   f->seg_fd, f->second ? AGENT_SEG_BYTES : 0);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	strcpy(sa.sun_path, f->sock);
	if (seg == MAP_FAILED || fd < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		agent_config_free(&c);
		return NULL;
	}
	send_msg(fd, AGENT_MSG_HELLO, 0, &pid, 4);
	if (!f->passive)
		send_msg(fd, AGENT_MSG_CUDA, 0, NULL, 0);
	if (f->passive || f->second)
		goto serve;
	for (int i = 0; i < 2; i++)
		send_msg(fd, AGENT_MSG_REPORT, 0,
			 "skipped k1: no PTX (SASS only: sm_80)", 37);
	send_msg(fd, AGENT_MSG_REPORT, 0, "instrumented vadd", 17);
	{
		/* good, a time() id, an id out of range, too short */
		uint8_t r[4 * 16] = { 0 };
		uint32_t hdr[2];
		int64_t v = -77;

		hdr[0] = 0, hdr[1] = 8;
		memcpy(r, hdr, 8);
		memcpy(r + 8, &v, 8);
		hdr[0] = 1;
		memcpy(r + 16, hdr, 8);
		hdr[0] = 9;
		memcpy(r + 32, hdr, 8);
		hdr[0] = 0, hdr[1] = 4;
		memcpy(r + 48, hdr, 8);
		send_msg(fd, AGENT_MSG_PRINTF, 0, r, sizeof(r));
	}
serve:
	__atomic_store_n(&f->hello, 1, __ATOMIC_RELEASE);
	for (;;) {
		struct agent_msg m;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < (ssize_t)sizeof(m))
			break;
		memcpy(&m, buf, sizeof(m));
		if (m.type == AGENT_MSG_SNAPSHOT) {
			if (f->second)
				write_second(&c, seg, m.seq);
			else if (!f->passive)
				write_snapshot(&c, seg, ++phase, m.seq);
			f->snapshots++;
			/* DONE names the region written; none: nothing */
			send_msg(fd, AGENT_MSG_SNAPSHOT_DONE, m.seq, &region,
				 f->passive ? 0 : 4);
		} else if (m.type == AGENT_MSG_DETACH) {
			if (f->second)
				write_second(&c, seg, 1000);
			else if (!f->passive)
				write_snapshot(&c, seg, 3, 1000);
			send_msg(fd, AGENT_MSG_BYE, f->passive ? 0 : 1000,
				 &region, f->passive ? 0 : 4);
			/* the region is copied: BYE_ACK (none without one) */
			if (!f->passive) {
				struct timeval tv = { .tv_sec = 5 };

				setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
					   sizeof(tv));
				n = recv(fd, buf, sizeof(buf), 0);
				memcpy(&m, buf, sizeof(m));
				f->acked = n == (ssize_t)sizeof(m) &&
					   m.type == AGENT_MSG_BYE_ACK &&
					   m.seq == 1000;
			}
			__atomic_store_n(&f->ok, 1, __ATOMIC_RELEASE);
			break;
		}
	}
	close(fd);
	munmap(seg, AGENT_SEG_BYTES);
	agent_config_free(&c);
	return NULL;
}

/* --------------------------------------------------------- merging -- */

static int nprintf;
static int64_t printf_val;

static void on_printf(void *arg, uint32_t fmt, const void *args,
		      uint32_t size)
{
	nprintf++;
	memcpy(&printf_val, args, 8);
}

static struct out_entry *find(struct out_map *om, const struct out_val *k)
{
	for (size_t i = 0; i < om->n; i++) {
		struct out_val *e = &om->entries[i].key;

		if (e->type == k->type &&
		    (k->type == OV_NONE ||
		     (k->type == OV_STR ? !strcmp(e->s, k->s) : e->i == k->i)))
			return &om->entries[i];
	}
	return NULL;
}

static struct out_entry *find_i(struct out_map *om, int64_t i)
{
	struct out_val k = { .type = OV_INT, .i = i };

	return find(om, &k);
}

/* A host part: entries as maps_read() would make them. */
static void host_map(struct out_map *om, int map, enum out_agg agg)
{
	memset(om, 0, sizeof(*om));
	om->name = syms[map].name;
	om->agg = agg;
	om->lmin = syms[map].lmin;
	om->lmax = syms[map].lmax;
	om->lstep = syms[map].lstep;
}

static struct out_entry *host_entry(struct out_map *om)
{
	struct out_entry *e;

	om->entries = realloc(om->entries, (om->n + 1) * sizeof(*e));
	e = &om->entries[om->n++];
	memset(e, 0, sizeof(*e));
	return e;
}

static void check_merge(struct agentctl *ac)
{
	struct out_map om;
	struct out_entry *e;
	struct out_val none = { 0 }, vadd = { .type = OV_STR, .s = "vadd" };

	host_map(&om, M_C, OA_COUNT);
	e = host_entry(&om);
	e->val.type = OV_UINT;
	e->val.i = 5;
	CHECK(!agentctl_merge(ac, M_C, &om) && om.n == 1 &&
	      om.entries[0].val.i == 1012,
	      "merge/unkeyed count: host 5 + device 3 + 4 + 1000 (process 2)");
	maps_out_free(&om);

	host_map(&om, M_K, OA_COUNT);
	e = host_entry(&om);
	e->key.type = OV_INT, e->key.i = 2, e->val.type = OV_UINT, e->val.i = 1;
	e = host_entry(&om);
	e->key.type = OV_INT, e->key.i = 9, e->val.type = OV_UINT, e->val.i = 4;
	CHECK(!agentctl_merge(ac, M_K, &om) && om.n == 3, "merge/keyed count: 3 keys");
	CHECK(find_i(&om, 2) && find_i(&om, 2)->val.i == 11 &&
	      find_i(&om, 9) && find_i(&om, 9)->val.i == 4 &&
	      find_i(&om, 1) && find_i(&om, 1)->val.i == 5 &&
	      find_i(&om, 1)->val.type == OV_UINT, "merge/keyed count values");
	maps_out_free(&om);

	host_map(&om, M_H, OA_HIST);
	e = host_entry(&om);
	e->nbuckets = OUT_HIST_BUCKETS;
	e->buckets = calloc(OUT_HIST_BUCKETS, 8);
	e->buckets[3] = 10;
	e->total = 50;
	CHECK(!agentctl_merge(ac, M_H, &om) && om.n == 1 &&
	      om.entries[0].buckets[3] == 13 && om.entries[0].buckets[5] == 7 &&
	      om.entries[0].buckets[4] == 0, "merge/hist buckets");
	CHECK(om.entries[0].total == 50 + 10 + 145 &&
	      om.entries[0].nbuckets == OUT_HIST_BUCKETS,
	      "merge/hist sum: host's and both shards' sum words");
	maps_out_free(&om);

	host_map(&om, M_S, OA_SMLOAD);
	CHECK(!agentctl_merge(ac, M_S, &om) && om.n == 1 &&
	      om.entries[0].nbuckets == 6 && om.entries[0].buckets[0] == 11 &&
	      om.entries[0].buckets[3] == 4 && om.entries[0].buckets[4] == 0 &&
	      om.entries[0].buckets[5] == 6, "merge/smload over two GPUs");
	maps_out_free(&om);

	host_map(&om, M_X, OA_MAX);
	e = host_entry(&om);
	e->val.type = OV_INT, e->val.i = -4;
	CHECK(!agentctl_merge(ac, M_X, &om) && om.n == 1 &&
	      om.entries[0].val.i == -3, "merge/signed max");
	maps_out_free(&om);

	host_map(&om, M_N, OA_COUNT);
	e = host_entry(&om);
	e->key.type = OV_STR, e->key.s = strdup("vadd");
	e->val.type = OV_UINT, e->val.i = 1;
	CHECK(!agentctl_merge(ac, M_N, &om) && om.n == 1 && find(&om, &vadd) &&
	      find(&om, &vadd)->val.i == 5, "merge/string keys");
	maps_out_free(&om);

	host_map(&om, M_V, OA_NONE);
	e = host_entry(&om);
	e->key.type = OV_INT, e->key.i = 3, e->val.type = OV_INT, e->val.i = 7;
	CHECK(!agentctl_merge(ac, M_V, &om) && om.n == 2 &&
	      find_i(&om, 3)->val.i == 7 && find_i(&om, 4) &&
	      find_i(&om, 4)->val.i == 9 && find_i(&om, 4)->val.type == OV_INT,
	      "merge/plain: host kept, device key added");
	maps_out_free(&om);

	host_map(&om, M_A, OA_AVG);
	CHECK(!agentctl_merge(ac, M_A, &om) && om.n == 1 &&
	      om.entries[0].count == 3 && om.entries[0].total == 15 &&
	      find(&om, &none), "merge/avg");
	maps_out_free(&om);

	host_map(&om, M_L, OA_LHIST);
	e = host_entry(&om);
	e->nbuckets = 12;
	e->buckets = calloc(12, 8);
	e->buckets[11] = 1;
	e->total = 120;
	CHECK(!agentctl_merge(ac, M_L, &om) && om.n == 1 &&
	      om.entries[0].nbuckets == 12 && om.entries[0].buckets[0] == 1 &&
	      om.entries[0].buckets[11] == 3 && om.entries[0].total == 467,
	      "merge/lhist (buckets and sum)");
	maps_out_free(&om);

	host_map(&om, M_P, OA_NONE);
	CHECK(!agentctl_merge(ac, M_P, &om) && om.n == 0,
	      "merge/host-only map untouched");
	maps_out_free(&om);
}

/* stderr into a file, then its text back (caller frees) */
static int err_fd = -1;
static char err_path[128];

static void grab_stderr(void)
{
	int fd;

	fflush(stderr);
	snprintf(err_path, sizeof(err_path), "%s/stderr", tmpdir);
	fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	err_fd = dup(2);
	dup2(fd, 2);
	close(fd);
}

static char *release_stderr(void)
{
	fflush(stderr);
	dup2(err_fd, 2);
	close(err_fd);
	return slurp(err_path, NULL);
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_agent(void)
{
	struct agentctl_opts o = { .agent_lib = "/proc/self/exe" };
	struct agentctl_cb cb = { .on_printf = on_printf };
	struct fake f = { 0 }, f2 = { .passive = true }, f3 = { .second = true };
	struct agentctl *ac;
	const char *const *env;
	struct agent_config rc;
	struct out_map om;
	char dir[PATH_MAX], *errs;
	pthread_t th, th2, th3;
	int n;

	grab_stderr();
	n = agentctl_open(&(struct agentctl_opts){ .agent_lib = "/nonexistent" },
			  &ac);
	errs = release_stderr();
	CHECK(n == -ENOENT && !ac && strstr(errs, "cannot find libgputrace-agent.so"),
	      "agent/missing library refused");
	free(errs);
	if (agentctl_open(&o, &ac)) {
		CHECK(0, "agent/open");
		return;
	}
	env = agentctl_env(ac);
	CHECK(env[0] && !strncmp(env[0], "LD_PRELOAD=/", 12) &&
	      strstr(env[0], "test_agentctl") && env[1] && env[2] && env[3] &&
	      !env[4], "agent/env strings");
	for (int i = 1; i < 4; i++) {
		const char *eq = strchr(env[i], '=');

		if (!strncmp(env[i], AGENT_ENV_CONFIG "=", eq - env[i] + 1))
			f.cfg_path = eq + 1;
		else if (!strncmp(env[i], AGENT_ENV_SOCK "=", eq - env[i] + 1))
			f.sock = eq + 1;
		else if (!strncmp(env[i], AGENT_ENV_SEG "=", eq - env[i] + 1))
			f.seg_fd = atoi(eq + 1);
	}
	CHECK(f.cfg_path && f.sock && f.seg_fd > 2, "agent/env names");
	if (!f.cfg_path || !f.sock) {
		agentctl_free(ac);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", f.sock);
	*strrchr(dir, '/') = 0;
	CHECK(!(fcntl(f.seg_fd, F_GETFD) & FD_CLOEXEC),
	      "agent/segment inherited across exec");
	CHECK(!agentctl_configure(ac, &unit, &dset), "agent/configure");
	CHECK(!agent_config_read(f.cfg_path, &rc) && rc.nmaps == NMAPS &&
	      rc.nclauses == 2 && !strcmp(rc.decls, test_decls),
	      "agent/config file for the agent");
	agent_config_free(&rc);
	agentctl_set_cb(ac, &cb);

	f2.cfg_path = f.cfg_path;
	f2.sock = f.sock;
	f2.seg_fd = f.seg_fd;
	f3.cfg_path = f.cfg_path;
	f3.sock = f.sock;
	f3.seg_fd = f.seg_fd;
	grab_stderr();
	/* a process that never used CUDA first, then the segment's owner */
	pthread_create(&th2, NULL, fake_agent, &f2);
	for (n = 0; n < 100 && !__atomic_load_n(&f2.hello, __ATOMIC_ACQUIRE); n++)
		agentctl_poll(ac, 20);
	pthread_create(&th, NULL, fake_agent, &f);
	/* and a process on another GPU, with maps in a region of its own */
	pthread_create(&th3, NULL, fake_agent, &f3);
	for (n = 0; n < 100 && (!__atomic_load_n(&f.hello, __ATOMIC_ACQUIRE) ||
				!__atomic_load_n(&f3.hello, __ATOMIC_ACQUIRE) ||
				!nprintf); n++)
		agentctl_poll(ac, 20);
	agentctl_snapshot(ac, 5000);
	errs = release_stderr();
	CHECK(agentctl_connected(ac) && f.snapshots == 1 && f2.snapshots == 1 &&
	      f3.snapshots == 1,
	      "agent/hello, snapshot from both");
	CHECK(nprintf == 1 && printf_val == -77, "agent/printf: only the valid record");
	CHECK(count_of(errs, "gputrace: skipped k1: no PTX (SASS only: sm_80)\n") == 1,
	      "agent/report once");
	CHECK(!count_of(errs, "instrumented"), "agent/instrumented: -v only");
	CHECK(count_of(errs, "@k: 2 GPU updates lost") == 1, "agent/map drops told");
	free(errs);
	CHECK(agentctl_lost(ac) == 7 && agentctl_lost(ac) == 0, "agent/printf drops");
	check_merge(ac);

	/* clear(@k): only what changed since shows */
	agentctl_clear(ac, M_K);
	host_map(&om, M_K, OA_COUNT);
	CHECK(!agentctl_merge(ac, M_K, &om) && om.n == 0, "clear/empties");
	maps_out_free(&om);
	agentctl_snapshot(ac, 5000);
	host_map(&om, M_K, OA_COUNT);
	CHECK(!agentctl_merge(ac, M_K, &om) && om.n == 1 && find_i(&om, 1) &&
	      find_i(&om, 1)->val.i == 1, "clear/then only the change");
	maps_out_free(&om);
	agentctl_zero(ac, M_H);
	host_map(&om, M_H, OA_HIST);
	CHECK(!agentctl_merge(ac, M_H, &om) && om.n == 1 &&
	      om.entries[0].buckets[3] == 0, "zero/keeps the key at 0");
	maps_out_free(&om);

	/* detach: the final snapshot comes with BYE */
	grab_stderr();
	agentctl_detach(ac);
	/* the agents wait for BYE_ACK: the tracer reads their BYE */
	for (int i = 0; i < 1000 && !(__atomic_load_n(&f.ok, __ATOMIC_ACQUIRE) &&
				      __atomic_load_n(&f3.ok, __ATOMIC_ACQUIRE)); i++)
		agentctl_poll(ac, 10);
	pthread_join(th, NULL);
	pthread_join(th2, NULL);
	pthread_join(th3, NULL);
	agentctl_snapshot(ac, 1000);
	errs = release_stderr();
	CHECK(f.ok && f2.ok && f3.ok && f.snapshots == 2,
	      "bye/agents saw detach");
	CHECK(f.acked && f3.acked && !f2.acked, "bye/a BYE naming a region is "
	      "acknowledged once copied");
	CHECK(!count_of(errs, "went away") && !count_of(errs, "in time"),
	      "bye/no complaint");
	free(errs);
	host_map(&om, M_C, OA_COUNT);
	CHECK(!agentctl_merge(ac, M_C, &om) && om.n == 1 &&
	      om.entries[0].val.i == 1104,
	      "bye/final snapshots of both processes used");
	maps_out_free(&om);
	agentctl_free(ac);
	CHECK(access(dir, F_OK) && errno == ENOENT, "agent/files removed");
}

/* The value of agentctl_env()'s NAME=VALUE, or "". */
static const char *env_of(struct agentctl *ac, const char *name)
{
	const char *const *env = agentctl_env(ac);
	size_t n = strlen(name);

	for (int i = 1; env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return "";
}

/*
 * Processes leaving without BYE: one that launched kernels is told about
 * (its last maps stand), a shell wrapper that never did is not.
 */
static void test_went_away(void)
{
	struct agentctl_opts o = { .agent_lib = "/proc/self/exe" };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct agentctl *ac;
	char *errs;

	if (agentctl_open(&o, &ac)) {
		CHECK(0, "away/open");
		return;
	}
	agentctl_configure(ac, &unit, &dset);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
		 env_of(ac, AGENT_ENV_SOCK));
	grab_stderr();
	for (uint32_t pid = 100; pid < 102; pid++) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		send_msg(fd, AGENT_MSG_HELLO, 0, &pid, 4);
		if (pid == 101)
			send_msg(fd, AGENT_MSG_CUDA, 0, NULL, 0);
		for (int n = 0; n < 5; n++)
			agentctl_poll(ac, 20);
		close(fd);
		for (int n = 0; n < 5; n++)
			agentctl_poll(ac, 20);
	}
	errs = release_stderr();
	CHECK(count_of(errs, "process 101 went away") == 1 &&
	      !count_of(errs, "process 100"), "away/told only if it had maps");
	free(errs);
	agentctl_free(ac);
}

/*
 * The program ends just as the tracer asks for its maps (exit() in the
 * script): the agent answers (DONE), then its exit handler writes the
 * final snapshot over that one and says BYE, all before the tracer reads
 * the DONE.  The tracer must print the final maps, not none (issue 32:
 * "@n: 0" under load).  Mode 0: the final snapshot is complete when the
 * DONE is read; 1: it is still being written (seq 0) then.
 */
struct racer {
	const char *sock, *cfg_path;
	int seg_fd, mode, hello;
};

static void race_write(const struct agent_config *c, uint8_t *seg,
		       uint64_t seq, uint64_t count)
{
	struct segw w = { .seg = seg, .off = 65536, .c = c };
	struct agent_seg_hdr *h = (void *)seg;
	struct devrt_map_desc d;
	uint8_t *p = img(&w, M_C, 0, 0, 0, &d);

	h->magic = AGENT_SEG_MAGIC;
	slot(&d, p, 0, 0, NULL, (uint64_t[]){ count }, 1);
	h->nimages = w.n;
	__atomic_store_n(&h->seq, seq, __ATOMIC_RELEASE);
}

static void *race_agent(void *arg)
{
	struct racer *r = arg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct agent_config c;
	struct agent_msg m;
	uint32_t pid = 4343, region = 0;
	uint8_t *seg;
	int fd;

	if (agent_config_read(r->cfg_path, &c))
		return NULL;
	seg = mmap(NULL, AGENT_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		   r->seg_fd, 0);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", r->sock);
	if (seg != MAP_FAILED && fd >= 0 &&
	    !connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		send_msg(fd, AGENT_MSG_HELLO, 0, &pid, 4);
		send_msg(fd, AGENT_MSG_CUDA, 0, NULL, 0);
		__atomic_store_n(&r->hello, 1, __ATOMIC_RELEASE);
		if (recv(fd, &m, sizeof(m), 0) == sizeof(m) &&
		    m.type == AGENT_MSG_SNAPSHOT) {
			race_write(&c, seg, m.seq, 5);
			if (r->mode == 0)
				race_write(&c, seg, m.seq + 1, 7);
			else	/* the final one under way */
				__atomic_store_n(&((struct agent_seg_hdr *)seg)->seq,
						 0, __ATOMIC_RELEASE);
			send_msg(fd, AGENT_MSG_SNAPSHOT_DONE, m.seq, &region, 4);
			usleep(100000);
			race_write(&c, seg, m.seq + 1, 7);
			send_msg(fd, AGENT_MSG_BYE, m.seq + 1, &region, 4);
		}
	}
	if (fd >= 0)
		close(fd);
	if (seg != MAP_FAILED)
		munmap(seg, AGENT_SEG_BYTES);
	agent_config_free(&c);
	return NULL;
}

static void test_exit_race(int mode)
{
	struct agentctl_opts o = { .agent_lib = "/proc/self/exe" };
	struct racer r = { .mode = mode };
	struct agentctl *ac;
	struct out_map om;
	pthread_t th;
	char *errs;

	if (agentctl_open(&o, &ac)) {
		CHECK(0, "race/open");
		return;
	}
	agentctl_configure(ac, &unit, &dset);
	r.cfg_path = env_of(ac, AGENT_ENV_CONFIG);
	r.sock = env_of(ac, AGENT_ENV_SOCK);
	r.seg_fd = atoi(env_of(ac, AGENT_ENV_SEG));
	pthread_create(&th, NULL, race_agent, &r);
	for (int n = 0; n < 100 && !__atomic_load_n(&r.hello, __ATOMIC_ACQUIRE); n++)
		agentctl_poll(ac, 20);
	grab_stderr();
	agentctl_snapshot(ac, 5000);
	pthread_join(th, NULL);
	errs = release_stderr();
	host_map(&om, M_C, OA_COUNT);
	CHECK(!agentctl_merge(ac, M_C, &om) && om.n == 1 &&
	      om.entries[0].val.i == 7 && !count_of(errs, "in time"),
	      mode ? "race/final snapshot under way at DONE: waited for BYE" :
		     "race/final snapshot over the answer: taken from BYE");
	maps_out_free(&om);
	free(errs);
	agentctl_free(ac);
}

/*
 * Events of host clauses run in the agent: each record's size is checked
 * against its kind (runtime/hostevents.c) before the session sees it;
 * cat() and system() never come from the target; a callback that takes
 * a snapshot (print) gets the records after it in order, not nested.
 */
static struct event_desc hev[] = {
	{ .kind = EV_PRINTF, .fmt = "v=%d\n", .args = &t_pargs },
	{ .kind = EV_EXIT },
	{ .kind = EV_TIME },
	{ .kind = EV_SYSTEM, .fmt = "echo %d", .args = &t_pargs },
	{ .kind = EV_PRINT_MAP, .map = &syms[M_C] },
	{ .kind = EV_PRINT_VAL, .args = &t_pargs },
	{ .kind = EV_CAT, .fmt = "/etc/%d", .args = &t_pargs },
	{ .kind = EV_HELPER_ERR },
};

static char evlog[256];
static struct agentctl *ev_ac;

static void log_printf(void *arg, uint32_t fmt, const void *args,
		       uint32_t size)
{
	snprintf(evlog + strlen(evlog), sizeof(evlog) - strlen(evlog),
		 "p%u/%u ", fmt, size);
}

static void log_event(void *arg, uint32_t id, const void *args, uint32_t size)
{
	snprintf(evlog + strlen(evlog), sizeof(evlog) - strlen(evlog),
		 "e%u/%u ", id, size);
	if (hev[id].kind == EV_PRINT_MAP)
		agentctl_snapshot(ev_ac, 100);
}

static size_t rec(uint8_t *p, uint32_t id, uint32_t size)
{
	uint32_t hdr[2] = { id, size };

	memcpy(p, hdr, 8);
	memset(p + 8, 0x5a, size);
	return 8 + (size + 7) / 8 * 8;
}

static void test_host_events(void)
{
	struct agentctl_opts o = { .agent_lib = "/proc/self/exe" };
	struct agentctl_cb cb = { .on_printf = log_printf,
				  .on_event = log_event };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct unit hu = unit;
	uint8_t r[512];
	size_t n = 0;
	int fd;

	hu.events = hev;
	hu.nevents = sizeof(hev) / sizeof(hev[0]);
	if (agentctl_open(&o, &ev_ac)) {
		CHECK(0, "events/open");
		return;
	}
	agentctl_configure(ev_ac, &hu, &dset);
	agentctl_set_cb(ev_ac, &cb);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
		 env_of(ev_ac, AGENT_ENV_SOCK));
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		CHECK(0, "events/connect");
		if (fd >= 0)
			close(fd);
		agentctl_free(ev_ac);
		return;
	}
	n += rec(r + n, 0, 8);		/* printf: p0/8 */
	n += rec(r + n, 1, 8);		/* exit(code): e1/8 */
	n += rec(r + n, 1, 4);		/* exit, short: dropped */
	n += rec(r + n, 1, 16);		/* exit, long: dropped */
	n += rec(r + n, 2, 0);		/* time(): e2/0 */
	n += rec(r + n, 2, 8);		/* time() with bytes: dropped */
	n += rec(r + n, 3, 8);		/* system(): never from the agent */
	n += rec(r + n, 6, 8);		/* cat(): never */
	n += rec(r + n, 4, 0);		/* print(@c): e4/0, a snapshot */
	n += rec(r + n, 5, 8);		/* print(value): e5/8 */
	n += rec(r + n, 5, 0);		/* too short: dropped */
	n += rec(r + n, 7, 8);		/* -k helper error: e7/8 */
	n += rec(r + n, 9, 0);		/* no such event */
	send_msg(fd, AGENT_MSG_PRINTF, 0, r, n);
	n = rec(r, 0, 8);		/* a second message: after the first */
	send_msg(fd, AGENT_MSG_PRINTF, 0, r, n);
	for (int i = 0; i < 5; i++)
		agentctl_poll(ev_ac, 20);
	CHECK(!strcmp(evlog, "p0/8 e1/8 e2/0 e4/0 e5/8 e7/8 p0/8 "),
	      "events/sizes checked per kind, in order");
	if (strcmp(evlog, "p0/8 e1/8 e2/0 e4/0 e5/8 e7/8 p0/8 "))
		printf("# got: %s\n", evlog);
	close(fd);
	agentctl_free(ev_ac);
}

/* An agent that never comes: no device part, no error, no wait. */
static void test_no_agent(void)
{
	struct agentctl_opts o = { .agent_lib = "/proc/self/exe" };
	struct agentctl *ac;
	struct out_map om;

	if (agentctl_open(&o, &ac)) {
		CHECK(0, "none/open");
		return;
	}
	agentctl_configure(ac, &unit, &dset);
	CHECK(!agentctl_snapshot(ac, 2000) && !agentctl_connected(ac),
	      "none/snapshot succeeds");
	host_map(&om, M_C, OA_COUNT);
	CHECK(!agentctl_merge(ac, M_C, &om) && om.n == 0, "none/no device part");
	maps_out_free(&om);
	CHECK(agentctl_lost(ac) == 0, "none/no drops");
	agentctl_free(ac);
}

/* ---------------------------------------------------------- dry run -- */

static const char *find_tool(const char *name, char *buf, size_t len)
{
	const char *home = getenv("CUDA_HOME");

	snprintf(buf, len, "%s/bin/%s", home ? home : "/usr/local/cuda", name);
	if (!access(buf, X_OK))
		return buf;
	return NULL;
}

static const char kernels_cu[] =
	"extern \"C\" __global__ void vadd(float *a, const float *b, int n)\n"
	"{\n"
	"	int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"	if (i < n)\n"
	"		a[i] += b[i];\n"
	"}\n"
	"extern \"C\" __global__ void other(int *a) { a[0] = 1; }\n"
	"namespace ns {\n"
	"template <typename T> __global__ void scale(T *a, T s, int n)\n"
	"{\n"
	"	int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"	if (i >= n)\n"
	"		return;\n"
	"	a[i] *= s;\n"
	"}\n"
	"template __global__ void scale<float>(float *, float, int);\n"
	"}\n";

static const char sass_cu[] =
	"__global__ void vadd_sass(float *a) { a[0] = 2.0f; }\n";

/* Assemble each "// gputrace: ...: kernels" module of TEXT for sm_90. */
static int assemble_all(const char *text, const char *ptxas, int *nmod)
{
	const char *p = text, *tag = "// gputrace: ";
	int bad = 0;

	*nmod = 0;
	while ((p = strstr(p, tag))) {
		const char *eol = strchr(p, '\n'), *next;
		char path[160], cmd[512];

		if (!eol)
			break;
		next = strstr(eol, "\n// gputrace: ");
		if (!memmem(p, eol - p, ": kernels", 9)) {
			p = eol;
			continue;
		}
		snprintf(path, sizeof(path), "%s/mod%d.ptx", tmpdir, *nmod);
		spit(path, eol + 1, next ? (size_t)(next + 1 - eol - 1) :
			strlen(eol + 1));
		snprintf(cmd, sizeof(cmd), "%s -arch=sm_90 %s -o /dev/null",
			 ptxas, path);
		bad += system(cmd) != 0;
		(*nmod)++;
		p = next ? next + 1 : eol;
	}
	return bad;
}

static void test_dryrun(void)
{
	char nvcc_b[256], ptxas_b[256], cmd[1024], a_cu[128], a_o[128],
	     b_cu[128], b_o[128];
	const char *nvcc = find_tool("nvcc", nvcc_b, sizeof(nvcc_b));
	const char *ptxas = find_tool("ptxas", ptxas_b, sizeof(ptxas_b));
	char *text = NULL, *errs;
	size_t len;
	FILE *out;
	int r, nmod, bad;

	/* without a binary: the probe functions */
	out = open_memstream(&text, &len);
	r = dryrun_ptx(&dset, NULL, false, out);
	fclose(out);
	CHECK(!r && strstr(text, ".func __gt_probe_1") &&
	      strstr(text, "gpu:kernel:vadd calls: call __gt_probe_0"),
	      "dryrun/decls only");
	free(text);
	CHECK(dryrun_match("vadd", "vadd") &&
	      dryrun_match("ns::scale*", "_ZN2ns5scaleIfEEvPT_S1_i") &&
	      dryrun_match("_ZN2ns*", "_ZN2ns5scaleIfEEvPT_S1_i") &&
	      !dryrun_match("scale", "_ZN2ns5scaleIfEEvPT_S1_i") &&
	      !dryrun_match("vadd", "vadd_sass"), "dryrun/glob matching");

	if (!nvcc || !ptxas) {
		printf("SKIP dryrun/nvcc: no nvcc or ptxas\n");
		return;
	}
	snprintf(a_cu, sizeof(a_cu), "%s/k.cu", tmpdir);
	snprintf(a_o, sizeof(a_o), "%s/k.o", tmpdir);
	snprintf(b_cu, sizeof(b_cu), "%s/s.cu", tmpdir);
	snprintf(b_o, sizeof(b_o), "%s/s.o", tmpdir);
	spit(a_cu, kernels_cu, strlen(kernels_cu));
	spit(b_cu, sass_cu, strlen(sass_cu));
	snprintf(cmd, sizeof(cmd),
		 "%s -c -gencode arch=compute_90,code=[sm_90,compute_90] %s -o %s && "
		 "%s -c -gencode arch=compute_80,code=sm_80 %s -o %s",
		 nvcc, a_cu, a_o, nvcc, b_cu, b_o);
	if (system(cmd)) {
		CHECK(0, "dryrun/nvcc builds the test kernels");
		return;
	}
	out = open_memstream(&text, &len);
	r = dryrun_ptx(&dset, a_o, false, out);
	fclose(out);
	CHECK(!r, "dryrun/binary: kernels matched");
	CHECK(count_of(text, "\n.version ") == 2 &&
	      count_of(text, ": kernels vadd\n") == 1 &&
	      count_of(text, ": kernels _ZN2ns5scaleIfEEvPT_S1_i\n") == 1,
	      "dryrun/one module per probe set");
	/* the probe listing's "calls:" line, and the splice */
	CHECK(count_of(text, "call __gt_probe_0") == 2 &&
	      count_of(text, "call __gt_probe_1") >= 1 &&
	      count_of(text, ".entry other") == 0,
	      "dryrun/entry and exit calls, unmatched kernels dropped");
	bad = assemble_all(text, ptxas, &nmod);
	CHECK(nmod == 2 && !bad, "dryrun/ptxas -arch=sm_90 accepts every module");
	free(text);

	grab_stderr();
	out = open_memstream(&text, &len);
	r = dryrun_ptx(&dset, b_o, false, out);
	fclose(out);
	free(release_stderr());
	CHECK(r == -ENOENT && !strstr(text, "no usable PTX"),
	      "dryrun/'vadd' does not match vadd_sass");
	free(text);
	{
		struct probe p = { .name = "gpu:kernel:vadd*", .func = "vadd*" };
		struct device_probe dp = { .probe = &p, .call = dprobes[0].call };
		struct device_set ds = { .v = &dp, .n = 1, .decls = dset.decls };

		out = open_memstream(&text, &len);
		r = dryrun_ptx(&ds, b_o, false, out);
		fclose(out);
		CHECK(!r && strstr(text, "// gputrace: _Z9vadd_sassPf: no usable PTX (SASS only: sm_80)\n"),
		      "dryrun/sass-only kernel told");
		free(text);
	}
	{
		struct probe p = { .name = "gpu:kernel:nothere", .func = "nothere" };
		struct device_probe dp = { .probe = &p, .call = dprobes[0].call };
		struct device_set ds = { .v = &dp, .n = 1, .decls = dset.decls };

		grab_stderr();
		out = open_memstream(&text, &len);
		r = dryrun_ptx(&ds, a_o, false, out);
		fclose(out);
		errs = release_stderr();
		CHECK(r == -ENOENT && !len && strstr(errs, "no kernel of ") &&
		      strstr(errs, " matches nothere\n"), "dryrun/no match told");
		free(errs);
		free(text);
	}
}

int main(void)
{
	char cmd[128];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_agentctl.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	setup_unit();
	test_config();
	test_kernel_maps();
	test_agent();
	test_went_away();
	test_exit_race(0);
	test_exit_race(1);
	test_host_events();
	test_no_agent();
	test_dryrun();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		printf("# could not remove %s\n", tmpdir);
	UNIT_END();
}
