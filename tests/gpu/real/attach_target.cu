// SPDX-License-Identifier: MIT
/*
 * The target of tests/gpu/attach.sh: a long-running program that gputrace
 * -p attaches to.  One kernel, attach_k, 16 blocks x 128 threads (64 warps
 * a launch), launched every ~2 ms from two threads: thread 1 through the
 * runtime (<<<>>>), and every 4th time a graph instantiated at start;
 * thread 2 through the driver API (cuLaunchKernel on the CUfunction of
 * cudaGetFuncBySymbol).  Each launch adds (i % 7) + 1 to element i of its
 * own buffer, so the end result says how many launches of each kind ran.
 *
 *	attach_target READY_FILE
 *
 * SIGUSR1 pauses the launches (the threads finish the current one and
 * synchronize), SIGUSR2 resumes them; each pause prints
 *	paused rt R drv D graph G free F threads T
 * (launches so far, cuMemGetInfo's free bytes, the process's threads).
 * SIGTERM ends it: "results ok" when every buffer holds what its count
 * says, then the same line as a pause.  Exit 0 when the results are ok.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#define BLOCKS 16
#define THREADS 128
#define N (BLOCKS * THREADS)

__global__ void attach_k(unsigned *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] += (unsigned)(i % 7) + 1;
}

static volatile sig_atomic_t want_pause, done;
static volatile int idle[2];
static long nrt, ndrv, ngraph;
static unsigned *buf_rt, *buf_drv, *buf_graph;
static cudaGraphExec_t gexec;
static CUfunction drv_fn;

static void on_usr1(int) { want_pause = 1; }
static void on_usr2(int) { want_pause = 0; }
static void on_term(int) { done = 1; }

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CKD(x) do { CUresult e_ = (x); if (e_ != CUDA_SUCCESS) { \
	fprintf(stderr, "%s: %d\n", #x, (int)e_); exit(1); } } while (0)

static void nap(long ns)
{
	struct timespec t = { 0, ns };

	nanosleep(&t, NULL);
}

static void *runtime_thread(void *)
{
	cudaStream_t s;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (long i = 0; !done; i++) {
		if (want_pause) {
			idle[0] = 1;
			nap(1000000);
			continue;
		}
		idle[0] = 0;
		if (i % 4 == 3) {
			CK(cudaGraphLaunch(gexec, s));
			CK(cudaStreamSynchronize(s));
			__atomic_add_fetch(&ngraph, 1, __ATOMIC_RELAXED);
		} else {
			attach_k<<<BLOCKS, THREADS, 0, s>>>(buf_rt, N);
			CK(cudaGetLastError());
			CK(cudaStreamSynchronize(s));
			__atomic_add_fetch(&nrt, 1, __ATOMIC_RELAXED);
		}
		nap(2000000);
	}
	idle[0] = 1;
	return NULL;
}

static void *driver_thread(void *)
{
	CUstream s;
	int n = N;
	void *args[] = { &buf_drv, &n };

	CK(cudaSetDevice(0));	/* the primary context, current here too */
	CKD(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	while (!done) {
		if (want_pause) {
			idle[1] = 1;
			nap(1000000);
			continue;
		}
		idle[1] = 0;
		CKD(cuLaunchKernel(drv_fn, BLOCKS, 1, 1, THREADS, 1, 1, 0, s,
				   args, NULL));
		CKD(cuStreamSynchronize(s));
		__atomic_add_fetch(&ndrv, 1, __ATOMIC_RELAXED);
		nap(2000000);
	}
	idle[1] = 1;
	return NULL;
}

static int nthreads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void say(const char *what)
{
	size_t fr = 0, tot = 0;

	cudaMemGetInfo(&fr, &tot);
	printf("%s rt %ld drv %ld graph %ld free %zu threads %d\n", what,
	       __atomic_load_n(&nrt, __ATOMIC_RELAXED),
	       __atomic_load_n(&ndrv, __ATOMIC_RELAXED),
	       __atomic_load_n(&ngraph, __ATOMIC_RELAXED), fr, nthreads());
	fflush(stdout);
}

static bool check(const unsigned *d, long count, const char *what)
{
	std::vector<unsigned> h(N);

	CK(cudaMemcpy(h.data(), d, N * sizeof(unsigned),
		      cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		if (h[i] != (unsigned)(count * ((i % 7) + 1))) {
			printf("results BAD: %s[%d] = %u after %ld launches\n",
			       what, i, h[i], count);
			return false;
		}
	return true;
}

int main(int argc, char **argv)
{
	struct sigaction s1 = {}, s2 = {}, st = {};
	cudaStream_t cs;
	cudaGraph_t g;
	pthread_t t[2];
	int n = N;
	bool was = false, ok;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: attach_target READY_FILE\n");
		return 2;
	}
	s1.sa_handler = on_usr1;
	s2.sa_handler = on_usr2;
	st.sa_handler = on_term;
	sigaction(SIGUSR1, &s1, NULL);
	sigaction(SIGUSR2, &s2, NULL);
	sigaction(SIGTERM, &st, NULL);
	CK(cudaSetDevice(0));
	CK(cudaMalloc(&buf_rt, N * sizeof(unsigned)));
	CK(cudaMalloc(&buf_drv, N * sizeof(unsigned)));
	CK(cudaMalloc(&buf_graph, N * sizeof(unsigned)));
	CK(cudaMemset(buf_rt, 0, N * sizeof(unsigned)));
	CK(cudaMemset(buf_drv, 0, N * sizeof(unsigned)));
	CK(cudaMemset(buf_graph, 0, N * sizeof(unsigned)));
	CK(cudaGetFuncBySymbol((cudaFunction_t *)&drv_fn, (const void *)attach_k));
	/* the graph: captured once, before any attach */
	CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
	CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
	attach_k<<<BLOCKS, THREADS, 0, cs>>>(buf_graph, n);
	CK(cudaStreamEndCapture(cs, &g));
	CK(cudaGraphInstantiate(&gexec, g, 0));
	if (pthread_create(&t[0], NULL, runtime_thread, NULL) ||
	    pthread_create(&t[1], NULL, driver_thread, NULL))
		return 1;
	while (!nrt || !ndrv)
		nap(1000000);
	f = fopen(argv[1], "w");
	if (f)
		fclose(f);
	while (!done) {
		if (want_pause && !was && idle[0] && idle[1]) {
			say("paused");
			was = true;
		}
		if (!want_pause)
			was = false;
		nap(2000000);
	}
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	ok = check(buf_rt, nrt, "runtime") && check(buf_drv, ndrv, "driver") &&
	     check(buf_graph, ngraph, "graph");
	if (ok)
		printf("results ok\n");
	say("end");
	return ok ? 0 : 1;
}
