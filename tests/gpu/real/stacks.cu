// SPDX-License-Identifier: MIT
/*
 * The target of tests/gpu/stacks.sh: kernels launched from two C++ call
 * sites, app::Solver<float>::step() (ROUNDS times) and app::warmup(int*)
 * (twice a round), and device memory from app::scratch() (1024 bytes)
 * and app::Pool::grow(unsigned long) (8192 bytes).  Then it calls
 * stacks_done() (a uprobe there ends the trace) and stays alive for two
 * seconds, so its frames can still be named.  Prints "results ok".
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

namespace app {
__global__ void bump(int *p)
{
	atomicAdd(&p[threadIdx.x], 1);
}

template <typename T> struct Solver {
	int *d;
	NOINLINE void step() { bump<<<1, 32>>>(d); }
};

NOINLINE void warmup(int *d)
{
	bump<<<1, 32>>>(d);
}

NOINLINE void *scratch()
{
	void *p = NULL;

	cudaMalloc(&p, 1024);
	return p;
}

struct Pool {
	NOINLINE void *grow(unsigned long n)
	{
		void *p = NULL;

		cudaMalloc(&p, n);
		return p;
	}
};
} // namespace app

extern "C" NOINLINE void stacks_done(void)
{
	__asm__ volatile("");
}

int main(void)
{
	const int rounds = 2;
	app::Solver<float> s;
	app::Pool pool;
	int h[32];

	cudaMalloc(&s.d, 32 * sizeof(int));
	cudaMemset(s.d, 0, 32 * sizeof(int));
	for (int r = 0; r < rounds; r++) {
		s.step();
		app::warmup(s.d);
		app::warmup(s.d);
	}
	void *a = app::scratch(), *b = pool.grow(8192);
	cudaMemcpy(h, s.d, sizeof(h), cudaMemcpyDeviceToHost);
	bool ok = a && b;
	for (int i = 0; i < 32; i++)
		ok = ok && h[i] == 3 * rounds;
	printf(ok ? "results ok\n" : "results WRONG\n");
	fflush(stdout);
	stacks_done();
	sleep(2);
	return ok ? 0 : 1;
}
