// SPDX-License-Identifier: MIT
/*
 * A C++ driver API workload for stacks on cuda: probes (no GPU: it runs
 * on the fake driver, build/progs/fakecuda/libcuda.so.1).  Each round
 * launches from two call sites, app::Solver<float>::step() once and
 * app::warmup(int) twice, and allocates through app::Pool::grow(unsigned
 * long) (4096 bytes) and app::scratch() (512 bytes) once each;
 * cuda_stack_done() at the end.  No library calls: it links without
 * libstdc++.
 *
 *   cuda_stack [-n ROUNDS] [-w SYM,...] [-k]
 */
#include <signal.h>
#include <unistd.h>

#include "probe_wait.h"

typedef int CUresult;
typedef void *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

extern "C" {
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			unsigned bx, unsigned by, unsigned bz, unsigned shmem,
			CUstream s, void **params, void **extra);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size);

void cuda_stack_done(void)
{
}
}

namespace app {

template <typename T> struct Solver {
	T x;
	int step()
	{
		return cuLaunchKernel(0, 4, 1, 1, 128, 1, 1, 0, 0, 0, 0);
	}
};

int warmup(int n)
{
	return cuLaunchKernel(0, n, 1, 1, 32, 1, 1, 0, 0, 0, 0);
}

struct Pool {
	CUdeviceptr last;
	int grow(unsigned long bytes)
	{
		return cuMemAlloc_v2(&last, bytes);
	}
};

int scratch()
{
	CUdeviceptr p;

	return cuMemAlloc_v2(&p, 512);
}

}

int main(int argc, char **argv)
{
	struct probe_opts o = { .rounds = 3 };
	app::Solver<float> s = { 1.0f };
	app::Pool pool = { 0 };
	int bad = 0;

	if (probe_opts(argc, argv, &o,
		       "usage: cuda_stack [-n ROUNDS] [-w SYM,...] [-k]"))
		return 2;
	if (o.wait && wait_probes("cuda_stack", o.wait))
		return 1;
	for (int r = 0; r < o.rounds; r++) {
		bad |= s.step();
		for (int i = 0; i < 2; i++)
			bad |= app::warmup(i + 1);
		bad |= pool.grow(4096);
		bad |= app::scratch();
	}
	cuda_stack_done();
	if (o.keep)
		pause();
	return bad != 0;
}
