// SPDX-License-Identifier: MIT
/*
 * thrust and CUB as programs use them, for tests/gpu/real_libs.sh: a
 * radix sort, a reduction, an inclusive scan and a transform of 2^20
 * keys (CUB's onesweep sort, reduce and scan kernels, thrust's
 * transform), checked against the host, then a checksum.
 *
 * Usage: thrust_cub [ROUNDS]     (default 3)
 */
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

struct twice_plus_one {
	__host__ __device__ unsigned operator()(unsigned x) const
	{
		return 2 * x + 1;
	}
};

int main(int argc, char **argv)
{
	const int n = 1 << 20;
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	std::vector<unsigned> h(n);
	unsigned long long sum = 0;
	bool ok = true;

	for (int r = 0; r < rounds; r++) {
		unsigned x = 12345u + r;

		for (int i = 0; i < n; i++) {
			x = x * 1664525u + 1013904223u;
			h[i] = x >> 4;
		}
		thrust::device_vector<unsigned> d(h.begin(), h.end());
		thrust::sort(d.begin(), d.end());
		unsigned long long red = thrust::reduce(d.begin(), d.end(),
							0ull);
		thrust::device_vector<unsigned> s(n), t(n);
		thrust::inclusive_scan(d.begin(), d.end(), s.begin());
		thrust::transform(s.begin(), s.end(), t.begin(),
				  twice_plus_one());
		thrust::host_vector<unsigned> hs = d, ht = t;

		std::vector<unsigned> w = h;
		std::sort(w.begin(), w.end());
		unsigned long long wred = 0;
		unsigned run = 0;
		for (int i = 0; i < n; i++) {
			wred += w[i];
			run += w[i];
			if (hs[i] != w[i] || ht[i] != 2 * run + 1) {
				ok = false;
				printf("wrong at %d\n", i);
				break;
			}
		}
		if (red != wred)
			ok = false;
		sum = sum * 31 + red + ht[n - 1];
	}
	printf("checksum %llu\n", sum);
	printf(ok ? "results ok\n" : "results WRONG\n");
	return ok ? 0 : 1;
}
