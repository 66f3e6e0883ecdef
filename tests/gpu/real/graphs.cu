// SPDX-License-Identifier: MIT
/*
 * CUDA graphs in every form a program makes them, for
 * tests/gpu/real_graphs.sh.  Each form runs a kernel of its own name
 * (g_<form>) over its own array, so a device probe's count per kernel is
 * checked against the launch configuration: warps per launch x the runs
 * the program prints in its "expect" lines.  The program checks its own
 * results ("results ok") and prints a checksum.
 *
 *   stream capture in global, thread-local and relaxed mode (a second
 *   thread captures in global mode while the first one launches plain
 *   kernels), a graph built with cudaGraphAddKernelNode, a child graph,
 *   a clone, an exec graph updated with cudaGraphExecKernelNodeSetParams
 *   and with cudaGraphExecUpdate, a node made with cudaGraphAddNode and
 *   changed with cudaGraphKernelNodeSetParams after a read-back; each
 *   instantiated once and launched LAUNCHES times.
 *
 * Usage: graphs [LAUNCHES]     (default 100)
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, \
		cudaGetErrorString(e_)); exit(2); } } while (0)

#define N	(1 << 16)
#define BLOCK	96	/* 3 warps a block */
#define GRID	((N + BLOCK - 1) / BLOCK)

#define KERNEL(name) \
	__global__ void name(int *a, int n, int v) \
	{ \
		int i = blockIdx.x * blockDim.x + threadIdx.x; \
		if (i < n) \
			a[i] += v * (i % 7 + 1); \
	}
KERNEL(g_cap_global)
KERNEL(g_cap_thread)
KERNEL(g_cap_relaxed)
KERNEL(g_cap_other)
KERNEL(g_plain)
KERNEL(g_manual)
KERNEL(g_child)
KERNEL(g_clone)
KERNEL(g_setparams)
KERNEL(g_update)
KERNEL(g_node)

enum { CAP_GLOBAL, CAP_THREAD, CAP_RELAXED, CAP_OTHER, PLAIN, MANUAL, CHILD,
       CLONE, SETPARAMS, UPDATE, NODE, NFORMS };
static const char *names[NFORMS] = {
	"g_cap_global", "g_cap_thread", "g_cap_relaxed", "g_cap_other",
	"g_plain", "g_manual", "g_child", "g_clone", "g_setparams",
	"g_update", "g_node",
};
static int *dev[NFORMS];
static long long want[NFORMS];	/* sum of v over the runs */
static long long runs[NFORMS];	/* kernel runs */
static int launches = 100;

static void launch_exec(cudaGraphExec_t x, cudaStream_t s, int n)
{
	for (int i = 0; i < n; i++)
		CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
}

static void run_graph(int form, cudaGraph_t g, cudaStream_t s)
{
	cudaGraphExec_t x;

	CK(cudaGraphInstantiate(&x, g, 0));
	launch_exec(x, s, launches);
	want[form] += 3LL * launches;
	runs[form] += 2LL * launches;
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
}

/* Capture two launches of K in MODE, then launch the graph. */
static void captured(int form, void (*k)(int *, int, int),
		     cudaStreamCaptureMode mode, cudaStream_t s)
{
	cudaGraph_t g;

	CK(cudaStreamBeginCapture(s, mode));
	k<<<GRID, BLOCK, 0, s>>>(dev[form], N, 1);
	k<<<GRID, BLOCK, 0, s>>>(dev[form], N, 2);
	CK(cudaStreamEndCapture(s, &g));
	run_graph(form, g, s);
}

/*
 * Another thread, in the default (global) capture mode, while the main
 * thread captures in global mode: kernel launches on a stream of its
 * own are legal, nothing else is; the first one is also the agent's
 * first sight of g_plain.
 */
static cudaStream_t plain_stream;
static void *plain_thread(void *arg)
{
	for (int i = 0; i < 20; i++) {
		g_plain<<<GRID, BLOCK, 0, plain_stream>>>(dev[PLAIN], N, 1);
		usleep(5000);
	}
	return arg;
}

/*
 * A third thread captures too, thread-local, with its own thread in
 * relaxed mode (so it may instantiate while the global capture runs).
 */
static void *capture_thread(void *arg)
{
	cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
	cudaStream_t s = (cudaStream_t)arg;

	CK(cudaThreadExchangeStreamCaptureMode(&m));
	captured(CAP_OTHER, g_cap_other, cudaStreamCaptureModeThreadLocal, s);
	return NULL;
}

static cudaKernelNodeParams kparams(void (*k)(int *, int, int), void **args)
{
	cudaKernelNodeParams p = {};

	p.func = (void *)k;
	p.gridDim = dim3(GRID);
	p.blockDim = dim3(BLOCK);
	p.kernelParams = args;
	return p;
}

int main(int argc, char **argv)
{
	cudaStream_t s;
	pthread_t t1, t2;
	int n = N, one = 1, two = 2;
	unsigned long long sum = 0;
	bool ok = true;

	if (argc > 1)
		launches = atoi(argv[1]);
	for (int f = 0; f < NFORMS; f++) {
		CK(cudaMalloc(&dev[f], N * sizeof(int)));
		CK(cudaMemset(dev[f], 0, N * sizeof(int)));
	}
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	/* 1. captures: global mode while two other threads launch and
	 * capture; the first instrumented launch of the process is the
	 * captured one; then thread-local and relaxed */
	{
		cudaStream_t s2;
		cudaGraph_t g;

		CK(cudaStreamCreateWithFlags(&plain_stream,
					     cudaStreamNonBlocking));
		CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
		CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
		g_cap_global<<<GRID, BLOCK, 0, s>>>(dev[CAP_GLOBAL], N, 1);
		CK(pthread_create(&t1, NULL, plain_thread, NULL) ?
		   cudaErrorUnknown : cudaSuccess);
		CK(pthread_create(&t2, NULL, capture_thread, s2) ?
		   cudaErrorUnknown : cudaSuccess);
		usleep(150 * 1000);	/* the agent's thread works meanwhile */
		pthread_join(t1, NULL);
		g_cap_global<<<GRID, BLOCK, 0, s>>>(dev[CAP_GLOBAL], N, 2);
		CK(cudaStreamEndCapture(s, &g));
		pthread_join(t2, NULL);
		run_graph(CAP_GLOBAL, g, s);
		CK(cudaStreamSynchronize(plain_stream));
		CK(cudaStreamDestroy(plain_stream));
		CK(cudaStreamDestroy(s2));
		want[PLAIN] += 20;
		runs[PLAIN] += 20;
	}
	captured(CAP_THREAD, g_cap_thread, cudaStreamCaptureModeThreadLocal, s);
	captured(CAP_RELAXED, g_cap_relaxed, cudaStreamCaptureModeRelaxed, s);

	/* 2. by hand, a child graph and a clone */
	{
		cudaGraph_t g, child, parent, orig, clone;
		cudaGraphNode_t node;
		cudaGraphExec_t x;
		void *a_m[] = { &dev[MANUAL], &n, &one };
		void *a_c[] = { &dev[CHILD], &n, &two };
		void *a_k[] = { &dev[CLONE], &n, &one };
		cudaKernelNodeParams p;

		CK(cudaGraphCreate(&g, 0));
		p = kparams(g_manual, a_m);
		CK(cudaGraphAddKernelNode(&node, g, NULL, 0, &p));
		CK(cudaGraphInstantiate(&x, g, 0));
		launch_exec(x, s, launches);
		want[MANUAL] += launches;
		runs[MANUAL] += launches;
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(g));

		CK(cudaGraphCreate(&child, 0));
		p = kparams(g_child, a_c);
		CK(cudaGraphAddKernelNode(&node, child, NULL, 0, &p));
		CK(cudaGraphCreate(&parent, 0));
		CK(cudaGraphAddChildGraphNode(&node, parent, NULL, 0, child));
		CK(cudaGraphInstantiate(&x, parent, 0));
		launch_exec(x, s, launches);
		want[CHILD] += 2LL * launches;
		runs[CHILD] += launches;
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(parent));
		CK(cudaGraphDestroy(child));

		CK(cudaGraphCreate(&orig, 0));
		p = kparams(g_clone, a_k);
		CK(cudaGraphAddKernelNode(&node, orig, NULL, 0, &p));
		CK(cudaGraphClone(&clone, orig));
		CK(cudaGraphInstantiate(&x, clone, 0));
		launch_exec(x, s, launches);
		want[CLONE] += launches;
		runs[CLONE] += launches;
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(clone));
		CK(cudaGraphDestroy(orig));
	}

	/* 3. updates: exec-node set-params, exec update, node set-params
	 * after reading the parameters back */
	{
		cudaGraph_t g, g2;
		cudaGraphNode_t node, node2;
		cudaGraphExec_t x;
		cudaGraphExecUpdateResultInfo info;
		void *a1[] = { &dev[SETPARAMS], &n, &one };
		void *a2[] = { &dev[SETPARAMS], &n, &two };
		void *u1[] = { &dev[UPDATE], &n, &one };
		void *u2[] = { &dev[UPDATE], &n, &two };
		cudaKernelNodeParams p;
		int half = launches / 2;

		CK(cudaGraphCreate(&g, 0));
		p = kparams(g_setparams, a1);
		CK(cudaGraphAddKernelNode(&node, g, NULL, 0, &p));
		CK(cudaGraphInstantiate(&x, g, 0));
		launch_exec(x, s, half);
		p = kparams(g_setparams, a2);
		CK(cudaGraphExecKernelNodeSetParams(x, node, &p));
		launch_exec(x, s, launches - half);
		want[SETPARAMS] += half + 2LL * (launches - half);
		runs[SETPARAMS] += launches;
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(g));

		CK(cudaGraphCreate(&g, 0));
		p = kparams(g_update, u1);
		CK(cudaGraphAddKernelNode(&node, g, NULL, 0, &p));
		CK(cudaGraphInstantiate(&x, g, 0));
		launch_exec(x, s, half);
		CK(cudaGraphCreate(&g2, 0));
		p = kparams(g_update, u2);
		CK(cudaGraphAddKernelNode(&node2, g2, NULL, 0, &p));
		CK(cudaGraphExecUpdate(x, g2, &info));
		launch_exec(x, s, launches - half);
		want[UPDATE] += half + 2LL * (launches - half);
		runs[UPDATE] += launches;
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(g2));
		CK(cudaGraphDestroy(g));
	}

	/* 4. the generic node call, then a read-back and set-params */
	{
		cudaGraph_t g;
		cudaGraphNode_t node;
		cudaGraphExec_t x;
		cudaGraphNodeParams np = {};
		cudaKernelNodeParams back;
		void *a1[] = { &dev[NODE], &n, &one };
		void *a2[] = { &dev[NODE], &n, &two };

		CK(cudaGraphCreate(&g, 0));
		np.type = cudaGraphNodeTypeKernel;
		np.kernel.func = (void *)g_node;
		np.kernel.gridDim = dim3(GRID);
		np.kernel.blockDim = dim3(BLOCK);
		np.kernel.kernelParams = a1;
		CK(cudaGraphAddNode(&node, g, NULL, NULL, 0, &np));
		CK(cudaGraphKernelNodeGetParams(node, &back));
		back.kernelParams = a2;
		CK(cudaGraphKernelNodeSetParams(node, &back));
		CK(cudaGraphInstantiate(&x, g, 0));
		launch_exec(x, s, launches);
		want[NODE] += 2LL * launches;
		runs[NODE] += launches;
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(g));
	}

	CK(cudaDeviceSynchronize());
	for (int f = 0; f < NFORMS; f++) {
		int *h = (int *)malloc(N * sizeof(int));

		CK(cudaMemcpy(h, dev[f], N * sizeof(int),
			      cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++) {
			long long w = want[f] * (i % 7 + 1);

			if (h[i] != w) {
				printf("wrong %s[%d]: %d, want %lld\n",
				       names[f], i, h[i], w);
				ok = false;
				break;
			}
			sum = sum * 31 + (unsigned)h[i];
		}
		free(h);
		printf("expect %s runs %lld warps %lld threads %lld\n",
		       names[f], runs[f], runs[f] * GRID * (BLOCK / 32),
		       runs[f] * GRID * BLOCK);
	}
	printf("checksum %llu\n", sum);
	printf(ok ? "results ok\n" : "results WRONG\n");
	return ok ? 0 : 1;
}
