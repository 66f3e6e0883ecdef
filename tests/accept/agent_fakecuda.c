// SPDX-License-Identifier: MIT
/*
 * A fake libcuda.so.1 for testing the agent on a machine without a GPU
 * (tests/accept/agent_hooks.sh).  It implements just what the agent and
 * tests/accept/agent_hookprog.c call, with host memory as "device"
 * memory.  A launch of a function from a module JIT-compiled from PTX
 * plays the part of a `gpu:warp { @n = count(); }` probe: it adds the launch's warps to device map 0 through the launch
 * parameter, which checks the parameter and the map layout end to end.
 * Every launch prints one line on stdout saying what ran, unless
 * FAKECUDA_QUIET is set (bench/hook times launches).  With
 * FAKECUDA_CAPTURE set, a stream capture in global mode is taken to be
 * under way for the whole run: the calls the real driver refuses then
 * (allocations, synchronous copies, synchronizations) fail unless the
 * calling thread is in relaxed mode, and say so on stderr.  Graph kernel
 * nodes keep their parameters as the driver does (copied when set) and
 * run at cuGraphLaunch.  A fake libcupti (agent_fakecupti.c), when
 * loaded, is told of every kernel run.  With FAKECUDA_JIT_MS, compiles
 * after the first run in a fake PTX compiler (agent_fakejit.c).  With
 * FAKECUDA_NO_MEMCPY2D set, pitched copies are refused (the agent then
 * copies row by row).  With FAKECUDA_REGS set, a function of a module
 * loaded from a cubin reports the registers and the most threads a block
 * (its .maxntid, else 1024) the cubin gives it, as a driver does; 0
 * otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/agent_proto.h"

typedef int CUresult;
#define OK 0
#define BAD 1		/* CUDA_ERROR_INVALID_VALUE */
#define PER_THREAD 2	/* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
#define MAX_DYN_SMEM 8	/* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
#define DEFAULT_DYN_SMEM 49152

#define MAX_THREADS 0	/* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
#define NUM_REGS 4	/* CU_FUNC_ATTRIBUTE_NUM_REGS */
#define MAX_FUNCS 8

struct fmod {
	int instrumented;
	int nfuncs;		/* a cubin's kernels and their registers */
	char func[MAX_FUNCS][128];
	int regs[MAX_FUNCS];
	int threads[MAX_FUNCS];	/* 0: unbounded */
};

struct ffunc {
	char name[256];
	int instrumented;
	int regs, threads;
	int max_dyn;		/* dynamic shared memory allowed; 0: default */
	int attr[16];		/* other settable attributes, set + 1; 0: never set */
};


/* ---- stream capture: 0 global, 1 thread-local, 2 relaxed */
static __thread int capture_mode;

CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
	int old = capture_mode;

	capture_mode = *mode;
	*mode = old;
	return OK;
}

/* A call the driver refuses while a global-mode capture runs. */
static int unsafe(const char *what)
{
	if (!getenv("FAKECUDA_CAPTURE") || capture_mode == 2)
		return 0;
	fprintf(stderr, "fake: %s during a capture: capture invalidated\n",
		what);
	return 1;
}
#define CAPTURE_CHECK(what) \
	do { if (unsafe(what)) return 900; } while (0)

CUresult cuDriverGetVersion(int *v)
{
	*v = 13000;
	return OK;
}

CUresult cuGetErrorName(int e, const char **s)
{
	*s = "FAKE_ERROR";
	return OK;
}

CUresult cuCtxGetCurrent(void **c)
{
	*c = (void *)0x1000;
	return OK;
}

CUresult cuCtxSetCurrent(void *c)
{
	return OK;
}

CUresult cuCtxPushCurrent_v2(void *c)
{
	return OK;
}

CUresult cuCtxPopCurrent_v2(void **c)
{
	if (c)
		*c = (void *)0x1000;
	return OK;
}

CUresult cuCtxGetDevice(int *d)
{
	*d = 0;
	return OK;
}

CUresult cuCtxSynchronize(void)
{
	CAPTURE_CHECK("cuCtxSynchronize");
	return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	switch (attr) {
	case 75:	/* COMPUTE_CAPABILITY_MAJOR */
		*v = 9;
		break;
	case 76:	/* MINOR */
		*v = 0;
		break;
	case 16:	/* MULTIPROCESSOR_COUNT */
		*v = 4;
		break;
	default:
		*v = 0;
	}
	return OK;
}

CUresult cuStreamCreate(void **s, unsigned flags)
{
	*s = (void *)0x2000;
	return OK;
}

CUresult cuStreamSynchronize(void *s)
{
	CAPTURE_CHECK("cuStreamSynchronize");
	return OK;
}

CUresult cuMemAlloc_v2(uint64_t *p, size_t n)
{
	void *m;

	CAPTURE_CHECK("cuMemAlloc");
	/* not zeroed, as a GPU's is not: the agent must clear what it uses */
	m = malloc(n);
	if (m)
		memset(m, 0xa5, n);

	*p = (uint64_t)(uintptr_t)m;
	return m ? OK : 2;
}

CUresult cuMemFree_v2(uint64_t p)
{
	free((void *)(uintptr_t)p);
	return OK;
}

CUresult cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *st)
{
	CAPTURE_CHECK("cuMemcpyHtoDAsync");
	memcpy((void *)(uintptr_t)d, s, n);
	return OK;
}

CUresult cuMemsetD8Async(uint64_t d, unsigned char v, size_t n, void *st)
{
	CAPTURE_CHECK("cuMemsetD8Async");
	memset((void *)(uintptr_t)d, v, n);
	return OK;
}

CUresult cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *st)
{
	CAPTURE_CHECK("cuMemcpyDtoHAsync");
	memcpy(d, (const void *)(uintptr_t)s, n);
	return OK;
}

/* CUDA_MEMCPY2D; memory types 1 host, 2 device (both host memory here) */
struct copy2d {
	size_t src_x, src_y;
	int src_type;
	const void *src_host;
	uint64_t src_dev;
	void *src_array;
	size_t src_pitch;
	size_t dst_x, dst_y;
	int dst_type;
	void *dst_host;
	uint64_t dst_dev;
	void *dst_array;
	size_t dst_pitch;
	size_t width, height;
};

/* FAKECUDA_NO_MEMCPY2D: refused, as for memory types a driver cannot
 * copy between, so that the agent's fallback runs */
CUresult cuMemcpy2DAsync_v2(const struct copy2d *c, void *st)
{
	const char *no = getenv("FAKECUDA_NO_MEMCPY2D");
	const char *src = c->src_type == 1 ? c->src_host :
			  (const char *)(uintptr_t)c->src_dev;
	char *dst = c->dst_type == 1 ? c->dst_host :
		    (char *)(uintptr_t)c->dst_dev;

	CAPTURE_CHECK("cuMemcpy2DAsync");
	if ((no && *no) || c->src_x || c->src_y ||
	    c->dst_x || c->dst_y || c->width > c->src_pitch ||
	    c->width > c->dst_pitch)
		return 801;	/* CUDA_ERROR_NOT_SUPPORTED */
	for (size_t r = 0; r < c->height; r++)
		memcpy(dst + r * c->dst_pitch, src + r * c->src_pitch,
		       c->width);
	return OK;
}

/*
 * "JIT": PTX text given with JIT options (the agent's spliced modules)
 * makes an instrumented module, saved to FAKECUDA_PTX_OUT when set;
 * anything else (an image the program loads) a plain one.  A library is
 * its one module.
 */
/* PTX is text; fatbins, their wrappers and cubins start with binary magic */
static int is_text(const unsigned char *p)
{
	for (int i = 0; i < 4; i++)
		if (p[i] < 0x09 || p[i] > 0x7e)
			return 0;
	return 1;
}

/*
 * The PTX compiler, loaded as libcuda loads it: at the first compile that
 * misses the JIT cache, from libcuda's folder.  With FAKECUDA_JIT_MS,
 * every compile but the first (a cache hit, unless FAKECUDA_JIT_MISS_FIRST
 * is set) takes that long in it.
 */
static void jit_compile(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static int (*compile)(int);
	static int ncompiles;
	const char *ms = getenv("FAKECUDA_JIT_MS");
	char path[4096];
	Dl_info di;
	void *h;

	if (!ms || (__atomic_fetch_add(&ncompiles, 1, __ATOMIC_RELAXED) == 0 &&
		    !getenv("FAKECUDA_JIT_MISS_FIRST")))
		return;
	pthread_mutex_lock(&lock);
	if (!compile && dladdr((void *)jit_compile, &di) && di.dli_fname &&
	    strrchr(di.dli_fname, '/')) {
		snprintf(path, sizeof(path), "%.*s/libnvidia-ptxjitcompiler.so.1",
			 (int)(strrchr(di.dli_fname, '/') - di.dli_fname),
			 di.dli_fname);
		if ((h = dlopen(path, RTLD_NOW)))
			compile = (int (*)(int))dlsym(h, "fakejit_compile");
	}
	pthread_mutex_unlock(&lock);
	if (compile)
		compile(atoi(ms));
	else
		fprintf(stderr, "fake: no compiler: %s\n", dlerror());
}

/* The record of kernel NAME in FM, made at first sight; NULL: full */
static int slot(struct fmod *fm, const char *name)
{
	for (int i = 0; i < fm->nfuncs; i++)
		if (!strcmp(fm->func[i], name))
			return i;
	if (fm->nfuncs == MAX_FUNCS)
		return -1;
	snprintf(fm->func[fm->nfuncs], sizeof(fm->func[0]), "%s", name);
	return fm->nfuncs++;
}

/*
 * What a cubin says of its kernels' resources, as a driver reports them:
 * .nv.info's EIATTR_REGCOUNT (format 4, attribute 0x2f: symbol index,
 * registers), .nv.info.NAME's EIATTR_MAX_THREADS (0x05: x, y, z).
 */
static void cubin_regs(struct fmod *fm, const unsigned char *p)
{
	const Elf64_Ehdr *eh = (const void *)p;
	const Elf64_Shdr *sh = (const void *)(p + eh->e_shoff), *sy = NULL;
	const char *names;

	if (memcmp(p, ELFMAG, SELFMAG) || eh->e_machine != 190 ||
	    eh->e_shstrndx >= eh->e_shnum)
		return;
	names = (const char *)p + sh[eh->e_shstrndx].sh_offset;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB)
			sy = &sh[i];
	for (int i = 0; sy && i < eh->e_shnum; i++) {
		const unsigned char *d = p + sh[i].sh_offset;
		const char *sec = names + sh[i].sh_name;
		const Elf64_Sym *sym = (const void *)(p + sy->sh_offset);
		const char *str = (const char *)p + sh[sy->sh_link].sh_offset;

		if (strncmp(sec, ".nv.info", 8) || (sec[8] && sec[8] != '.'))
			continue;
		for (size_t o = 0; o + 4 <= sh[i].sh_size; ) {
			uint16_t n = d[o] == 4 ? *(const uint16_t *)(d + o + 2) : 0;
			const uint32_t *w = (const void *)(d + o + 4);
			int k;

			if (!sec[8] && d[o + 1] == 0x2f && n == 8 &&
			    (k = slot(fm, str + sym[w[0]].st_name)) >= 0)
				fm->regs[k] = (int)w[1];
			if (sec[8] && d[o + 1] == 0x05 && n == 12 &&
			    (k = slot(fm, sec + 9)) >= 0)
				fm->threads[k] = (int)(w[0] * w[1] * w[2]);
			o += 4 + n;
		}
	}
}

static CUresult load(void **m, const void *image, const char *how)
{
	const char *out = getenv("FAKECUDA_PTX_OUT");
	struct fmod *fm = calloc(1, sizeof(*fm));

	if (!fm)
		return 2;
	fm->instrumented = is_text(image);
	if (!fm->instrumented)
		cubin_regs(fm, image);
	if (fm->instrumented) {
		FILE *f = out ? fopen(out, "w") : NULL;

		fprintf(stderr, "fake: JIT (%s)\n", how);
		jit_compile();
		if (f) {
			fputs(image, f);
			fclose(f);
		}
	}
	*m = fm;
	return OK;
}

/* built with FAKECUDA_NO_LIBRARY: a driver before CUDA 12.0 */
#ifndef FAKECUDA_NO_LIBRARY
CUresult cuLibraryLoadData(void **lib, const void *code, int *o, void **v,
			   unsigned n, int *lo, void **lv, unsigned ln)
{
	return load(lib, code, "library");
}

CUresult cuLibraryGetModule(void **m, void *lib)
{
	*m = lib;
	return OK;
}

CUresult cuLibraryUnload(void *lib)
{
	free(lib);
	return OK;
}

CUresult cuModuleGetFunction(void **f, void *m, const char *name);

/* a library's kernel is a function of its module (the library) */
CUresult cuLibraryGetKernel(void **k, void *lib, const char *name)
{
	return cuModuleGetFunction(k, lib, name);
}

CUresult cuKernelGetFunction(void **f, void *k)
{
	void *ff = malloc(sizeof(struct ffunc));

	if (!ff)
		return 2;
	memcpy(ff, k, sizeof(struct ffunc));
	*f = ff;
	return OK;
}
#endif

CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *o,
			    void **v)
{
	return load(m, image, "module");
}

/* the agent's own helper modules (its clock kernel): never instrumented */
CUresult cuModuleLoadData(void **m, const void *image)
{
	struct fmod *fm = calloc(1, sizeof(*fm));

	if (fm && !is_text(image))
		cubin_regs(fm, image);
	*m = fm;
	return fm ? OK : 2;
}

CUresult cuModuleUnload(void *m)
{
	free(m);
	return OK;
}

CUresult cuModuleGetFunction(void **f, void *m, const char *name)
{
	struct ffunc *ff = calloc(1, sizeof(*ff));

	if (!ff)
		return 2;
	snprintf(ff->name, sizeof(ff->name), "%s", name);
	ff->instrumented = ((struct fmod *)m)->instrumented;
	for (int i = 0; i < ((struct fmod *)m)->nfuncs; i++)
		if (getenv("FAKECUDA_REGS") &&
		    !strcmp(((struct fmod *)m)->func[i], name)) {
			ff->regs = ((struct fmod *)m)->regs[i];
			ff->threads = ((struct fmod *)m)->threads[i];
			/* a real driver's figure for a Triton kernel */
			if (getenv("FAKECUDA_THREADS"))
				ff->threads = atoi(getenv("FAKECUDA_THREADS"));
		}
	*f = ff;
	return OK;
}

/*
 * CUDA 12.4's enumeration: the kernels FAKECUDA_MODULE_KERNELS names
 * (comma separated), none without it.  The agent instruments a module's
 * other matched kernels ahead (agent_prefetch.c).
 */
CUresult cuModuleGetFunctionCount(unsigned *n, void *m)
{
	const char *e = getenv("FAKECUDA_MODULE_KERNELS");

	*n = 0;
	for (; e && *e; e += strcspn(e, ",") + (e[strcspn(e, ",")] == ','))
		++*n;
	return OK;
}

CUresult cuModuleEnumerateFunctions(void **fs, unsigned n, void *m)
{
	const char *e = getenv("FAKECUDA_MODULE_KERNELS");
	char name[256];

	for (unsigned i = 0; i < n && e && *e; i++) {
		size_t len = strcspn(e, ",");

		snprintf(name, sizeof(name), "%.*s", (int)len, e);
		if (cuModuleGetFunction(&fs[i], m, name) != OK)
			return 2;
		e += len + (e[len] == ',');
	}
	return OK;
}

CUresult cuFuncGetName(const char **name, void *f)
{
	*name = ((struct ffunc *)f)->name;
	return OK;
}

/*
 * What a warp probe counting into map 0 would do on SM 0: address the
 * shard from the launch parameter's hot words, add to the count word
 * (no live flag: a count is live when nonzero).
 */
static void run_probe(const struct agent_launch_param *p, uint64_t warps)
{
	const struct devrt_ctx *c = (const void *)(uintptr_t)p->ctx;
	const struct devrt_map_desc *d;
	uint64_t *slot;

	if (!c || c->magic != DEVRT_MAGIC || c->nmaps < 1) {
		printf("bad launch context\n");
		return;
	}
	d = (const void *)((const char *)c + DEVRT_CTX_SIZE);
	/* a map kept per kernel: the hot base is the kernel's slot's
	 * value words, less the keyless slot's 16 bytes of header */
	if ((d->flags & DEVRT_F_KERNEL ?
	     p->hot[0] < d->base + d->key_size ||
	     (p->hot[0] - d->base - d->key_size) % d->slot_bytes :
	     p->hot[0] != d->base) ||
	    p->hot[1] != (d->shard_bytes |
					 (uint64_t)(d->nshards - 1) << 32)) {
		printf("bad hot words\n");
		return;
	}
	slot = (uint64_t *)(uintptr_t)(p->hot[0] + DEVRT_LINE);
	/* the count; atomic as on the GPU (agent_attachprog launches
	 * from two threads) */
	__atomic_fetch_add(&slot[2], warps, __ATOMIC_RELAXED);
}

/* Tell a loaded fake CUPTI that kernel NAME ran. */
typedef void (*cupti_fn)(const char *, const unsigned *, const unsigned *);
static cupti_fn cupti_kernel;

/* The fake libcupti tells us, as it loads (a -p attach loads it late),
 * where to report the kernels we run. */
void fakecuda_cupti_loaded(cupti_fn fn)
{
	__atomic_store_n(&cupti_kernel, fn, __ATOMIC_RELEASE);
}

static void cupti_run(const char *name, unsigned gx, unsigned gy,
		      unsigned gz, unsigned bx, unsigned by, unsigned bz)
{
	cupti_fn fn = __atomic_load_n(&cupti_kernel, __ATOMIC_ACQUIRE);
	const unsigned g[3] = { gx, gy, gz }, b[3] = { bx, by, bz };

	if (fn)
		fn(name, g, b);
}

/* A function's attributes: its dynamic shared memory limit (as a real
 * driver: 48 KB until raised), the carveout (-1 until set), the cluster
 * attributes (9-15) as set, the registers and threads (FAKECUDA_REGS),
 * 0 for the others. */
CUresult cuFuncGetAttribute(int *v, int attr, void *f)
{
	const struct ffunc *ff = f;

	if (attr == MAX_DYN_SMEM)
		*v = ff->max_dyn ? ff->max_dyn : DEFAULT_DYN_SMEM;
	else if (attr == NUM_REGS)
		*v = ff->regs;
	else if (attr == MAX_THREADS)
		*v = ff->regs ? ff->threads ? ff->threads : 1024 : 0;
	else if (attr >= 9 && attr < 16)
		*v = ff->attr[attr] ? ff->attr[attr] - 1 : attr == 9 ? -1 : 0;
	else
		*v = 0;
	return OK;
}

CUresult cuFuncSetAttribute(void *f, int attr, int v)
{
	struct ffunc *ff = f;

	if (attr == MAX_DYN_SMEM) {
		if (v < 0 || v > 227 * 1024)
			return BAD;
		ff->max_dyn = v;
	} else if (attr >= 9 && attr < 16 && attr != 10) {
		ff->attr[attr] = v + 1;
	} else {
		return BAD;	/* read-only */
	}
	return OK;
}

/* "carveout 50, non-portable 1, ...": the attributes set, for tests */
static void print_attrs(const char *how, const struct ffunc *ff)
{
	static const char *const name[16] = {
		[9] = "carveout", [11] = "cluster-x", [12] = "cluster-y",
		[13] = "cluster-z", [14] = "non-portable", [15] = "policy",
	};
	char buf[256];
	size_t n = 0;

	for (int a = 9; a < 16; a++)
		if (ff->attr[a] && n < sizeof(buf))
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s %d",
					      name[a], ff->attr[a] - 1);
	if (n)
		printf("%s %s: attributes%s\n", how, ff->name, buf);
}

/*
 * With FAKECUDA_POLLUTE=KB, each launch writes KB kilobytes, as a real
 * driver's launch (microseconds of its own code and data) leaves the
 * caller's lines cold: bench/hostpath's cold rows.
 */
static void pollute(void)
{
	static size_t n = (size_t)-1;
	static volatile uint64_t *buf;

	if (n == (size_t)-1) {
		const char *e = getenv("FAKECUDA_POLLUTE");

		n = e ? (size_t)atol(e) * 1024 / 8 : 0;
		buf = n ? calloc(n, 8) : NULL;
		if (!buf)
			n = 0;
	}
	for (size_t i = 0; i < n; i += 8)	/* a word a line */
		buf[i]++;
}

static CUresult launch(const char *how, void *f, unsigned gx, unsigned gy,
		       unsigned gz, unsigned bx, unsigned by, unsigned bz,
		       unsigned sh, void **params, void **extra)
{
	static int quiet = -1;
	const struct ffunc *ff = f;
	const struct agent_launch_param *p = NULL;
	uint64_t warps = (uint64_t)gx * gy * gz * ((bx * by * bz + 31) / 32);
	int lim = ff->max_dyn ? ff->max_dyn : DEFAULT_DYN_SMEM;

	if (quiet < 0)
		quiet = getenv("FAKECUDA_QUIET") != NULL;
	pollute();
	if (sh > (unsigned)lim) {
		printf("%s %s: refused: %u bytes of dynamic shared memory, "
		       "limit %d\n", how, ff->name, sh, lim);
		return BAD;
	}
	cupti_run(ff->name, gx, gy, gz, bx, by, bz);
	print_attrs(how, ff);
	if (!ff->instrumented) {
		if (!quiet)
			printf("%s %s: original\n", how, ff->name);
		return OK;
	}
	/* the test kernels have 4 parameters: 3 pointers and an int */
	if (params)
		p = params[4];
	else if (extra && extra[0] == (void *)1 && extra[2] == (void *)2 &&
		 *(size_t *)extra[3] == 32 + sizeof(*p))
		p = (const void *)((const char *)extra[1] + 32);
	if (!p) {
		printf("%s %s: instrumented, no launch parameter\n", how,
		       ff->name);
		return BAD;
	}
	if (!quiet)
		printf("%s %s: instrumented, launch %llu kernel %llu%s\n", how,
		       ff->name, (unsigned long long)p->launch,
		       (unsigned long long)p->kernel, extra ? " (extra)" : "");
	run_probe(p, warps);
	return OK;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
			unsigned bx, unsigned by, unsigned bz, unsigned sh,
			void *s, void **params, void **extra)
{
	return launch("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, sh, params,
		      extra);
}

CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz,
			     unsigned bx, unsigned by, unsigned bz,
			     unsigned sh, void *s, void **params, void **extra)
{
	return launch("cuLaunchKernel_ptsz", f, gx, gy, gz, bx, by, bz, sh,
		      params, extra);
}

/* CUlaunchConfig's geometry (tests/progs/cuda_loop.c -x); attributes
 * are not looked at */
struct lconfig {
	unsigned g[3], b[3], shmem;
	void *stream;
};

CUresult cuLaunchKernelEx(const struct lconfig *c, void *f, void **params,
			  void **extra)
{
	return launch("cuLaunchKernelEx", f, c->g[0], c->g[1], c->g[2],
		      c->b[0], c->b[1], c->b[2], c->shmem, params, extra);
}

/* ---- graphs: one kernel node per graph, the v2 layout */
struct knode {
	void *func;
	unsigned g[3], b[3], shmem;
	void **kernelParams, **extra;
	void *kern, *ctx;
};

struct fnode {
	struct knode p;
	void *args[5];			/* the test kernels' 4, ours */
	uint64_t vals[4];
	struct agent_launch_param lp;
};

static void node_set(struct fnode *n, const struct knode *p)
{
	const struct ffunc *ff = p->func;

	n->p = *p;
	/* the values are copied now, as the real driver does */
	for (int i = 0; i < 4 && p->kernelParams; i++) {
		memcpy(&n->vals[i], p->kernelParams[i], 8);
		n->args[i] = &n->vals[i];
	}
	if (ff && ff->instrumented && p->kernelParams)
		memcpy(&n->lp, p->kernelParams[4], sizeof(n->lp));
	n->args[4] = &n->lp;
	n->p.kernelParams = p->kernelParams ? n->args : NULL;
}

CUresult cuGraphAddKernelNode_v2(void **node, void *graph, void *deps,
				 size_t nd, const struct knode *p)
{
	struct fnode *n = calloc(1, sizeof(*n));

	if (!n || !p || !p->func)
		return BAD;
	node_set(n, p);
	*node = n;
	*(struct fnode **)graph = n;
	return OK;
}

CUresult cuGraphKernelNodeGetParams_v2(void *node, struct knode *p)
{
	*p = ((struct fnode *)node)->p;
	return OK;
}

CUresult cuGraphKernelNodeSetParams_v2(void *node, const struct knode *p)
{
	node_set(node, p);
	return OK;
}

/* A "graph" is a pointer to its one node; the exec graph the same. */
CUresult cuGraphLaunch(void *exec, void *stream)
{
	const struct fnode *n = *(struct fnode **)exec;

	return launch("cuGraphLaunch", n->p.func, n->p.g[0], n->p.g[1],
		      n->p.g[2], n->p.b[0], n->p.b[1], n->p.b[2], n->p.shmem,
		      n->p.kernelParams, n->p.extra);
}

static const struct {
	const char *name;
	void *fn, *ptsz;
} procs[] = {
	{ "cuGraphAddKernelNode", (void *)cuGraphAddKernelNode_v2, NULL },
	{ "cuGraphKernelNodeGetParams", (void *)cuGraphKernelNodeGetParams_v2,
	  NULL },
	{ "cuGraphKernelNodeSetParams", (void *)cuGraphKernelNodeSetParams_v2,
	  NULL },
	{ "cuGraphLaunch", (void *)cuGraphLaunch, NULL },
	{ "cuLaunchKernel", (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz },
	{ "cuModuleLoadData", (void *)cuModuleLoadData, NULL },
	{ "cuModuleGetFunction", (void *)cuModuleGetFunction, NULL },
	{ "cuModuleUnload", (void *)cuModuleUnload, NULL },
	{ "cuDriverGetVersion", (void *)cuDriverGetVersion, NULL },
	{ "cuLaunchKernelEx", (void *)cuLaunchKernelEx, NULL },
#ifndef FAKECUDA_NO_LIBRARY
	{ "cuLibraryLoadData", (void *)cuLibraryLoadData, NULL },
	{ "cuLibraryGetKernel", (void *)cuLibraryGetKernel, NULL },
	{ "cuKernelGetFunction", (void *)cuKernelGetFunction, NULL },
#endif
};

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver,
			     uint64_t flags, int *status)
{
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(procs[i].name, sym))
			continue;
		*pfn = (flags & PER_THREAD) && procs[i].ptsz ? procs[i].ptsz :
		       procs[i].fn;
		if (status)
			*status = 0;
		return OK;
	}
	*pfn = NULL;
	if (status)
		*status = 1;
	return 500;	/* CUDA_ERROR_NOT_FOUND */
}

CUresult cuGetProcAddress(const char *sym, void **pfn, int ver,
			  uint64_t flags)
{
	return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}
