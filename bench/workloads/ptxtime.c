// SPDX-License-Identifier: MIT
/*
 * Time one kernel from several PTX modules side by side (bench/splice):
 * the original and gputrace's spliced copies, or hand-edited variants of
 * them, each JIT-compiled by the driver and launched REPS times between
 * two events, ROUNDS rounds taking the modules in turn; prints each
 * one's median microseconds per launch and its ratio to the first.
 *
 *   ptxtime KERNEL GX,GY,GZ BX,BY,BZ ARGS FILE[@STRIDE:HI|@smload]...
 *
 * ARGS: the kernel's parameters, comma-separated: bN a zeroed device
 * buffer of N bytes, iV a 32-bit integer, lV a 64-bit one; fields
 * joined by '+' make one parameter, a struct laid out with each field
 * at its natural alignment (CUB's functors: b67108864+i0).  A spliced
 * module (one whose text has gputrace's __gt_ctx parameter) gets that
 * parameter too: a zeroed context, launch number 1, and the hot words
 * of map 0 at a zeroed 64 MB buffer, shards STRIDE bytes apart (512)
 * with HI in the high half (1023: nshards - 1, as the agent lays out a
 * map without key).  @smload: a keyless smload map's, whose HI is the
 * SM count and whose shard holds a word per SM (devrt.h).  After
 * the timing, each spliced module runs once more on a zeroed map, and
 * the sum of the map's words is printed ("map total"): the updates the
 * probe made, to check a variant against the grid.  PTXTIME_FLUSH=MB
 * times each launch alone after a memset of MB megabytes (flushed()).
 * PTXTIME_PERSIST=KB sets KB of the L2 aside for persisting lines and
 * launches every module with an access-policy window over map 0's hot
 * words (launch()), to see what map lines kept in the L2 would save.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 16
#define ARG_BYTES 64		/* one parameter, a struct at most */
#define MAX_FILES 32
#define CTX_WORDS 20		/* gputrace's launch parameter: 160 bytes */
#define REPS 200
#define MAP_BYTES (64 << 20)	/* a count kept per kernel: 512 x 90240 */
#define ROUNDS 9

#define CK(x)                                                           \
	do {                                                            \
		CUresult r_ = (x);                                      \
		if (r_ != CUDA_SUCCESS) {                               \
			const char *s_ = "?";                           \
			cuGetErrorString(r_, &s_);                      \
			fprintf(stderr, "ptxtime: %s: %s\n", #x, s_);   \
			exit(1);                                        \
		}                                                       \
	} while (0)

/* PTXTIME_PERSIST: the window each module's launches carry (none when
 * num_bytes is 0) */
static CUaccessPolicyWindow window[MAX_FILES];

static void launch(int f, CUfunction fn, unsigned *g, unsigned *b,
		   void **params)
{
	CUlaunchAttribute at = {
		.id = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
	};
	CUlaunchConfig cfg = {
		.gridDimX = g[0], .gridDimY = g[1], .gridDimZ = g[2],
		.blockDimX = b[0], .blockDimY = b[1], .blockDimZ = b[2],
		.attrs = &at, .numAttrs = 1,
	};

	if (!window[f].num_bytes) {
		CK(cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], 0,
				  NULL, params, NULL));
		return;
	}
	at.value.accessPolicyWindow = window[f];
	CK(cuLaunchKernelEx(&cfg, fn, params, NULL));
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(s = malloc((size_t)n + 1)) ||
	    fread(s, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "ptxtime: cannot read %s\n", path);
		exit(1);
	}
	s[n] = '\0';
	fclose(f);
	return s;
}

static void dims(const char *s, unsigned d[3])
{
	d[0] = d[1] = d[2] = 1;
	if (sscanf(s, "%u,%u,%u", &d[0], &d[1], &d[2]) < 1) {
		fprintf(stderr, "ptxtime: bad dimensions '%s'\n", s);
		exit(2);
	}
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* the sum of every word of the map after one launch from zero: what
 * the probe counted (counts and histogram buckets add up to the
 * updates made), a check that the splice still counts right */
static int map_total(int f, CUfunction fn, unsigned *g, unsigned *b,
		     void **params, CUdeviceptr dmap, unsigned long long *total)
{
	size_t n = MAP_BYTES / 8;
	unsigned long long *w = malloc(n * 8);

	if (!w)
		return -1;
	CK(cuMemsetD8(dmap, 0, MAP_BYTES));
	launch(f, fn, g, b, params);
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(w, dmap, n * 8));
	*total = 0;
	for (size_t i = 0; i < n; i++)
		*total += w[i];
	free(w);
	return 0;
}

/* PTXTIME_FLUSH=MB: each launch timed by its own events after a
 * memset of MB megabytes, which leaves the L2 (and the TLBs) as a
 * program's big passes leave them for its next kernel; us per launch */
static float flushed(int f, CUfunction fn, unsigned *g, unsigned *b,
		     void **params, CUdeviceptr flush, size_t bytes,
		     CUevent *ea, CUevent *eb)
{
	float sum = 0, ms;

	for (int i = 0; i < REPS; i++) {
		CK(cuMemsetD32Async(flush, (unsigned int)i, bytes / 4, NULL));
		CK(cuEventRecord(ea[i], NULL));
		launch(f, fn, g, b, params);
		CK(cuEventRecord(eb[i], NULL));
	}
	CK(cuEventSynchronize(eb[REPS - 1]));
	for (int i = 0; i < REPS; i++) {
		CK(cuEventElapsedTime(&ms, ea[i], eb[i]));
		sum += ms;
	}
	return sum * 1000 / REPS;
}

/* one parameter A ("b4096", "i7", "l9", or fields joined by '+') into
 * OUT, each field at its natural alignment; buffers are allocated and
 * zeroed */
static int parse_arg(char *a, unsigned char *out)
{
	size_t at = 0;
	char *f, *save = NULL;

	for (f = strtok_r(a, "+", &save); f; f = strtok_r(NULL, "+", &save)) {
		size_t n = f[0] == 'i' ? 4 : 8;
		unsigned long long v;
		unsigned int v32;

		at = (at + n - 1) / n * n;
		if (at + n > ARG_BYTES)
			return -1;
		if (f[0] == 'b') {
			CUdeviceptr d;
			size_t len = strtoull(f + 1, NULL, 0);

			CK(cuMemAlloc(&d, len));
			CK(cuMemsetD8(d, 0, len));
			v = d;
			memcpy(out + at, &v, 8);
		} else if (f[0] == 'l') {
			v = strtoull(f + 1, NULL, 0);
			memcpy(out + at, &v, 8);
		} else if (f[0] == 'i') {
			v32 = (unsigned int)strtol(f + 1, NULL, 0);
			memcpy(out + at, &v32, 4);
		} else {
			return -1;
		}
		at += n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static unsigned long long ctxw[MAX_FILES][CTX_WORDS];
	static float t[MAX_FILES][ROUNDS];
	CUfunction fn[MAX_FILES];
	int spliced[MAX_FILES];
	void *params[MAX_FILES][MAX_ARGS + 1];
	static unsigned long long arg[MAX_ARGS][ARG_BYTES / 8];
	CUdeviceptr dctx, dmap, flush = 0;
	size_t flush_bytes = 0, persist = 0;
	static CUevent ea[REPS], eb[REPS];
	int nargs = 0, nf = argc - 5;
	unsigned g[3], b[3];
	char *args, *a, *save = NULL;
	CUevent e0, e1;
	CUdevice dev;
	CUcontext ctx;

	if (argc < 6 || nf > MAX_FILES) {
		fprintf(stderr, "usage: ptxtime KERNEL GX,GY,GZ BX,BY,BZ "
			"ARGS FILE[@STRIDE:HI|@smload]...\n");
		return 2;
	}
	dims(argv[2], g);
	dims(argv[3], b);
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	args = strdup(argv[4]);
	for (a = strtok_r(args, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
		if (nargs == MAX_ARGS || parse_arg(a, (unsigned char *)arg[nargs])) {
			fprintf(stderr, "ptxtime: bad argument '%s'\n", a);
			return 2;
		}
		nargs++;
	}
	free(args);
	if (getenv("PTXTIME_PERSIST")) {
		persist = strtoull(getenv("PTXTIME_PERSIST"), NULL, 0) << 10;
		CK(cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, persist));
		CK(cuCtxGetLimit(&persist, CU_LIMIT_PERSISTING_L2_CACHE_SIZE));
		printf("L2 set aside for persisting lines: %zu KB\n",
		       persist >> 10);
	}
	CK(cuMemAlloc(&dctx, 1 << 16));
	CK(cuMemsetD8(dctx, 0, 1 << 16));
	CK(cuMemAlloc(&dmap, MAP_BYTES));
	CK(cuMemsetD8(dmap, 0, MAP_BYTES));
	for (int f = 0; f < nf; f++) {
		char *path = strdup(argv[5 + f]), *at = strchr(path, '@'), *s;
		unsigned long long stride = 512, hi = 1023;
		CUmodule m;
		int regs = 0;

		if (at && !strcmp(at + 1, "smload")) {
			int nsm = 0;

			*at = '\0';
			CK(cuDeviceGetAttribute(&nsm,
				CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
			/* a line, the slot's state and live words, a word
			 * per SM, in whole lines */
			hi = (unsigned long long)nsm;
			stride = (128 + 16 + 8 * hi + 127) / 128 * 128;
		} else if (at) {
			*at = '\0';
			if (sscanf(at + 1, "%llu:%llu", &stride, &hi) != 2) {
				fprintf(stderr, "ptxtime: bad '%s'\n", at + 1);
				return 2;
			}
		}
		s = slurp(path);
		CK(cuModuleLoadData(&m, s));
		CK(cuModuleGetFunction(&fn[f], m, argv[1]));
		spliced[f] = strstr(s, "__gt_ctx") != NULL;
		free(s);
		free(path);
		cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn[f]);
		printf("%-24s %3d registers%s\n", argv[5 + f], regs,
		       spliced[f] ? ", spliced" : "");
		/* the parameters: pointers to the values, the context last */
		for (int i = 0; i < nargs; i++)
			params[f][i] = arg[i];
		params[f][nargs] = spliced[f] ? (void *)ctxw[f] : NULL;
		ctxw[f][0] = dctx;
		ctxw[f][1] = 1;
		ctxw[f][4] = dmap;
		ctxw[f][5] = stride | hi << 32;
		if (persist) {
			size_t n = stride * (hi + 1);

			window[f].base_ptr = (void *)dmap;
			window[f].num_bytes = n < MAP_BYTES ? n : MAP_BYTES;
			window[f].hitRatio = persist >= window[f].num_bytes ?
				1.0f : (float)persist / window[f].num_bytes;
			window[f].hitProp = CU_ACCESS_PROPERTY_PERSISTING;
			window[f].missProp = CU_ACCESS_PROPERTY_STREAMING;
		}
	}
	CK(cuEventCreate(&e0, 0));
	CK(cuEventCreate(&e1, 0));
	if (getenv("PTXTIME_FLUSH")) {
		flush_bytes = strtoull(getenv("PTXTIME_FLUSH"), NULL, 0) << 20;
		CK(cuMemAlloc(&flush, flush_bytes));
		for (int i = 0; i < REPS; i++) {
			CK(cuEventCreate(&ea[i], 0));
			CK(cuEventCreate(&eb[i], 0));
		}
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int f = 0; f < nf; f++) {
			float ms;

			/* one launch first: the module's first-run costs */
			launch(f, fn[f], g, b, params[f]);
			if (flush) {
				t[f][r] = flushed(f, fn[f], g, b, params[f],
						  flush, flush_bytes, ea, eb);
				continue;
			}
			CK(cuEventRecord(e0, NULL));
			for (int i = 0; i < REPS; i++)
				launch(f, fn[f], g, b, params[f]);
			CK(cuEventRecord(e1, NULL));
			CK(cuEventSynchronize(e1));
			CK(cuEventElapsedTime(&ms, e0, e1));
			t[f][r] = ms * 1000 / REPS;
		}
	}
	CK(cuCtxSynchronize());
	for (int f = 0; f < nf; f++)
		qsort(t[f], ROUNDS, sizeof(float), cmp_float);
	printf("%-24s %10s %7s %12s   (median of %d rounds of %d launches;"
	       " map total: the words of map 0 after one launch)\n",
	       "module", "us/launch", "ratio", "map total", ROUNDS, REPS);
	for (int f = 0; f < nf; f++) {
		unsigned long long total = 0;

		if (spliced[f] && map_total(f, fn[f], g, b, params[f], dmap,
					    &total))
			return 1;
		printf("%-24s %10.2f %7.3f", argv[5 + f], t[f][ROUNDS / 2],
		       t[f][ROUNDS / 2] / t[0][ROUNDS / 2]);
		if (spliced[f])
			printf(" %12llu", total);
		printf("\n");
	}
	return 0;
}
