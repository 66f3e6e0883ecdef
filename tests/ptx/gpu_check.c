// SPDX-License-Identifier: MIT
/*
 * gpu_check: run tests/cuda kernels on a real GPU before and after the
 * splice and check that the probes see what they should.  Each kernel is
 * launched twice, original and instrumented (the driver JITs both from
 * PTX); the instrumented launch gets the probe context as its extra last
 * parameter.  Checks: the kernel's outputs are unchanged; every thread
 * runs the entry probe once and an exit probe once; the per-warp text
 * (lowest active lane) counts every lane once at entry and at exit;
 * %gt_t0 gives positive durations; %gt_argN are the launch's arguments
 * by their PTX types.  tests/ptx/run_gpu.sh builds and runs it.
 *
 *   gpu_check DIR [TAG]    DIR holds k_*.ptx from nvcc -ptx; TAG names
 *                          the result lines (default "gpu")
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"

#define MAXARG 14

/* ctx[] slots (u64) */
enum { C_ENTRY, C_EXIT, C_DUR, C_WENTRY, C_WEXIT, C_ARGS = 8,
       C_WORDS = C_ARGS + MAXARG };

static const char entry_text[] =
	"\t.reg .b64 %c, %v;\n"
	"\t.reg .b32 %w<5>;\n"
	"\t.reg .pred %wp;\n"
	"\tcvta.to.global.u64 %c, %gt_ctx;\n"
	"\tred.global.add.u64 [%c], 1;\n"
	/* per warp: the lowest active lane counts the active lanes */
	"\tactivemask.b32 %w0;\n"
	"\tbrev.b32 %w1, %w0;\n"
	"\tbfind.shiftamt.u32 %w2, %w1;\n"
	"\tmov.u32 %w3, %laneid;\n"
	"\tsetp.ne.u32 %wp, %w3, %w2;\n"
	"\t@%wp bra %gt_uniq_nw;\n"
	"\tpopc.b32 %w4, %w0;\n"
	"\tcvt.u64.u32 %v, %w4;\n"
	"\tred.global.add.u64 [%c+24], %v;\n"
	"%gt_uniq_nw:\n"
	/* the grid's first thread records the arguments */
	"\tmov.u32 %w0, %tid.x;\n"
	"\tmov.u32 %w1, %ctaid.x;\n"
	"\tor.b32 %w0, %w0, %w1;\n"
	"\tsetp.ne.u32 %wp, %w0, 0;\n"
	"\t@%wp bra %gt_uniq_na;\n"
	"\tst.global.u64 [%c+64], %gt_arg0;\n"
	"\tst.global.u64 [%c+72], %gt_arg1;\n"
	"\tst.global.u64 [%c+80], %gt_arg2;\n"
	"\tst.global.u64 [%c+88], %gt_arg3;\n"
	"\tst.global.u64 [%c+96], %gt_arg4;\n"
	"\tst.global.u64 [%c+104], %gt_arg5;\n"
	"\tst.global.u64 [%c+112], %gt_arg6;\n"
	"\tst.global.u64 [%c+120], %gt_arg7;\n"
	"\tst.global.u64 [%c+128], %gt_arg8;\n"
	"\tst.global.u64 [%c+136], %gt_arg9;\n"
	"\tst.global.u64 [%c+144], %gt_arg10;\n"
	"\tst.global.u64 [%c+152], %gt_arg11;\n"
	"\tst.global.u64 [%c+160], %gt_arg12;\n"
	"\tst.global.u64 [%c+168], %gt_arg13;\n"
	"%gt_uniq_na:\n";

static const char exit_text[] =
	"\t.reg .b64 %c, %v;\n"
	"\t.reg .b32 %w<5>;\n"
	"\t.reg .pred %wp;\n"
	"\tcvta.to.global.u64 %c, %gt_ctx;\n"
	"\tred.global.add.u64 [%c+8], 1;\n"
	"\tmov.u64 %v, %globaltimer;\n"
	"\tsub.u64 %v, %v, %gt_t0;\n"
	"\tred.global.add.u64 [%c+16], %v;\n"
	"\tactivemask.b32 %w0;\n"
	"\tbrev.b32 %w1, %w0;\n"
	"\tbfind.shiftamt.u32 %w2, %w1;\n"
	"\tmov.u32 %w3, %laneid;\n"
	"\tsetp.ne.u32 %wp, %w3, %w2;\n"
	"\t@%wp bra %gt_uniq_nw;\n"
	"\tpopc.b32 %w4, %w0;\n"
	"\tcvt.u64.u32 %v, %w4;\n"
	"\tred.global.add.u64 [%c+32], %v;\n"
	"%gt_uniq_nw:\n";

/* One kernel argument.  B: int words (i * mul + add) % mod - sub. */
struct garg {
	char k;		/* B buffer, F float buffer, c s i l f d, S struct */
	double v;
	int n;		/* B/F: elements; S: bytes */
	int mul, add, mod, sub;
	int align;	/* S */
};

#define BUF(n, mul, add, mod, sub) { 'B', 0, n, mul, add, mod, sub, 0 }
#define ZBUF(n)		BUF(n, 0, 0, 1, 0)
#define FBUF(n)		{ 'F', 0, n, 0, 0, 0, 0, 0 }
#define SCAL(k, v)	{ k, v, 0, 0, 0, 0, 0, 0 }
#define STRUCT(n, a)	{ 'S', 0, n, 0, 0, 0, 0, a }

struct gcase {
	const char *file, *kernel;
	unsigned grid, block, shmem;
	struct garg args[MAXARG];
};

static const struct gcase cases[] = {
	{ "k_predexit", "_Z5pexitPKjPj", 1, 128, 0,
	  { BUF(128, 1, 0, 1000, 0), ZBUF(256) } },
	{ "k_returns", "_Z8classifyPKiPii", 2, 64, 0,
	  { BUF(128, 1, 0, 7, 2), ZBUF(128), SCAL('i', 100) } },
	{ "k_switch", "_Z2swPi", 1, 32, 0, { BUF(64, 1, 0, 1000, 0) } },
	{ "k_switch", "_Z4spinPVi", 1, 32, 0, { BUF(1, 0, 1, 1000, 0) } },
	{ "k_loop", "_Z5saxpyifPKfPf", 2, 64, 0,
	  { SCAL('i', 200), SCAL('f', 2.5), FBUF(200), FBUF(200) } },
	{ "k_loop", "_Z3triPKiPx", 1, 64, 0,
	  { BUF(64, 1, 0, 9, 0), ZBUF(128) } },
	{ "k_shared", "_Z6reducePKfPf", 2, 256, 0, { FBUF(512), FBUF(2) } },
	{ "k_shared", "_Z3dynPii", 1, 64, 256, { ZBUF(64), SCAL('i', 3) } },
	{ "k_mixed", "_Z5mixedcsilfdPi3bigh4trio4tinyyPKda", 1, 32, 0,
	  { SCAL('c', -3), SCAL('s', -1234), SCAL('i', -5), SCAL('l', -6),
	    SCAL('f', 1.5), SCAL('d', -2.25), ZBUF(1), STRUCT(24, 8),
	    SCAL('c', 200), STRUCT(12, 4), STRUCT(3, 1),
	    SCAL('l', 0x0123456789abcd00), ZBUF(2), SCAL('c', -7) } },
	{ "k_namespace", "_Z6noargsv", 1, 32, 0, { { 0 } } },
	{ "k_namespace", "_ZN5outer5inner4fillEPii", 1, 32, 0,
	  { ZBUF(32), SCAL('i', -7) } },
	{ "k_sm75", "_Z7warpsumPKiPi", 1, 64, 0,
	  { BUF(64, 1, 0, 50, 25), ZBUF(2) } },
	{ "k_sm90", "_Z7boundedPf", 2, 256, 0, { FBUF(512) } },
	{ "k_sm90", "_Z9clusteredPi", 4, 32, 0, { ZBUF(4) } },
	{ "k_sm90a", "_Z8producerPii", 1, 128, 0,
	  { ZBUF(128), SCAL('i', 100) } },
	{ "k_template", "_Z5scaleIfLi4EEvPT_S0_", 1, 32, 0,
	  { FBUF(128), SCAL('f', 2) } },
	{ "k_template", "_Z5scaleIdLi2EEvPT_S0_", 1, 32, 0,
	  { FBUF(128), SCAL('d', 2) } },
	{ "k_template", "_Z5scaleIsLi8EEvPT_S0_", 1, 32, 0,
	  { BUF(128, 1, 0, 100, 0), SCAL('s', 3) } },
	{ "k_template", "_Z5applyI7add_oneEvPiT_", 1, 32, 0,
	  { BUF(32, 1, 0, 100, 0), STRUCT(1, 1) } },
	{ "k_funcs", "_Z4evalPKfPfi", 2, 64, 0,
	  { FBUF(100), FBUF(128), SCAL('i', 100) } },
};

static int failed;
static const char *tag = "gpu";

static void result(bool ok, const char *test, const char *name)
{
	printf("%s %s/%s/%s\n", ok ? "PASS" : "FAIL", tag, test, name);
	failed |= !ok;
}

static const char *cu_err(CUresult r)
{
	const char *s = NULL;

	cuGetErrorString(r, &s);
	return s ? s : "?";
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (n >= 0 && (p = malloc(n + 1)) && fread(p, 1, n, f) == (size_t)n)
		p[n] = 0;
	else if (p)
		p = (free(p), NULL);
	fclose(f);
	return p;
}

static CUmodule load(const char *ptx, const char *what)
{
	char log[8192] = "";
	CUjit_option opt[] = { CU_JIT_ERROR_LOG_BUFFER,
			       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *val[] = { log, (void *)(uintptr_t)sizeof(log) };
	CUmodule mod = NULL;
	CUresult r = cuModuleLoadDataEx(&mod, ptx, 2, opt, val);

	if (r != CUDA_SUCCESS) {
		printf("# %s: JIT failed: %s\n# %s\n", what, cu_err(r), log);
		return NULL;
	}
	return mod;
}

static size_t arg_bytes(const struct garg *a)
{
	return a->n * 4u;	/* B and F: 4-byte elements */
}

/*
 * Launch C's kernel from MOD; CTX (0: none) is appended to the
 * arguments, through kernelParams or, given F (the original kernel as the
 * reader saw it), through one parameter buffer laid out as
 * ptx_ctx_offset() says.  The buffers' contents afterwards go to OUT[i];
 * the expected %gt_argN values to EXPECT.
 */
static bool launch(const struct gcase *c, CUmodule mod, CUdeviceptr ctx,
		   const struct ptx_func *f, void **out, uint64_t *expect)
{
	_Alignas(16) unsigned char pbuf[4096];
	size_t psize = 0;
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, pbuf,
			  CU_LAUNCH_PARAM_BUFFER_SIZE, &psize,
			  CU_LAUNCH_PARAM_END };
	_Alignas(16) unsigned char slot[MAXARG + 1][PTX_CTX_BYTES];
	CUdeviceptr dev[MAXARG] = { 0 };
	void *params[MAXARG + 1];
	int n = 0;
	CUfunction fn;
	CUresult r;
	bool ok = false;

	if ((r = cuModuleGetFunction(&fn, mod, c->kernel))) {
		printf("# %s: %s\n", c->kernel, cu_err(r));
		return false;
	}
	memset(slot, 0, sizeof(slot));
	for (; n < MAXARG && c->args[n].k; n++) {
		const struct garg *a = &c->args[n];
		union { uint64_t u; double d; float f; } b = { 0 };

		switch (a->k) {
		case 'B':
		case 'F': {
			size_t bytes = arg_bytes(a);
			uint32_t *h = malloc(bytes);

			for (int i = 0; i < a->n; i++) {
				if (a->k == 'F') {
					float v = i * 0.5f + 1;

					memcpy(&h[i], &v, 4);
				} else {
					h[i] = (uint32_t)((i * a->mul +
							   a->add) % a->mod -
							  a->sub);
				}
			}
			if (cuMemAlloc(&dev[n], bytes) ||
			    cuMemcpyHtoD(dev[n], h, bytes)) {
				free(h);
				goto out;
			}
			free(h);
			memcpy(slot[n], &dev[n], 8);
			expect[n] = dev[n];
			break;
		}
		case 'c':
			slot[n][0] = (unsigned char)(int)a->v;
			expect[n] = slot[n][0];	/* .u8: zero-extended */
			break;
		case 's': {
			uint16_t v = (uint16_t)(int)a->v;

			memcpy(slot[n], &v, 2);
			expect[n] = v;
			break;
		}
		case 'i': {
			uint32_t v = (uint32_t)(int)a->v;

			memcpy(slot[n], &v, 4);
			expect[n] = v;
			break;
		}
		case 'l': {
			int64_t v = (int64_t)a->v;

			memcpy(slot[n], &v, 8);
			expect[n] = (uint64_t)v;
			break;
		}
		case 'f':
			b.f = (float)a->v;
			memcpy(slot[n], &b.f, 4);
			expect[n] = (uint32_t)b.u;
			break;
		case 'd':
			b.d = a->v;
			memcpy(slot[n], &b.d, 8);
			expect[n] = b.u;
			break;
		case 'S':
			for (int i = 0; i < a->n; i++)
				slot[n][i] = (unsigned char)(i * 17 + 3);
			expect[n] = 0;
			for (int i = 0; i < a->n && i < 8; i++)
				expect[n] |= (uint64_t)slot[n][i] << (8 * i);
			break;
		}
		params[n] = slot[n];
	}
	for (int i = n; i < MAXARG; i++)
		expect[i] = 0;	/* past the end: zero */
	if (ctx) {
		/* the launch parameter: the context pointer first */
		memset(slot[n], 0, PTX_CTX_BYTES);
		memcpy(slot[n], &ctx, 8);
		params[n] = slot[n];
	}
	if (f && f->nparams == n && ptx_ctx_offset(f) + PTX_CTX_BYTES <= sizeof(pbuf)) {
		memset(pbuf, 0, sizeof(pbuf));
		for (int i = 0; i < n; i++) {
			size_t a = f->params[i].align;

			psize = (psize + a - 1) / a * a;
			memcpy(pbuf + psize, slot[i], f->params[i].size);
			psize += f->params[i].size;
		}
		psize = ptx_ctx_offset(f);
		memcpy(pbuf + psize, &ctx, 8);
		psize += PTX_CTX_BYTES;
		r = cuLaunchKernel(fn, c->grid, 1, 1, c->block, 1, 1,
				   c->shmem, NULL, NULL, extra);
	} else if (f) {
		printf("# %s: parameter count %d, want %d\n", c->kernel,
		       f->nparams, n);
		goto out;
	} else {
		r = cuLaunchKernel(fn, c->grid, 1, 1, c->block, 1, 1,
				   c->shmem, NULL, params, NULL);
	}
	if (r || (r = cuCtxSynchronize())) {
		printf("# %s: launch: %s\n", c->kernel, cu_err(r));
		goto out;
	}
	ok = true;
	for (int i = 0; i < n; i++) {
		if (!dev[i])
			continue;
		out[i] = malloc(arg_bytes(&c->args[i]));
		if (cuMemcpyDtoH(out[i], dev[i], arg_bytes(&c->args[i])))
			ok = false;
	}
out:
	for (int i = 0; i < MAXARG; i++)
		if (dev[i])
			cuMemFree(dev[i]);
	return ok;
}

static void run_case(const char *dir, const struct gcase *c, bool buffer)
{
	const char *names[] = { c->kernel, NULL };
	struct ptx_splice_req req = {
		.names = names, .entry = entry_text, .exit = exit_text,
		.flags = PTX_SPLICE_ONLY_MATCHED, .min_major = 7,
	};
	char path[512], err[256], *text, *spliced = NULL;
	struct ptx_module *m = NULL;
	CUmodule orig = NULL, inst = NULL;
	CUdeviceptr ctx = 0;
	void *out0[MAXARG] = { 0 }, *out1[MAXARG] = { 0 };
	uint64_t expect[MAXARG], dummy[MAXARG], h[C_WORDS];
	uint64_t threads = (uint64_t)c->grid * c->block;
	char test[160];
	bool ok;

	snprintf(test, sizeof(test), "%s/%s%s", c->file, c->kernel,
		 buffer ? "/buffer" : "");
	snprintf(path, sizeof(path), "%s/%s.ptx", dir, c->file);
	if (!(text = slurp(path))) {
		result(false, test, "read ptx");
		return;
	}
	if (ptx_parse(text, strlen(text), &m, err, sizeof(err)) ||
	    ptx_splice(m, &req, &spliced, err, sizeof(err)) != 1) {
		printf("# %s\n", err);
		result(false, test, "splice");
		goto out;
	}
	orig = load(text, "original");
	inst = load(spliced, "instrumented");
	result(orig && inst, test, "JIT");
	if (!orig || !inst)
		goto out;
	if (cuMemAlloc(&ctx, sizeof(h)) || cuMemsetD8(ctx, 0, sizeof(h)))
		goto out;
	ok = launch(c, orig, 0, NULL, out0, dummy) &&
	     launch(c, inst, ctx, buffer ? ptx_find_entry(m, c->kernel) : NULL,
		    out1, expect);
	result(ok, test, "launch");
	if (!ok)
		goto out;
	for (int i = 0; i < MAXARG && c->args[i].k; i++)
		if (out0[i] && memcmp(out0[i], out1[i],
				      arg_bytes(&c->args[i])))
			ok = false;
	result(ok, test, "outputs unchanged");
	if (cuMemcpyDtoH(h, ctx, sizeof(h)))
		goto out;
	printf("# %s: threads %llu entry %llu exit %llu warp lanes %llu/%llu "
	       "mean duration %llu ns\n", test, (unsigned long long)threads,
	       (unsigned long long)h[C_ENTRY], (unsigned long long)h[C_EXIT],
	       (unsigned long long)h[C_WENTRY],
	       (unsigned long long)h[C_WEXIT],
	       (unsigned long long)(h[C_EXIT] ? h[C_DUR] / h[C_EXIT] : 0));
	result(h[C_ENTRY] == threads, test, "entry once per thread");
	result(h[C_EXIT] == threads, test, "exit once per thread");
	result(h[C_WENTRY] == threads && h[C_WEXIT] == threads, test,
	       "warp probes count every lane once");
	result(h[C_DUR] > 0 && h[C_DUR] / threads < 10000000000ull, test,
	       "durations from %gt_t0");
	ok = true;
	for (int i = 0; i < MAXARG; i++) {
		if (h[C_ARGS + i] != expect[i]) {
			printf("# arg%d: got %#llx want %#llx\n", i,
			       (unsigned long long)h[C_ARGS + i],
			       (unsigned long long)expect[i]);
			ok = false;
		}
	}
	result(ok, test, "arguments by PTX type");
out:
	for (int i = 0; i < MAXARG; i++) {
		free(out0[i]);
		free(out1[i]);
	}
	if (ctx)
		cuMemFree(ctx);
	if (orig)
		cuModuleUnload(orig);
	if (inst)
		cuModuleUnload(inst);
	ptx_free(m);
	free(spliced);
	free(text);
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUresult r;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: gpu_check DIR [TAG]\n");
		return 2;
	}
	if (argc == 3)
		tag = argv[2];
	if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) ||
	    (r = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    (r = cuCtxSetCurrent(ctx))) {
		printf("SKIP gpu: no usable GPU (%s)\n", cu_err(r));
		return 0;
	}
	/* odd cases pass the context in a parameter buffer; k_mixed both */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_case(argv[1], &cases[i], i % 2);
		if (!strcmp(cases[i].file, "k_mixed"))
			run_case(argv[1], &cases[i], !(i % 2));
	}
	cuDevicePrimaryCtxRelease(dev);
	return failed;
}
