// SPDX-License-Identifier: MIT
/*
 * Launches in a loop, as the CUDA runtime makes them: libcuda.so.1
 * dlopened, cuLaunchKernel through a pointer from dlsym.  For
 * tests/accept/cuda_hostpath.sh and bench/hostpath; any driver will do
 * (the toolkit's stub returns at once).
 *
 *   cuda_loop [-t THREADS] [-n LAUNCHES] [-r RATE] [-m | -l] [-x] [-k K]
 *
 * -r: each thread launches at most RATE times a second (paced every 100
 * launches), else as fast as it can.
 * Thread i (0-based) launches LAUNCHES times with grid (i + 1) x 1 x 1,
 * block 32, on function handle 0x100 + i; with -m, on kernel "k<i>" of a
 * module loaded from a PTX image (cuModuleLoadData, cuModuleGetFunction:
 * a driver whose launches look at the handle, as
 * tests/accept/agent_fakecuda.c's, and kernel names for the clauses);
 * with -l, as the CUDA runtime of CUDA 12 and later does it: a library
 * (cuLibraryLoadData), its CUkernel handles (cuLibraryGetKernel) passed
 * to the launch as the function.  -x: launched by cuLaunchKernelEx (one
 * config per thread), as that runtime's cudaLaunchKernel.  -k: K kernels
 * (handles, or k0..k<K-1>), which each thread launches in turn: launch j
 * of thread i on kernel (i + j) % K, so one thread sees many handles (the
 * agent's per-thread name cache has 64 lines).  At the end, on stderr:
 * "cuda_loop: T threads x N launches: X ns per launch" (the launch
 * loops only: the threads' wall time over all launches).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz,
			 unsigned bx, unsigned by, unsigned bz,
			 unsigned shmem, void *stream, void **params,
			 void **extra);

typedef int (*load_fn)(void **mod, const void *image);
typedef int (*libload_fn)(void **lib, const void *code, void *jo, void **jv,
			  unsigned nj, void *lo, void **lv, unsigned nl);
/* CUlaunchConfig, no attributes */
struct lconfig {
	unsigned g[3], b[3], shmem;
	void *stream;
	void *attrs;
	unsigned nattrs;
};
typedef int (*launch_ex_fn)(const struct lconfig *c, void *f, void **params,
			    void **extra);
typedef int (*getfn_fn)(void **f, void *mod, const char *name);

static launch_fn launch;
static launch_ex_fn launch_ex;
static void *func[256];
static long nlaunch = 200000, rate, nk;
static pthread_barrier_t go;

static uint64_t cpu_ns[256];

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *worker(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	uint64_t t0, start;

	pthread_barrier_wait(&go);
	t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	start = now_ns(CLOCK_MONOTONIC);
	struct lconfig cfg = { { (unsigned)i + 1, 1, 1 }, { 32, 1, 1 } };

	for (long k = 0; k < nlaunch; k++) {
		void *f = nk ? func[(i + k) % nk] : func[i];

		if (launch_ex)
			launch_ex(&cfg, f, NULL, NULL);
		else
			launch(f, (unsigned)i + 1, 1, 1, 32, 1, 1, 0, NULL, NULL,
			       NULL);
		if (rate && k % 100 == 99) {
			uint64_t due = start + (uint64_t)(k + 1) * 1000000000ull / rate;
			struct timespec ts = { due / 1000000000ull,
					       due % 1000000000ull };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
	cpu_ns[i] = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

/* -m: kernels k0..k<N-1> of a PTX module, for the threads; -l: of a
 * library, as CUkernel handles */
static int modfuncs(void *lib, long n, int library)
{
	load_fn load = (load_fn)dlsym(lib, "cuModuleLoadData");
	libload_fn libload = (libload_fn)dlsym(lib, "cuLibraryLoadData");
	getfn_fn getfn = (getfn_fn)dlsym(lib, library ? "cuLibraryGetKernel" :
					 "cuModuleGetFunction");
	static char ptx[256 * 40 + 64];
	/* a library's image: not text, so agent_fakecuda.c takes it for a
	 * cubin (of no kernels the agent could read) */
	static const unsigned char bin[64] = { 1 };
	size_t len;
	void *m;

	len = (size_t)snprintf(ptx, sizeof(ptx),
			       ".version 8.0\n.target sm_90\n.address_size 64\n");
	for (long i = 0; i < n; i++)
		len += (size_t)snprintf(ptx + len, sizeof(ptx) - len,
					".visible .entry k%ld() { ret; }\n", i);
	if (!getfn || (library ? !libload ||
		       libload(&m, bin, NULL, NULL, 0, NULL, NULL, 0) :
		       !load || load(&m, ptx))) {
		fprintf(stderr, "cuda_loop: cannot load the module\n");
		return -1;
	}
	for (long i = 0; i < n; i++) {
		char name[24];

		snprintf(name, sizeof(name), "k%ld", i);
		if (getfn(&func[i], m, name)) {
			fprintf(stderr, "cuda_loop: no function %s\n", name);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long nthreads = 1;
	pthread_t th[256];
	uint64_t t0, t1, cpu = 0;
	void *lib;
	int c, mod = 0, library = 0, ex = 0;

	while ((c = getopt(argc, argv, "t:n:r:mlxk:")) != -1) {
		if (c == 'm')
			mod = 1;
		else if (c == 'l')
			mod = library = 1;
		else if (c == 'x')
			ex = 1;
		else if (c == 't')
			nthreads = atol(optarg);
		else if (c == 'r')
			rate = atol(optarg);
		else if (c == 'n')
			nlaunch = atol(optarg);
		else if (c == 'k')
			nk = atol(optarg);
		else
			return 2;
	}
	if (nthreads < 1 || nthreads > 256 || nlaunch < 1 || nk < 0 ||
	    nk > 256)
		return 2;
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "cuda_loop: %s\n", dlerror());
		return 1;
	}
	launch = (launch_fn)dlsym(lib, "cuLaunchKernel");
	if (ex)
		launch_ex = (launch_ex_fn)dlsym(lib, "cuLaunchKernelEx");
	if (!launch || (ex && !launch_ex)) {
		fprintf(stderr, "cuda_loop: no cuLaunchKernel%s\n", ex ? "Ex" : "");
		return 1;
	}
	for (long i = 0; i < 256; i++)
		func[i] = (void *)(0x100 + i);
	if (mod && modfuncs(lib, nk > nthreads ? nk : nthreads, library))
		return 1;
	pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i))
			return 1;
	pthread_barrier_wait(&go);
	t0 = now_ns(CLOCK_MONOTONIC);
	for (long i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		cpu += cpu_ns[i];
	}
	t1 = now_ns(CLOCK_MONOTONIC);
	fprintf(stderr, "cuda_loop: %ld threads x %ld launches: %.1f ns per launch (wall), %.1f ns CPU\n",
		nthreads, nlaunch,
		(double)(t1 - t0) / ((double)nthreads * nlaunch),
		(double)cpu / ((double)nthreads * nlaunch));
	return 0;
}
