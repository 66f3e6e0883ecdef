// SPDX-License-Identifier: MIT
/*
 * A program that compiles a kernel with NVRTC to a cubin and runs it on
 * the fake driver (tests/accept/agent_nvrtc.sh):
 *
 *	agent_nvrtcprog LIBNVRTC OUT.cubin [OPTION...]
 *
 * compiles gt_nvrtc_add with OPTIONs (a cubin: -arch=sm_90), writes the
 * cubin NVRTC gives to OUT.cubin, loads it (cuModuleLoadData) and
 * launches it 5 times, 4 blocks of 64 threads.  Built with -DLINKED it
 * calls NVRTC as a program linked with -lnvrtc does (LIBNVRTC unused);
 * else it dlopens LIBNVRTC (RTLD_LOCAL) and looks every function up with
 * dlsym, as CuPy (ctypes) and PyTorch do.  With NVRTCPROG_LOAD=FILE it
 * loads FILE instead of the cubin it made (a cubin from a cache).  With
 * NVRTCPROG_ALSO=LIB2 it first compiles the same with a second NVRTC
 * library, and says whether that cubin carries .nv_debug_ptx_txt
 * ("also: ptx yes").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*create_fn)(void **, const char *, const char *, int,
			 const char *const *, const char *const *);
typedef int (*compile_fn)(void *, int, const char *const *);
typedef int (*size_fn)(void *, size_t *);
typedef int (*get_fn)(void *, char *);

struct nvrtc {
	create_fn create;
	compile_fn compile;
	size_fn cubin_size, log_size;
	get_fn get_cubin, get_log;
};

int cuModuleLoadData(void **m, const void *image);
int cuModuleGetFunction(void **f, void *m, const char *name);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
		   unsigned bx, unsigned by, unsigned bz, unsigned shmem,
		   void *stream, void **params, void **extra);

#ifdef LINKED
int nvrtcCreateProgram(void **, const char *, const char *, int,
		       const char *const *, const char *const *);
int nvrtcCompileProgram(void *, int, const char *const *);
int nvrtcGetCUBINSize(void *, size_t *);
int nvrtcGetCUBIN(void *, char *);
int nvrtcGetProgramLogSize(void *, size_t *);
int nvrtcGetProgramLog(void *, char *);
#endif

static const char src[] =
	"extern \"C\" __global__ void gt_nvrtc_add(const float *x,\n"
	"\t\tconst float *y, float *out, int n)\n"
	"{\n"
	"\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"\n"
	"\tif (i < n)\n"
	"\t\tout[i] = x[i] + y[i];\n"
	"}\n";

/* LIB's functions, looked up as CuPy's ctypes does; 0 or 1 */
static int nv_open(struct nvrtc *nv, const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	nv->create = (create_fn)dlsym(h, "nvrtcCreateProgram");
	nv->compile = (compile_fn)dlsym(h, "nvrtcCompileProgram");
	nv->cubin_size = (size_fn)dlsym(h, "nvrtcGetCUBINSize");
	nv->get_cubin = (get_fn)dlsym(h, "nvrtcGetCUBIN");
	nv->log_size = (size_fn)dlsym(h, "nvrtcGetProgramLogSize");
	nv->get_log = (get_fn)dlsym(h, "nvrtcGetProgramLog");
	if (!nv->create || !nv->compile || !nv->cubin_size ||
	    !nv->get_cubin || !nv->log_size || !nv->get_log) {
		fprintf(stderr, "%s: NVRTC functions missing\n", lib);
		return 1;
	}
	printf("compile %s\n", (void *)nv->compile ==
	       dlsym(h, "nvrtcCompileProgram") ? "stable" : "differs");
	return 0;
}

/* The cubin of the kernel compiled with OPTS (N), its size in *SIZE. */
static char *nv_cubin(const struct nvrtc *nv, int n, const char *const *opts,
		      size_t *size)
{
	void *prog;
	char *cubin, *log;
	size_t ln;
	int r;

	if (nv->create(&prog, src, "gt_nvrtc_add.cu", 0, NULL, NULL))
		return NULL;
	r = nv->compile(prog, n, opts);
	if (!nv->log_size(prog, &ln) && ln > 1 && (log = malloc(ln))) {
		if (!nv->get_log(prog, log))
			fprintf(stderr, "nvrtc log: %s\n", log);
		free(log);
	}
	if (r) {
		fprintf(stderr, "nvrtcCompileProgram: %d\n", r);
		return NULL;
	}
	if (nv->cubin_size(prog, size) || !(cubin = malloc(*size)) ||
	    nv->get_cubin(prog, cubin)) {
		fprintf(stderr, "no cubin\n");
		return NULL;
	}
	return cubin;
}

int main(int argc, char **argv)
{
	struct nvrtc nv;
	const char *const *opts = (const char *const *)argv + 3;
	void *mod, *f;
	char *cubin;
	size_t n;
	float a[4] = { 0 };
	uint64_t pa = (uintptr_t)a;
	int len = 256;
	void *params[] = { &pa, &pa, &pa, &len };
	FILE *out;

	if (argc < 3) {
		fprintf(stderr, "usage: agent_nvrtcprog LIBNVRTC OUT.cubin "
			"[OPTION...]\n");
		return 2;
	}
	if (getenv("NVRTCPROG_ALSO")) {
		struct nvrtc nv2;

		if (nv_open(&nv2, getenv("NVRTCPROG_ALSO")) ||
		    !(cubin = nv_cubin(&nv2, argc - 3, opts, &n)))
			return 1;
		printf("also: ptx %s\n", memmem(cubin, n, ".nv_debug_ptx_txt",
						17) ? "yes" : "no");
		free(cubin);
	}
#ifdef LINKED
	nv = (struct nvrtc){ nvrtcCreateProgram, nvrtcCompileProgram,
			     nvrtcGetCUBINSize, nvrtcGetProgramLogSize,
			     nvrtcGetCUBIN, nvrtcGetProgramLog };
#else
	if (nv_open(&nv, argv[1]))
		return 1;
#endif
	if (!(cubin = nv_cubin(&nv, argc - 3, opts, &n)))
		return 1;
	out = fopen(argv[2], "wb");
	if (!out || fwrite(cubin, 1, n, out) != n || fclose(out)) {
		perror(argv[2]);
		return 1;
	}
	if (getenv("NVRTCPROG_LOAD")) {
		FILE *in = fopen(getenv("NVRTCPROG_LOAD"), "rb");
		long sz;

		if (!in || fseek(in, 0, SEEK_END) || (sz = ftell(in)) <= 0 ||
		    fseek(in, 0, SEEK_SET) || !(cubin = realloc(cubin, sz)) ||
		    fread(cubin, 1, sz, in) != (size_t)sz) {
			perror(getenv("NVRTCPROG_LOAD"));
			return 1;
		}
		fclose(in);
	}
	if (cuModuleLoadData(&mod, cubin) ||
	    cuModuleGetFunction(&f, mod, "gt_nvrtc_add")) {
		fprintf(stderr, "cannot load the cubin\n");
		return 1;
	}
	for (int i = 0; i < 5; i++)
		if (cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, NULL, params, NULL))
			return 1;
	free(cubin);
	return 0;
}
