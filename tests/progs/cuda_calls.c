// SPDX-License-Identifier: MIT
/*
 * Every entry point of cuda:memcpy, cuda:malloc, cuda:free and cuda:sync
 * called once a round, through pointers from dlsym of libcuda.so.1 (as
 * the CUDA runtime takes them), each with its own size so that a test
 * can tell them apart (tests/accept/cuda_hostcalls.sh):
 *
 *   memcpy: entry point i of the table below copies 100 * (i + 1) bytes
 *   malloc: entry point i allocates 4096 * (i + 1) bytes (pitch: width
 *           100 * (i + 1), height 3); cuMemAllocAsync also asks for
 *           2 TiB once a round (the fake driver fails it: retval 2)
 *   free:   each entry point once
 *   sync:   each once; cuCtxSynchronize_v2 and cuEventSynchronize once
 *           with a handle and once without (the fake fails those)
 *
 *   cuda_calls [-n ROUNDS] [-t THREADS] [-g GOFILE] [-T]
 *
 * -t: the rounds run in each of THREADS threads at once.  -g: after
 * opening the driver, wait (up to 60 s) until GOFILE exists (for -p:
 * the tracer attaches to a process that has loaded the driver).
 * Prints "calls N failed F" at the end: every call, and those that did
 * not return 0; -T adds the process's CPU time per call (ns).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*fn1)(uint64_t);
typedef int (*fn2)(uint64_t, uint64_t);
typedef int (*fn3)(uint64_t, uint64_t, uint64_t);
typedef int (*fn4)(uint64_t, uint64_t, uint64_t, uint64_t);
typedef int (*fn5)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

static const char *const copies[] = {
	"cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyHtoDAsync_v2",
	"cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds",
	"cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoD_v2",
	"cuMemcpyDtoD_v2_ptds", "cuMemcpyDtoDAsync_v2",
	"cuMemcpyDtoDAsync_v2_ptsz", "cuMemcpy", "cuMemcpy_ptds",
	"cuMemcpyAsync", "cuMemcpyAsync_ptsz",
};
/* (out, size[, x[, y]]): the extra arguments as the table says */
static const struct { const char *name; int nargs; } allocs[] = {
	{ "cuMemAlloc_v2", 2 }, { "cuMemAllocAsync", 3 },
	{ "cuMemAllocAsync_ptsz", 3 }, { "cuMemAllocFromPoolAsync", 4 },
	{ "cuMemAllocFromPoolAsync_ptsz", 4 }, { "cuMemAllocManaged", 3 },
	{ "cuMemAllocHost_v2", 2 }, { "cuMemHostAlloc", 3 },
	{ "cuMemAllocPitch_v2", 5 },
};
static const struct { const char *name; int nargs; } frees[] = {
	{ "cuMemFree_v2", 1 }, { "cuMemFreeAsync", 2 },
	{ "cuMemFreeAsync_ptsz", 2 }, { "cuMemFreeHost", 1 },
};
static const char *const syncs[] = {
	"cuCtxSynchronize", "cuCtxSynchronize_v2", "cuStreamSynchronize",
	"cuStreamSynchronize_ptsz", "cuEventSynchronize",
};

#define N(a)	(sizeof(a) / sizeof(a[0]))
static void *pc[N(copies)], *pa[N(allocs)], *pf[N(frees)], *ps[N(syncs)];
static int rounds = 1;
static long calls, failed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void count(int r)
{
	pthread_mutex_lock(&lock);
	calls++;
	failed += r != 0;
	pthread_mutex_unlock(&lock);
}

static void *work(void *arg)
{
	uint64_t out = 0, pitch = 0, host[64];

	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < N(copies); i++) {
			uint64_t n = 100 * (i + 1);

			count(strstr(copies[i], "Async") ?
			      ((fn4)pc[i])(0x7000, (uintptr_t)host, n, 0x5) :
			      ((fn3)pc[i])(0x7000, (uintptr_t)host, n));
		}
		for (size_t i = 0; i < N(allocs); i++) {
			uint64_t n = 4096 * (i + 1), o = (uintptr_t)&out;

			switch (allocs[i].nargs) {
			case 2:
				count(((fn2)pa[i])(o, n));
				break;
			case 3:
				count(((fn3)pa[i])(o, n, 0x5));
				break;
			case 4:
				count(((fn4)pa[i])(o, n, 0x9, 0x5));
				break;
			default:	/* pitch: width, height, element */
				count(((fn5)pa[i])(o, (uintptr_t)&pitch,
						   100 * (i + 1), 3, 4));
			}
		}
		count(((fn3)pa[1])((uintptr_t)&out, 2ull << 40, 0x5));
		for (size_t i = 0; i < N(frees); i++)
			count(frees[i].nargs == 1 ?
			      ((fn1)pf[i])(0x7000 + i) :
			      ((fn2)pf[i])(0x7000 + i, 0x5));
		for (size_t i = 0; i < N(syncs); i++) {
			count(((fn1)ps[i])(0x5));
			if (i == 1 || i == 4)
				count(((fn1)ps[i])(0));
		}
	}
	return arg;
}

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "cuda_calls: no %s in libcuda.so.1\n", name);
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	const char *go = NULL;
	int threads = 1, c, cpu = 0;
	struct timespec t0, t1;
	pthread_t t[64];
	void *lib;

	while ((c = getopt(argc, argv, "n:t:g:T")) != -1) {
		switch (c) {
		case 'n':
			rounds = atoi(optarg);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 'g':
			go = optarg;
			break;
		case 'T':
			cpu = 1;
			break;
		default:
			fprintf(stderr, "usage: cuda_calls [-n ROUNDS] [-t THREADS] [-g GOFILE] [-T]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > 64)
		threads = 1;
	lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "cuda_calls: %s\n", dlerror());
		return 2;
	}
	for (int i = 0; go && access(go, F_OK) && i < 6000; i++) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
	}
	/* looked up after the wait: with -p, from the hooked driver */
	for (size_t i = 0; i < N(copies); i++)
		pc[i] = sym(lib, copies[i]);
	for (size_t i = 0; i < N(allocs); i++)
		pa[i] = sym(lib, allocs[i].name);
	for (size_t i = 0; i < N(frees); i++)
		pf[i] = sym(lib, frees[i].name);
	for (size_t i = 0; i < N(syncs); i++)
		ps[i] = sym(lib, syncs[i]);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	if (threads == 1) {
		work(NULL);
	} else {
		for (int i = 0; i < threads; i++)
			pthread_create(&t[i], NULL, work, NULL);
		for (int i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	printf("calls %ld failed %ld\n", calls, failed);
	if (cpu && calls)
		printf("cpu %.1f ns per call\n",
		       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
		       calls);
	return 0;
}
