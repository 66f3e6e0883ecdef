// SPDX-License-Identifier: MIT
/*
 * Blocks that wait on each other: a single-pass inclusive scan with
 * decoupled look-back, the scheme of CUB's scan and onesweep kernels.
 * Each block takes a ticket (so a block only ever waits on blocks that
 * started before it), publishes its aggregate, then one thread walks
 * back over its predecessors' published values, spinning until each is
 * ready, and publishes its inclusive prefix.  Probes that made a block
 * wait for anything, or delayed a publish behind another block, would
 * hang this program or slow every block behind it.
 *
 * Prints "expect lb_scan runs R warps W threads T blocks B" (what the
 * launch configuration gives), a checksum and "results ok" when every
 * output matches the host's scan.
 *
 * Usage: lookback [ROUNDS]	(default 5)
 */
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)

#define BT	256		/* threads per block */
#define IPT	8		/* items per thread */
#define TILE	(BT * IPT)
#define N	(1 << 24)
#define NB	(N / TILE)

/* status word: flag in the top two bits, 32-bit sum below */
#define F_AGG	(1ull << 62)	/* this block's own sum */
#define F_INC	(2ull << 62)	/* sum of everything up to and with it */

__device__ __forceinline__ unsigned long long load_status(
	const unsigned long long *p)
{
	unsigned long long v;

	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
	return v;
}

__device__ __forceinline__ void store_status(unsigned long long *p,
					     unsigned long long v)
{
	asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

__global__ void __launch_bounds__(BT) lb_scan(const unsigned *in, unsigned *out,
					      unsigned long long *status,
					      unsigned *ticket)
{
	__shared__ unsigned s_bid, s_prefix, s_warp[BT / 32];
	unsigned v[IPT], sum = 0, lane = threadIdx.x % 32, warp = threadIdx.x / 32;

	if (threadIdx.x == 0)
		s_bid = atomicAdd(ticket, 1);
	__syncthreads();
	unsigned bid = s_bid;
	const unsigned *src = in + (size_t)bid * TILE + threadIdx.x * IPT;

	for (int i = 0; i < IPT; i++) {
		sum += src[i];
		v[i] = sum;
	}
	/* block scan of the thread sums: in the warp, then over warps */
	unsigned x = sum;
	for (int d = 1; d < 32; d *= 2) {
		unsigned y = __shfl_up_sync(0xffffffffu, x, d);
		if (lane >= d)
			x += y;
	}
	if (lane == 31)
		s_warp[warp] = x;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned run = 0, agg, prefix = 0;

		for (int w = 0; w < BT / 32; w++) {
			unsigned t = s_warp[w];
			s_warp[w] = run;
			run += t;
		}
		agg = run;
		if (bid == 0) {
			store_status(&status[0], F_INC | agg);
		} else {
			store_status(&status[bid], F_AGG | agg);
			/* look back: wait for each predecessor to publish */
			for (int p = (int)bid - 1; p >= 0; p--) {
				unsigned long long s;

				while (!((s = load_status(&status[p])) >> 62))
					;
				prefix += (unsigned)s;
				if ((s >> 62) == 2)
					break;
			}
			store_status(&status[bid], F_INC | (unsigned)(prefix + agg));
		}
		s_prefix = prefix;
	}
	__syncthreads();
	unsigned base = s_prefix + s_warp[warp] + x - sum;
	unsigned *dst = out + (size_t)bid * TILE + threadIdx.x * IPT;

	for (int i = 0; i < IPT; i++)
		dst[i] = base + v[i];
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	std::vector<unsigned> h(N), got(N);
	unsigned *in, *out, *ticket;
	unsigned long long *status, sum = 0;
	bool ok = true;

	for (unsigned i = 0; i < N; i++)
		h[i] = (i * 2654435761u) >> 29;
	CK(cudaMalloc(&in, N * sizeof(unsigned)));
	CK(cudaMalloc(&out, N * sizeof(unsigned)));
	CK(cudaMalloc(&status, NB * sizeof(unsigned long long)));
	CK(cudaMalloc(&ticket, sizeof(unsigned)));
	CK(cudaMemcpy(in, h.data(), N * sizeof(unsigned), cudaMemcpyHostToDevice));
	for (int r = 0; r < rounds; r++) {
		CK(cudaMemset(status, 0, NB * sizeof(unsigned long long)));
		CK(cudaMemset(ticket, 0, sizeof(unsigned)));
		lb_scan<<<NB, BT>>>(in, out, status, ticket);
		CK(cudaGetLastError());
	}
	CK(cudaMemcpy(got.data(), out, N * sizeof(unsigned), cudaMemcpyDeviceToHost));
	unsigned want = 0;
	for (unsigned i = 0; i < N; i++) {
		want += h[i];
		if (got[i] != want && ok) {
			printf("wrong [%u]: %u, want %u\n", i, got[i], want);
			ok = false;
		}
		sum = sum * 31 + got[i];
	}
	printf("expect lb_scan runs %d warps %lld threads %lld blocks %lld\n",
	       rounds, (long long)rounds * NB * (BT / 32),
	       (long long)rounds * NB * BT, (long long)rounds * NB);
	printf("checksum %llu\n", sum);
	printf(ok ? "results ok\n" : "results WRONG\n");
	return ok ? 0 : 1;
}
