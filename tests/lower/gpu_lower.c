// SPDX-License-Identifier: MIT
/*
 * gpu_lower: run lowered probes and the device runtime on a real GPU and
 * check what they compute.  The programs of lower_progs.h are verified,
 * lowered and put in one module with a kernel per probe (lp_module), which
 * the driver JITs; the context, maps and rings are set up as the agent
 * will (gpucode/devrt.h) and read back with the host helpers.
 *
 *   alu, jmp   every thread's printf record equals what a host eBPF
 *              interpreter computes for that thread (several inputs,
 *              division by zero included)
 *   builtins   special registers, context fields and arguments
 *   aggs       every aggregation against totals computed here (hist
 *              and lhist: the sum word after the buckets too)
 *   plain      update, lookup (with atomics on the value), delete
 *   warp       gpu:warp runs once per warp; lanes counts the lanes
 *   loop       while loops: rounds that differ per thread (break,
 *              continue, a pointer moving down the stack) against the
 *              interpreter; count, hist and keyed count in a loop
 *              that lanes leave at different rounds
 *   stop       the context's stop flag turns probes off
 *
 * tests/lower/run_gpu.sh builds and runs it.  Prints PASS/FAIL lines.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/verifier.h"
#include "tests/lower/lower_progs.h"

static int nfail, npass;

#define CHK(cond, ...) do {						\
	if (cond) {							\
		npass++;						\
		printf("PASS " __VA_ARGS__);				\
	} else {							\
		nfail++;						\
		printf("FAIL " __VA_ARGS__);				\
	}								\
	printf("\n");							\
} while (0)

#define CU(x) do {							\
	CUresult r_ = (x);						\
	if (r_ != CUDA_SUCCESS) {					\
		const char *s_ = "?";					\
		cuGetErrorString(r_, &s_);				\
		printf("FAIL gpu_lower: %s: %s\n", #x, s_);		\
		exit(1);						\
	}								\
} while (0)

enum { NRINGS = 4, RING_BYTES = 1 << 16, NSM_WORDS = 1024 };

static CUmodule mod;
static struct devrt_map_desc desc[LM_N];
static CUdeviceptr dctx, dmaps[LM_N], drings;
static struct devrt_ctx hctx;
static uint64_t tails[NRINGS];

/* ---- a host eBPF interpreter: ALU, jumps, stack, printf ---- */

struct run {
	uint64_t args[3], tid;
	uint8_t rec[512];
	uint32_t recsize;
};

static uint64_t alu(unsigned op, uint64_t a, uint64_t b, bool is64)
{
	unsigned sh = is64 ? 63 : 31;

	if (!is64) {
		a = (uint32_t)a;
		b = (uint32_t)b;
	}
	switch (op) {
	case BPF_ADD: a += b; break;
	case BPF_SUB: a -= b; break;
	case BPF_MUL: a *= b; break;
	case BPF_DIV: a = b ? a / b : 0; break;
	case BPF_MOD: a = b ? a % b : a; break;
	case BPF_OR: a |= b; break;
	case BPF_AND: a &= b; break;
	case BPF_XOR: a ^= b; break;
	case BPF_LSH: a <<= b & sh; break;
	case BPF_RSH: a >>= b & sh; break;
	case BPF_ARSH:
		a = is64 ? (uint64_t)((int64_t)a >> (b & sh)) :
			   (uint32_t)((int32_t)a >> (b & sh));
		break;
	case BPF_NEG: a = -a; break;
	case BPF_MOV: a = b; break;
	}
	return is64 ? a : (uint32_t)a;
}

static uint64_t bswap(uint64_t x, int bits)
{
	uint64_t r = 0;

	for (int i = 0; i < bits / 8; i++)
		r = r << 8 | ((x >> (8 * i)) & 0xff);
	return r;
}

static bool cond(unsigned op, uint64_t a, uint64_t b)
{
	switch (op) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	case BPF_JLT: return a < b;
	case BPF_JLE: return a <= b;
	case BPF_JSGT: return (int64_t)a > (int64_t)b;
	case BPF_JSGE: return (int64_t)a >= (int64_t)b;
	case BPF_JSLT: return (int64_t)a < (int64_t)b;
	case BPF_JSLE: return (int64_t)a <= (int64_t)b;
	case BPF_JSET: return a & b;
	}
	return false;
}

/* The host address ADDR of SIZE bytes, if they are in STACK. */
static uint8_t *on_stack(uint8_t *stack, uint64_t addr, int size)
{
	uintptr_t lo = (uintptr_t)stack;

	if (addr < lo || addr + size > lo + 512)
		return NULL;
	return (uint8_t *)(uintptr_t)addr;
}

static int interp(const struct bpf_insn *p, int n, struct run *rn)
{
	uint64_t r[11] = { 0 };
	uint8_t stack[512] = { 0 };
	uint8_t *fp = stack + 512;

	/* r10 is a host pointer here: programs only add offsets to it */
	r[10] = (uint64_t)(uintptr_t)fp;
	for (int pc = 0, steps = 0; pc < n; pc++) {
		if (++steps > 100000)
			return -1;	/* the verifier's bound */
		const struct bpf_insn *in = &p[pc];
		unsigned cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
		bool x = BPF_SRC(in->code) == BPF_X;
		int sz = BPF_SIZE(in->code) == BPF_B ? 1 :
			 BPF_SIZE(in->code) == BPF_H ? 2 :
			 BPF_SIZE(in->code) == BPF_W ? 4 : 8;
		uint64_t v = 0, old = 0;
		uint8_t *a;

		switch (cls) {
		case BPF_ALU64:
		case BPF_ALU:
			if (op == BPF_END) {
				v = r[in->dst_reg];
				if (in->imm < 64)
					v &= ((uint64_t)1 << in->imm) - 1;
				if (BPF_SRC(in->code) == BPF_TO_BE)
					v = bswap(v, in->imm);
				r[in->dst_reg] = v;
				break;
			}
			v = x ? r[in->src_reg] : cls == BPF_ALU64 ?
				(uint64_t)(int64_t)in->imm : (uint32_t)in->imm;
			r[in->dst_reg] = alu(op, r[in->dst_reg], v,
					     cls == BPF_ALU64);
			break;
		case BPF_LD:
			r[in->dst_reg] = (uint32_t)in->imm |
					 (uint64_t)(uint32_t)in[1].imm << 32;
			pc++;
			break;
		case BPF_LDX:
			if (!(a = on_stack(stack, r[in->src_reg] + in->off, sz)))
				return -1;
			memcpy(&v, a, sz);
			r[in->dst_reg] = v;
			break;
		case BPF_ST:
		case BPF_STX:
			if (!(a = on_stack(stack, r[in->dst_reg] + in->off, sz)))
				return -1;
			v = cls == BPF_ST ? (uint64_t)(int64_t)in->imm :
					    r[in->src_reg];
			if (BPF_MODE(in->code) != BPF_ATOMIC) {
				memcpy(a, &v, sz);
				break;
			}
			memcpy(&old, a, sz);
			if (in->imm == BPF_CMPXCHG) {
				if ((sz == 4 ? (uint32_t)r[0] : r[0]) == old)
					memcpy(a, &v, sz);
				r[0] = old;
				break;
			}
			if (in->imm == BPF_XCHG) {
				memcpy(a, &v, sz);
				r[in->src_reg] = old;
				break;
			}
			v = alu(in->imm & ~BPF_FETCH, old, v, true);
			memcpy(a, &v, sz);
			if (in->imm & BPF_FETCH)
				r[in->src_reg] = old;
			break;
		case BPF_JMP:
		case BPF_JMP32:
			if (op == BPF_EXIT)
				return 0;
			if (op == BPF_CALL) {
				if (in->imm == GT_DH_TID_X)
					r[0] = rn->tid;
				else if (in->imm == GT_DH_ARG)
					r[0] = rn->args[r[1]];
				else if (in->imm == GT_DH_PRINTF) {
					rn->recsize = (uint32_t)r[3];
					memcpy(rn->rec,
					       (const void *)(uintptr_t)r[2],
					       r[3]);
				} else
					return -1;
				break;
			}
			if (op == BPF_JA) {
				pc += in->off;
				break;
			}
			v = x ? r[in->src_reg] : cls == BPF_JMP ?
				(uint64_t)(int64_t)in->imm : (uint32_t)in->imm;
			if (cls == BPF_JMP32 ?
			    (op == BPF_JSGT || op == BPF_JSGE || op == BPF_JSLT ||
			     op == BPF_JSLE ?
			     cond(op, (uint64_t)(int64_t)(int32_t)r[in->dst_reg],
				  (uint64_t)(int64_t)(int32_t)v) :
			     cond(op, (uint32_t)r[in->dst_reg], (uint32_t)v)) :
			    cond(op, r[in->dst_reg], v))
				pc += in->off;
			break;
		}
	}
	return -1;
}

/* ---- device setup ---- */

static void setup(void)
{
	uint64_t off = 0;
	CUdeviceptr area;

	for (int i = 0; i < LM_N; i++) {
		const struct lp_mapdef *m = &lp_mapdefs[i];

		desc[i] = (struct devrt_map_desc){
			.kind = m->kind, .flags = m->flags,
			.key_size = m->key_size, .value_size = m->value_size,
			.nshards = m->kind == DEVRT_K_PLAIN ? 1 :
				   m->kind == DEVRT_K_SMLOAD && !m->key_size ?
				   DEVRT_SMLOAD_SHARDS : 8,
			.capacity = m->key_size ? 256 : 1,
			.nwords = m->kind == DEVRT_K_SMLOAD ? NSM_WORDS : 0,
			.lmin = m->lmin, .lmax = m->lmax, .lstep = m->lstep,
		};
		if (devrt_map_layout(&desc[i])) {
			printf("FAIL gpu_lower: layout of map %d\n", i);
			exit(1);
		}
		off += devrt_map_bytes(&desc[i]);
	}
	CU(cuMemAlloc(&area, off));
	off = 0;
	for (int i = 0; i < LM_N; i++) {
		size_t n = devrt_map_bytes(&desc[i]);
		void *img = malloc(n);

		dmaps[i] = area + off;
		desc[i].base = dmaps[i];
		devrt_map_init(&desc[i], img);
		CU(cuMemcpyHtoD(dmaps[i], img, n));
		free(img);
		off += n;
	}
	CU(cuMemAlloc(&drings, devrt_rings_bytes(NRINGS, RING_BYTES)));
	CU(cuMemsetD8(drings, 0, devrt_rings_bytes(NRINGS, RING_BYTES)));
	hctx = (struct devrt_ctx){
		.magic = DEVRT_MAGIC, .launch = 42, .launch_ns = 123456789,
		.kernel = 7, .gpu = 0, .pid = (uint64_t)getpid(),
		.nmaps = LM_N, .nrings = NRINGS, .ring_bytes = RING_BYTES,
		.rings = drings,
	};
	CU(cuMemAlloc(&dctx, devrt_ctx_bytes(LM_N)));
	CU(cuMemcpyHtoD(dctx, &hctx, sizeof(hctx)));
	CU(cuMemcpyHtoD(dctx + DEVRT_CTX_SIZE, desc, sizeof(desc)));
}

static int stopped;

static void launch(int k, unsigned grid, unsigned block, uint64_t a0,
		   uint64_t a1, uint64_t a2)
{
	char name[32];
	CUfunction fn;
	/* the launch parameter: context (0: probes stopped), launch,
	 * launch_ns, kernel, the maps' hot words */
	uint64_t lp[DEVRT_PWORDS] = { stopped ? 0 : dctx, 42, 123456789, 7 };
	void *params[] = { &a0, &a1, &a2, lp };

	devrt_hot_words(desc, LM_N, lp + DEVRT_PW_HOT);

	snprintf(name, sizeof(name), "gt_test_%d", k);
	CU(cuModuleGetFunction(&fn, mod, name));
	CU(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, 0, params, NULL));
	CU(cuCtxSynchronize());
}

/* ---- printf records ---- */

struct recset {
	int n;
	uint32_t fmt[4096], size[4096];
	uint64_t words[4096][64];
};

static void on_rec(uint32_t fmt, const void *args, uint32_t size, void *arg)
{
	struct recset *rs = arg;

	if (rs->n >= 4096 || size > 512)
		return;
	rs->fmt[rs->n] = fmt;
	rs->size[rs->n] = size;
	memcpy(rs->words[rs->n], args, size);
	rs->n++;
}

static void drain(struct recset *rs)
{
	size_t rb = DEVRT_LINE + RING_BYTES;
	uint8_t *img = malloc(rb);

	rs->n = 0;
	for (int r = 0; r < NRINGS; r++) {
		CU(cuMemcpyDtoH(img, drings + r * rb, rb));
		devrt_ring_read(img, RING_BYTES, &tails[r], on_rec, rs);
		CU(cuMemcpyHtoD(drings + r * rb + 8, &tails[r], 8));
	}
	free(img);
}

static uint64_t ring_drops(void)
{
	uint64_t n = 0, d;

	for (int r = 0; r < NRINGS; r++) {
		CU(cuMemcpyDtoH(&d, drings + r * (DEVRT_LINE + RING_BYTES) + 16,
				8));
		n += d;
	}
	return n;
}

static void test_interp(int which, int fmt, const struct lp_prog *p)
{
	static const uint64_t in[][2] = {
		{ 0x123456789abcdef0ull, 0 },
		{ (uint64_t)-5, 3 },
		{ 7, (uint64_t)-1 },
		{ 0x8000000000000000ull, 0x8000000000000000ull },
		{ 0xffffffff, 0x100000000ull },
	};
	static struct recset rs;

	for (size_t t = 0; t < sizeof(in) / sizeof(in[0]); t++) {
		int bad = 0, seen = 0;

		launch(which, 1, 32, in[t][0], in[t][1], 0);
		drain(&rs);
		for (int i = 0; i < rs.n; i++) {
			struct run rn = { .args = { in[t][0], in[t][1], 0 },
					  .tid = rs.words[i][0] };

			if (rs.fmt[i] != (uint32_t)fmt)
				continue;
			seen++;
			if (interp(p->in, p->n, &rn) || rn.recsize != rs.size[i] ||
			    memcmp(rn.rec, rs.words[i], rn.recsize)) {
				if (!bad++)
					for (uint32_t w = 0; w < rn.recsize / 8; w++)
						if (memcmp(rn.rec + 8 * w,
							   &rs.words[i][w], 8))
							printf("    tid %llu word %u: "
							       "gpu %#llx host %#llx\n",
							       (unsigned long long)rn.tid, w,
							       (unsigned long long)rs.words[i][w],
							       (unsigned long long)*(uint64_t *)(rn.rec + 8 * w));
			}
		}
		CHK(seen == 32 && !bad, "gpu_lower/%s_input%zu: %d records, %d "
		    "differ", p->name, t, seen, bad);
	}
}

static void test_builtins(void)
{
	static struct recset rs;
	int bad = 0, n = 0;

	launch(LP_BUILTIN, 2, 64, 11, 22, 33);
	drain(&rs);
	for (int i = 0; i < rs.n; i++) {
		uint64_t *w = rs.words[i];

		if (rs.fmt[i] != 3)
			continue;
		n++;
		/* order of lp_builtins, then arg0..2 */
		if (w[0] >= 64 || w[1] || w[2] || w[3] >= 2 || w[4] || w[5] ||
		    w[6] != 64 || w[7] != 1 || w[8] != 1 || w[9] != 2 ||
		    w[10] != 1 || w[11] != 1 || w[12] >= w[13] ||
		    w[14] >= 64 || w[15] != w[0] % 32 || w[16] != 32 ||
		    !w[17] || !w[18] || w[20] != 42 || w[21] != 123456789 ||
		    w[22] != 0 || w[23] != (uint64_t)getpid() || w[24] != 7 ||
		    w[25] != 11 || w[26] != 22 || w[27] != 33) {
			if (!bad++)
				for (int k = 0; k < 28; k++)
					printf("    w[%d] = %llu\n", k,
					       (unsigned long long)w[k]);
		}
	}
	CHK(n == 128 && !bad, "gpu_lower/builtins: %d records, %d wrong", n,
	    bad);
}

/* ---- maps ---- */

struct got {
	int n;
	uint32_t nw;
	uint8_t key[64][24];
	uint64_t val[64][64];
};

static int on_entry(const void *key, const uint64_t *val, void *arg)
{
	struct got *g = arg;
	int i = g->n++;

	if (i >= 64)
		return 1;
	memset(g->key[i], 0, sizeof(g->key[i]));
	if (key)
		memcpy(g->key[i], key, 24);
	memcpy(g->val[i], val, 8 * (g->nw < 64 ? g->nw : 64));
	return 0;
}

static int read_map(int m, struct got *g)
{
	size_t n = devrt_map_bytes(&desc[m]);
	void *img = malloc(n);
	int r;

	memset(g, 0, sizeof(*g));
	g->nw = desc[m].nwords;
	CU(cuMemcpyDtoH(img, dmaps[m], n));
	r = devrt_map_foreach(&desc[m], img, on_entry, g);
	free(img);
	return r;
}

static uint64_t key_of(const struct got *g, int i)
{
	uint64_t k;

	memcpy(&k, g->key[i], 8);
	return k;
}

static int hist_index(int64_t n)
{
	int i = 0;

	if (n < 0)
		return 0;
	if (n == 0)
		return 1;
	if (n >= (int64_t)1 << 31)
		return 33;
	while (n >>= 1)
		i++;
	return 2 + i;
}

static void test_aggs(void)
{
	enum { G = 64, B = 256, N = G * B };
	/* hist and lhist: the buckets, then the sum of the values */
	uint64_t hist[4][35] = { { 0 } }, lh[13] = { 0 }, sum = 0;
	static struct got g;
	int ok;

	launch(LP_AGGS, G, B, 0, 0, 0);
	for (uint64_t i = 0; i < N; i++) {
		hist[i & 3][hist_index((int64_t)i)]++;
		hist[i & 3][34] += i;
		sum += i;
		lh[i % 120 >= 100 ? 11 : 1 + (i % 120) / 10]++;
		lh[12] += i % 120;
	}
	CHK(read_map(LM_COUNT, &g) == 1 && g.val[0][0] == N,
	    "gpu_lower/count: %llu", (unsigned long long)g.val[0][0]);
	ok = read_map(LM_HIST, &g) == 4;
	for (int i = 0; ok && i < 4; i++)
		ok = key_of(&g, i) == (uint64_t)i &&
		     !memcmp(g.val[i], hist[i], sizeof(hist[i]));
	CHK(ok, "gpu_lower/hist_keyed");
	CHK(read_map(LM_SUM, &g) == 1 && g.val[0][0] == sum,
	    "gpu_lower/sum: %llu", (unsigned long long)g.val[0][0]);
	CHK(read_map(LM_MIN, &g) == 1 && (int64_t)g.val[0][0] == -100 &&
	    g.val[0][1] == 1, "gpu_lower/min_signed: %lld",
	    (long long)g.val[0][0]);
	ok = read_map(LM_MAX, &g) == 2 && key_of(&g, 0) == 0 &&
	     g.val[0][0] == (N - 2) * 3ull && key_of(&g, 1) == 1 &&
	     g.val[1][0] == (N - 1) * 3ull;
	CHK(ok, "gpu_lower/max_keyed");
	/* total of i = k mod 4: N/4 * k + 4 * (N/4)(N/4 - 1)/2 */
	ok = read_map(LM_AVG, &g) == 4;
	for (int i = 0; ok && i < 4; i++) {
		uint64_t m = N / 4;

		ok = key_of(&g, i) == (uint64_t)i && g.val[i][0] == m &&
		     g.val[i][1] == m * i + 4 * m * (m - 1) / 2;
	}
	CHK(ok, "gpu_lower/avg_keyed");
	CHK(read_map(LM_STATS, &g) == 1 && g.val[0][0] == N &&
	    g.val[0][1] == sum, "gpu_lower/stats");
	CHK(read_map(LM_LHIST, &g) == 1 && !memcmp(g.val[0], lh, sizeof(lh)),
	    "gpu_lower/lhist");
	ok = read_map(LM_SMLOAD, &g) == 1;
	{
		uint64_t t = 0;
		size_t n = devrt_map_bytes(&desc[LM_SMLOAD]);
		uint8_t *img = malloc(n);

		/* all NSM_WORDS words: foreach's copy is cut at 64 here */
		CU(cuMemcpyDtoH(img, dmaps[LM_SMLOAD], n));
		for (uint32_t s = 0; s < desc[LM_SMLOAD].nshards; s++)
			for (uint32_t w = 0; w < NSM_WORDS; w++) {
				uint64_t v;

				memcpy(&v, img + s * desc[LM_SMLOAD].shard_bytes +
				       DEVRT_LINE + 16 + 8 * w, 8);
				t += v;
			}
		free(img);
		CHK(ok && t == N, "gpu_lower/smload: total %llu",
		    (unsigned long long)t);
	}
	ok = read_map(LM_KEY20, &g) == 8;
	for (int i = 0; ok && i < 8; i++) {
		uint64_t k1, k2;

		memcpy(&k1, g.key[i] + 8, 8);
		memcpy(&k2, g.key[i] + 16, 8);
		ok = key_of(&g, i) == (uint64_t)i && k1 == 'k' &&
		     k2 == 0xaabbccdd && g.val[i][0] == N / 8;
	}
	CHK(ok, "gpu_lower/key20_count");
}

static void test_plain(void)
{
	enum { N = 256 };
	static struct got g;
	int ok;

	launch(LP_UPDATE, 4, 64, 0, 0, 0);
	launch(LP_LOOKUP, 4, 64, 0, 0, 0);
	launch(LP_DELETE, 1, 1, 0, 0, 0);
	ok = read_map(LM_PLAIN, &g) == 15;
	for (int i = 0; ok && i < 15; i++)
		ok = key_of(&g, i) == (uint64_t)i && g.val[i][0] == (uint64_t)i &&
		     g.val[i][1] == 2ull * i + N / 16;
	CHK(ok, "gpu_lower/plain_update_lookup_delete (%d keys)", g.n);
	CHK(read_map(LM_ACC, &g) == 1 && g.val[0][0] == 16 * 120,
	    "gpu_lower/plain_no_key_atomic: %llu",
	    (unsigned long long)g.val[0][0]);
}

static void test_warp(void)
{
	static struct got g;

	launch(LP_WARP, 3, 48, 0, 0, 0);
	CHK(read_map(LM_WCOUNT, &g) == 1 && g.val[0][0] == 6,
	    "gpu_lower/warp_once_per_warp: %llu",
	    (unsigned long long)g.val[0][0]);
	CHK(read_map(LM_WLANES, &g) == 1 && g.val[0][0] == 144,
	    "gpu_lower/warp_lanes: %llu", (unsigned long long)g.val[0][0]);
}

/*
 * while loops (lower_progs.h): 5 rounds in each warp's leader, and rounds
 * that differ per lane (tid % 4: 0..3) so that lanes leave the loop at
 * different rounds and each update combines whichever lanes are still in.
 */
static void test_loops(void)
{
	enum { G = 16, B = 128, N = G * B };
	static struct got g;
	uint64_t h[35] = { 0 }, k[3] = { 0 };	/* h[34]: the sum */
	int ok;

	launch(LP_LOOPW, 3, 48, 0, 0, 0);
	CHK(read_map(LM_LOOPW, &g) == 1 && g.val[0][0] == 5 * 6,
	    "gpu_lower/loop_warp_5_rounds: %llu (want 30)",
	    (unsigned long long)g.val[0][0]);
	launch(LP_LOOPT, G, B, 0, 0, 0);
	/* lane t goes round t % 4 times, with $i = 0 .. t % 4 - 1 */
	for (int t = 0; t < N; t++)
		for (int i = 0; i < t % 4; i++) {
			h[hist_index(i)]++;
			h[34] += i;
			k[i]++;
		}
	CHK(read_map(LM_LOOPC, &g) == 1 && g.val[0][0] == N / 4 * 6,
	    "gpu_lower/loop_thread_count: %llu (want %d)",
	    (unsigned long long)g.val[0][0], N / 4 * 6);
	CHK(read_map(LM_LOOPH, &g) == 1 && !memcmp(g.val[0], h, sizeof(h)),
	    "gpu_lower/loop_thread_hist: [0] %llu [1] %llu [2, 4) %llu "
	    "sum %llu (want %llu %llu %llu %llu)",
	    (unsigned long long)g.val[0][1], (unsigned long long)g.val[0][2],
	    (unsigned long long)g.val[0][3], (unsigned long long)g.val[0][34],
	    (unsigned long long)h[1], (unsigned long long)h[2],
	    (unsigned long long)h[3], (unsigned long long)h[34]);
	ok = read_map(LM_LOOPK, &g) == 3;
	for (int i = 0; ok && i < 3; i++) {
		uint64_t key = key_of(&g, i);

		ok = key < 3 && g.val[i][0] == k[key];
	}
	CHK(ok, "gpu_lower/loop_thread_keyed: %d keys (want 3: %llu %llu "
	    "%llu)", g.n, (unsigned long long)k[0], (unsigned long long)k[1],
	    (unsigned long long)k[2]);
}

static void test_stop(void)
{
	static struct got g;
	uint64_t before;

	read_map(LM_COUNT, &g);
	before = g.val[0][0];
	stopped = 1;
	launch(LP_COUNT, 4, 64, 0, 0, 0);
	read_map(LM_COUNT, &g);
	CHK(g.val[0][0] == before, "gpu_lower/stop_flag");
	stopped = 0;
	launch(LP_COUNT, 4, 64, 0, 0, 0);
	read_map(LM_COUNT, &g);
	CHK(g.val[0][0] == before + 256, "gpu_lower/after_stop");
}

int main(void)
{
	static struct lp_prog progs[LP_NPROGS];
	struct pl_func f[LP_NPROGS];
	struct gt_dev_map maps[LM_N];
	char err[512], log[8192];
	CUjit_option opt[] = { CU_JIT_ERROR_LOG_BUFFER,
			       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *optv[] = { log, (void *)(uintptr_t)sizeof(log) };
	CUdevice dev;
	CUcontext cu;
	char *text;

	lp_maps(maps);
	for (int i = 0; i < LP_NPROGS; i++) {
		struct pl_opts o;

		lp_build(&progs[i], i);
		/* hist_sum: the sum words are checked too */
		o = (struct pl_opts){ .index = i, .mode = progs[i].mode,
				      .hist_sum = true };
		if (vf_verify(progs[i].in, progs[i].n, maps, LM_N,
			      progs[i].name, NULL, err, sizeof(err)) ||
		    pl_lower(progs[i].in, progs[i].n, maps, LM_N, &o, &f[i],
			     err, sizeof(err))) {
			printf("FAIL gpu_lower: %s\n", err);
			return 1;
		}
	}
	if (!pl_runtime_available()) {
		printf("SKIP gpu_lower: runtime built without nvcc\n");
		return 0;
	}
	text = lp_module(f, LP_NPROGS, "7.8", "sm_90");
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&cu, dev));
	CU(cuCtxSetCurrent(cu));
	log[0] = '\0';
	if (cuModuleLoadDataEx(&mod, text, 2, opt, optv) != CUDA_SUCCESS) {
		printf("FAIL gpu_lower/jit: %s\n", log);
		return 1;
	}
	CHK(1, "gpu_lower/jit");
	setup();
	test_interp(LP_ALU, 1, &progs[LP_ALU]);
	test_interp(LP_JMP, 2, &progs[LP_JMP]);
	test_interp(LP_LOOP, 5, &progs[LP_LOOP]);
	test_builtins();
	test_aggs();
	test_plain();
	test_warp();
	test_loops();
	test_stop();
	CHK(ring_drops() == 0, "gpu_lower/no_ring_drops");
	free(text);
	for (int i = 0; i < LP_NPROGS; i++)
		pl_func_free(&f[i]);
	cuDevicePrimaryCtxRelease(dev);
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail != 0;
}
