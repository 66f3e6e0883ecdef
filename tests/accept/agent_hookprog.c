// SPDX-License-Identifier: MIT
/*
 * The target of tests/accept/agent_hooks.sh: drives a (fake) libcuda the
 * way the CUDA runtime does (dlopen, dlsym of cuGetProcAddress_v2, every
 * other entry point through it) and the way -lcuda programs do (direct
 * calls), so the test can check that the agent sees both.
 *
 *	agent_hookprog FATBIN KERNEL [OTHER_KERNEL]
 *
 * Loads FATBIN with cuModuleLoadData, launches KERNEL (4 parameters) 4
 * times through cuGetProcAddress pointers (kernelParams, extra, ptsz) and
 * once directly, then OTHER_KERNEL once.  Grid 4 x 64 threads: 8 warps.
 * With HOOKPROG_BENCH=N it then times N more launches of KERNEL through
 * the cuGetProcAddress pointer and prints "ns_per_launch X" (bench/hook).
 * With HOOKPROG_GRAPH it then puts KERNEL in a graph node, launches the
 * graph twice, reads the node's parameters back ("read back: original"
 * when they name KERNEL), sets them again and launches once more.
 * With HOOKPROG_DLOPEN=LIB it dlopens LIB first and dlcloses it between
 * KERNEL's launches and OTHER_KERNEL's.  With HOOKPROG_SMEM=N every launch
 * asks for N bytes of dynamic shared memory, after raising KERNEL's limit
 * to N (cuFuncSetAttribute, as cudaFuncSetAttribute does); with
 * HOOKPROG_SMEM_LATE too, the first launch asks for none and the limit
 * is raised after it.  With
 * HOOKPROG_ATTRS it sets KERNEL's carveout (50), non-portable cluster
 * size (1) and cluster scheduling policy (1) the same way.  With
 * HOOKPROG_WAIT_FILE=F it exits only once F exists (10 s at most).  With
 * HOOKPROG_THREAD, OTHER_KERNEL is launched from a thread that main
 * does not wait for.  With HOOKPROG_LIBRARY, FATBIN (any image) is loaded
 * with cuLibraryLoadData and KERNEL found with cuLibraryGetKernel and
 * cuKernelGetFunction, as the CUDA runtime does since 12.0.
 * does not wait for.  With HOOKPROG_CLOSEFDS=N it first closes the
 * descriptors from 3 to N-1, as daemons and some interpreters do.
 *
 * With HOOKPROG_FORK=N (at most 16), N children made by fork() without
 * exec run all of that instead, the parent making no driver call; they
 * end together (each waits for the others' launches), leaving with
 * _exit() under HOOKPROG_FORK_EXIT (as Python's multiprocessing
 * children do).  The parent prints "child PID" for each and, last,
 * "parent PID", and with
 * HOOKPROG_FORK_IDLE forks one more that makes no driver call ("idle
 * PID").  HOOKPROG_FORK_PARENT: the parent runs it too, after the
 * children; HOOKPROG_FORK_LATE: before forking them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

typedef int CUresult;
typedef CUresult (*gpa_fn)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*load_fn)(void **, const void *);
typedef CUresult (*getfn_fn)(void **, void *, const char *);
typedef CUresult (*libload_fn)(void **, const void *, void *, void *,
			       unsigned, void *, void *, unsigned);
typedef CUresult (*kfunc_fn)(void **, void *);
typedef CUresult (*launch_fn)(void *, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned, void *,
			      void **, void **);

/* the direct, -lcuda way */
CUresult cuFuncSetAttribute(void *, int, int);
CUresult cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned,
			unsigned, unsigned, unsigned, void *, void **,
			void **);

static void *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)n)) &&
	    fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	return p;
}

/* CUDA_KERNEL_NODE_PARAMS_v2 */
struct knode {
	void *func;
	unsigned g[3], b[3], shmem;
	void **kernelParams, **extra;
	void *kern, *ctx;
};
typedef CUresult (*add_fn)(void **, void *, void *, size_t,
			   const struct knode *);
typedef CUresult (*getp_fn)(void *, struct knode *);
typedef CUresult (*setp_fn)(void *, const struct knode *);
typedef CUresult (*glaunch_fn)(void *, void *);

static unsigned smem;	/* HOOKPROG_SMEM */

/* HOOKPROG_THREAD: OTHER_KERNEL's launch, on a thread main does not join */
static struct {
	launch_fn launch;
	void *f, **params;
} other;

static void *launch_other(void *arg)
{
	other.launch(other.f, 4, 1, 1, 64, 1, 1, smem, NULL, other.params,
		     NULL);
	return arg;
}

/* Raise F's dynamic shared memory limit to HOOKPROG_SMEM, and use it. */
static int raise_smem(void *f)
{
	smem = (unsigned)atol(getenv("HOOKPROG_SMEM"));
	if (cuFuncSetAttribute(f, 8, (int)smem)) {
		fprintf(stderr, "cuFuncSetAttribute failed\n");
		return 1;
	}
	return 0;
}

static int graph(gpa_fn gpa, void *f, void **params)
{
	struct knode p = { f, { 4, 1, 1 }, { 64, 1, 1 }, smem, params, NULL,
			   NULL, NULL }, back;
	void *node, *g = NULL;
	add_fn add;
	getp_fn getp;
	setp_fn setp;
	glaunch_fn glaunch;

	if (gpa("cuGraphAddKernelNode", (void **)&add, 12000, 0, NULL) ||
	    gpa("cuGraphKernelNodeGetParams", (void **)&getp, 12000, 0,
		NULL) ||
	    gpa("cuGraphKernelNodeSetParams", (void **)&setp, 12000, 0,
		NULL) ||
	    gpa("cuGraphLaunch", (void **)&glaunch, 12000, 0, NULL) ||
	    add(&node, &g, NULL, 0, &p) || glaunch(&g, NULL) ||
	    glaunch(&g, NULL) || getp(node, &back))
		return 1;
	printf("read back: %s\n", back.func == f ? "original" : "other");
	back.kernelParams = params;
	return setp(node, &back) || glaunch(&g, NULL);
}

static void bench(launch_fn launch, void *f, void **params, long n)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		launch(f, 4, 1, 1, 64, 1, 1, 0, NULL, params, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (n > 0)
		printf("ns_per_launch %.1f\n",
		       ((t1.tv_sec - t0.tv_sec) * 1e9 +
			(t1.tv_nsec - t0.tv_nsec)) / n);
}

static int work(int argc, char **argv)
{
	void *h, *img, *mod = NULL, *f = NULL, *g = NULL, *lib = NULL;
	gpa_fn gpa;
	load_fn load;
	getfn_fn getfn;
	launch_fn launch, launch_ptsz;
	float a[4] = { 0 };
	uint64_t pa = (uintptr_t)a;
	int n = 256;
	void *params[] = { &pa, &pa, &pa, &n };
	unsigned char buf[32];
	size_t size = 28;
	void *extra[] = { (void *)1, buf, (void *)2, &size, (void *)0 };
	pthread_t t;

	if (argc < 3 || !(img = read_all(argv[1]))) {
		fprintf(stderr, "usage: agent_hookprog FATBIN KERNEL [OTHER]\n");
		return 2;
	}
	if (getenv("HOOKPROG_CLOSEFDS"))
		for (int fd = 3; fd < atoi(getenv("HOOKPROG_CLOSEFDS")); fd++)
			close(fd);
	/* RTLD_NEXT must still be relative to the caller, not the agent */
	printf("RTLD_NEXT %s\n", dlsym(RTLD_NEXT, "dlsym") ==
	       dlsym(RTLD_DEFAULT, "dlsym") ? "ok" : "broken");
	h = dlopen("libcuda.so.1", RTLD_NOW);
	gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!gpa || gpa("cuModuleLoadData", (void **)&load, 12000, 0, NULL) ||
	    gpa("cuModuleGetFunction", (void **)&getfn, 12000, 0, NULL) ||
	    gpa("cuLaunchKernel", (void **)&launch, 12000, 0, NULL) ||
	    gpa("cuLaunchKernel", (void **)&launch_ptsz, 12000, 2, NULL)) {
		fprintf(stderr, "no driver entry points: %s\n", dlerror());
		return 1;
	}
	if (getenv("HOOKPROG_DLOPEN") &&
	    !(lib = dlopen(getenv("HOOKPROG_DLOPEN"), RTLD_NOW))) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	if (getenv("HOOKPROG_LIBRARY")) {
		libload_fn libload;
		getfn_fn getkernel;
		kfunc_fn kfunc;
		void *k = NULL;

		if (gpa("cuLibraryLoadData", (void **)&libload, 12000, 0,
			NULL) ||
		    gpa("cuLibraryGetKernel", (void **)&getkernel, 12000, 0,
			NULL) ||
		    gpa("cuKernelGetFunction", (void **)&kfunc, 12000, 0,
			NULL) ||
		    libload(&mod, img, NULL, NULL, 0, NULL, NULL, 0) ||
		    getkernel(&k, mod, argv[2]) || kfunc(&f, k)) {
			fprintf(stderr, "cannot load %s from a library\n",
				argv[2]);
			return 1;
		}
	} else if (load(&mod, img) || getfn(&f, mod, argv[2])) {
		fprintf(stderr, "cannot load %s\n", argv[2]);
		return 1;
	}
	if (getenv("HOOKPROG_SMEM") && !getenv("HOOKPROG_SMEM_LATE") &&
	    raise_smem(f))
		return 1;
	/* a carveout, a cluster of 16 and a scheduling policy, as
	 * cudaFuncSetAttribute sets them */
	if (getenv("HOOKPROG_ATTRS") &&
	    (cuFuncSetAttribute(f, 9, 50) || cuFuncSetAttribute(f, 14, 1) ||
	     cuFuncSetAttribute(f, 15, 1))) {
		fprintf(stderr, "cuFuncSetAttribute failed\n");
		return 1;
	}
	memcpy(buf, &pa, 8);
	memcpy(buf + 8, &pa, 8);
	memcpy(buf + 16, &pa, 8);
	memcpy(buf + 24, &n, 4);
	launch(f, 4, 1, 1, 64, 1, 1, smem, NULL, params, NULL);
	if (getenv("HOOKPROG_SMEM_LATE") && raise_smem(f))
		return 1;
	launch(f, 4, 1, 1, 64, 1, 1, smem, NULL, params, NULL);
	launch(f, 4, 1, 1, 64, 1, 1, smem, NULL, NULL, extra);
	launch_ptsz(f, 4, 1, 1, 64, 1, 1, smem, NULL, params, NULL);
	cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, smem, NULL, params, NULL);
	if (lib)
		dlclose(lib);
	if (argc > 3 && getfn(&g, mod, argv[3]) == 0) {
		if (getenv("HOOKPROG_THREAD")) {
			other.launch = launch;
			other.f = g;
			other.params = params;
			if (pthread_create(&t, NULL, launch_other, NULL) ||
			    pthread_detach(t))
				return 1;
		} else {
			launch(g, 4, 1, 1, 64, 1, 1, smem, NULL, params, NULL);
		}
	}
	if (getenv("HOOKPROG_GRAPH") && graph(gpa, f, params)) {
		fprintf(stderr, "graph calls failed\n");
		return 1;
	}
	if (getenv("HOOKPROG_BENCH"))
		bench(launch, f, params, atol(getenv("HOOKPROG_BENCH")));
	/* exit once FILE exists (up to 10 s): something under way */
	for (int i = 0; getenv("HOOKPROG_WAIT_FILE") && i < 1000 &&
	     access(getenv("HOOKPROG_WAIT_FILE"), F_OK); i++)
		usleep(10000);
	/* a program that lives on: work the agent does in the background */
	if (getenv("HOOKPROG_LINGER_MS"))
		usleep(1000 * (useconds_t)atol(getenv("HOOKPROG_LINGER_MS")));
	free(img);
	return 0;
}

/* HOOKPROG_FORK: a child's life; it leaves once every child launched. */
static void child(int argc, char **argv, int done, int go)
{
	int rc = work(argc, argv);
	char c;

	fflush(stdout);
	if (write(done, "x", 1) != 1 || read(go, &c, 1) < 0)
		rc = 1;
	if (getenv("HOOKPROG_FORK_EXIT"))
		_exit(rc);
	exit(rc);
}

int main(int argc, char **argv)
{
	int n = getenv("HOOKPROG_FORK") ? atoi(getenv("HOOKPROG_FORK")) : 0;
	bool late = getenv("HOOKPROG_FORK_LATE") != NULL;
	int done[2], go[2], rc = 0, st, i;
	pid_t pids[17];
	char c;

	if (n <= 0)
		return work(argc, argv);
	if (n > 16)
		n = 16;
	if (late && (rc = work(argc, argv)))
		return rc;
	fflush(stdout);
	if (pipe(done) || pipe(go))
		return 1;
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i] == 0) {
			close(done[0]);
			close(go[1]);
			child(argc, argv, done[1], go[0]);
		}
	}
	close(done[1]);
	close(go[0]);
	for (i = 0; i < n; i++)
		if (read(done[0], &c, 1) != 1)
			rc = 1;
	close(go[1]);
	if (getenv("HOOKPROG_FORK_IDLE")) {
		pids[n] = fork();
		if (pids[n] == 0)
			exit(0);
		printf("idle %d\n", (int)pids[n]);
		waitpid(pids[n], NULL, 0);
	}
	for (i = 0; i < n; i++) {
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			rc = 1;
		printf("child %d\n", (int)pids[i]);
	}
	if (!late && getenv("HOOKPROG_FORK_PARENT"))
		rc |= work(argc, argv);
	printf("parent %d\n", (int)getpid());
	return rc;
}
