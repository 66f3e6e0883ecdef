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
 * dlsym, as CuPy (ctypes) and PyTorch do.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*create_fn)(void **, const char *, const char *, int,
			 const char *const *, const char *const *);
typedef int (*compile_fn)(void *, int, const char *const *);
typedef int (*size_fn)(void *, size_t *);
typedef int (*get_fn)(void *, char *);

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

int main(int argc, char **argv)
{
	create_fn create;
	compile_fn compile;
	size_fn cubin_size, log_size;
	get_fn get_cubin, get_log;
	void *prog, *mod, *f;
	char *cubin, *log;
	size_t n, ln;
	float a[4] = { 0 };
	uint64_t pa = (uintptr_t)a;
	int len = 256, r;
	void *params[] = { &pa, &pa, &pa, &len };
	FILE *out;

	if (argc < 3) {
		fprintf(stderr, "usage: agent_nvrtcprog LIBNVRTC OUT.cubin "
			"[OPTION...]\n");
		return 2;
	}
#ifdef LINKED
	create = nvrtcCreateProgram;
	compile = nvrtcCompileProgram;
	cubin_size = nvrtcGetCUBINSize;
	get_cubin = nvrtcGetCUBIN;
	log_size = nvrtcGetProgramLogSize;
	get_log = nvrtcGetProgramLog;
#else
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	create = (create_fn)dlsym(h, "nvrtcCreateProgram");
	compile = (compile_fn)dlsym(h, "nvrtcCompileProgram");
	cubin_size = (size_fn)dlsym(h, "nvrtcGetCUBINSize");
	get_cubin = (get_fn)dlsym(h, "nvrtcGetCUBIN");
	log_size = (size_fn)dlsym(h, "nvrtcGetProgramLogSize");
	get_log = (get_fn)dlsym(h, "nvrtcGetProgramLog");
	if (!create || !compile || !cubin_size || !get_cubin || !log_size ||
	    !get_log) {
		fprintf(stderr, "NVRTC functions missing\n");
		return 1;
	}
	printf("compile %s\n", (void *)compile == dlsym(h,
		"nvrtcCompileProgram") ? "stable" : "differs");
#endif
	if (create(&prog, src, "gt_nvrtc_add.cu", 0, NULL, NULL))
		return 1;
	r = compile(prog, argc - 3, (const char *const *)argv + 3);
	if (!log_size(prog, &ln) && ln > 1 && (log = malloc(ln))) {
		if (!get_log(prog, log))
			fprintf(stderr, "nvrtc log: %s\n", log);
		free(log);
	}
	if (r) {
		fprintf(stderr, "nvrtcCompileProgram: %d\n", r);
		return 1;
	}
	if (cubin_size(prog, &n) || !(cubin = malloc(n)) ||
	    get_cubin(prog, cubin)) {
		fprintf(stderr, "no cubin\n");
		return 1;
	}
	out = fopen(argv[2], "wb");
	if (!out || fwrite(cubin, 1, n, out) != n || fclose(out)) {
		perror(argv[2]);
		return 1;
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
