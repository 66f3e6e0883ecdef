// SPDX-License-Identifier: MIT
// GPU: several CUDA processes under one -c (tests/gpu/multiproc.sh).
// `multiproc exec` starts two workers as a launcher does (fork, then
// exec of this program); `multiproc fork` forks them without exec (the
// parent never touched CUDA; they leave with _exit, as Python's
// multiprocessing children do); `multiproc forkparent` does the same,
// then the parent runs worker 2 itself once they are gone.  Worker i
// launches mp_vadd 3 * (i + 1) times, 64 blocks of 128 threads, and
// prints "worker PID launches N ok".  Built with -DMP_LIB it is a
// library with mp_worker(i) alone (multiproc.sh's Python children).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void mp_vadd(const float *a, float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		b[i] += a[i];
}

extern "C" int mp_worker(int id)
{
	const int n = 64 * 128, runs = 3 * (id + 1);
	float *a, *b, h[n];

	for (int i = 0; i < n; i++)
		h[i] = 1.0f;
	cudaMalloc(&a, sizeof(h));
	cudaMalloc(&b, sizeof(h));
	cudaMemcpy(a, h, sizeof(h), cudaMemcpyHostToDevice);
	cudaMemset(b, 0, sizeof(h));
	for (int r = 0; r < runs; r++)
		mp_vadd<<<64, 128>>>(a, b, n);
	cudaMemcpy(h, b, sizeof(h), cudaMemcpyDeviceToHost);
	bool ok = cudaGetLastError() == cudaSuccess;
	for (int i = 0; i < n; i++)
		ok = ok && h[i] == (float)runs;
	printf("worker %d launches %d %s\n", (int)getpid(), runs,
	       ok ? "ok" : "WRONG");
	fflush(stdout);
	return ok ? 0 : 1;
}

#ifndef MP_LIB
int main(int argc, char **argv)
{
	int status, bad = 0;

	if (argc == 3 && !strcmp(argv[1], "worker"))
		return mp_worker(atoi(argv[2]));
	if (argc != 2 || (strcmp(argv[1], "exec") &&
			  strncmp(argv[1], "fork", 4))) {
		fprintf(stderr, "usage: multiproc exec|fork|forkparent\n");
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		pid_t p = fork();
		char id[8];

		if (p < 0)
			return 1;
		if (p)
			continue;
		if (!strncmp(argv[1], "fork", 4))
			_exit(mp_worker(i));
		snprintf(id, sizeof(id), "%d", i);
		execl("/proc/self/exe", argv[0], "worker", id, (char *)NULL);
		_exit(127);
	}
	while (wait(&status) > 0)
		bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	if (!strcmp(argv[1], "forkparent"))
		bad |= mp_worker(2);
	return bad;
}
#endif
