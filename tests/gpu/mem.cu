// SPDX-License-Identifier: MIT
// Memory access patterns with known figures, for tests/gpu/mem.sh
// (gpu:mem).  Each kernel runs once; the host replays every warp's
// accesses (the same index arithmetic, on the real device pointers) and
// prints what gpu:mem must count, as lines "expect MAPLINE":
//   @s[kernel, store, sectors]: warp requests with that many sectors
//   @l[kernel, store, lanes]: warp requests with that many active lanes
//   @n[kernel]: warp requests (global and generic)
//   @lo[kernel, store], @hi[kernel, store]: min and max of the lowest
//       address a request touches
//   @z[kernel, store]: bytes the active lanes asked for
//   @c[kernel, stride, store, conflicts]: shared requests (smem kernel)
//   @ln[kernel, line]: unit's requests by source line
// then "checksum X" over every output, the same traced or not.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const int unit_line = __LINE__ + 4;
extern "C" __global__ void unit(const float *in, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = in[i] * 2.0f;
}

extern "C" __global__ void stride2(const float *in, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = in[2 * i];
}

extern "C" __global__ void stride32(const float *in, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = in[32 * i];
}

extern "C" __global__ void gather(const float *in, const int *idx, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = in[idx[i]];
}

extern "C" __global__ void transpose(const float *in, float *out, int w, int h)
{
	int x = blockIdx.x * 32 + threadIdx.x;
	int y = blockIdx.y * 8 + threadIdx.y;
	out[x * h + y] = in[y * w + x];
}

extern "C" __global__ void tail(const float *in, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = in[i] + 1.0f;
}

// one warp a block: the 32 x 32 words written row by row (no conflict),
// then each lane reads word lane * stride
extern "C" __global__ void smem(float *out, int stride)
{
	__shared__ float s[1024];
	int t = threadIdx.x;

#pragma unroll 1
	for (int k = t; k < 1024; k += 32)
		s[k] = (float)(k + blockIdx.x);
	__syncwarp();
	out[blockIdx.x * 32 + t] = s[t * stride];
}

struct req {
	std::vector<uint64_t> a;	// one address per active lane
	unsigned size;
	int store;
};

static std::map<std::string, long> expect;

static void add(const std::string &k, long v)
{
	expect[k] += v;
}

static std::map<std::string, uint64_t> lo, hi;

static void account(const char *kernel, const req &r)
{
	std::set<uint64_t> sec;
	uint64_t low = UINT64_MAX;
	char key[160];

	if (r.a.empty())
		return;
	for (uint64_t a : r.a) {
		sec.insert(a >> 5);
		sec.insert((a + r.size - 1) >> 5);
		low = a < low ? a : low;
	}
	snprintf(key, sizeof(key), "@s[%s, %d, %zu]", kernel, r.store, sec.size());
	add(key, 1);
	snprintf(key, sizeof(key), "@l[%s, %d, %zu]", kernel, r.store, r.a.size());
	add(key, 1);
	snprintf(key, sizeof(key), "@n[%s]", kernel);
	add(key, 1);
	snprintf(key, sizeof(key), "@z[%s, %d]", kernel, r.store);
	add(key, (long)(r.size * r.a.size()));
	snprintf(key, sizeof(key), "%s, %d", kernel, r.store);
	if (!lo.count(key) || low < lo[key])
		lo[key] = low;
	if (!hi.count(key) || low > hi[key])
		hi[key] = low;
}

// conflicts of one shared request: max distinct words in a bank, - 1
static int conflicts(const std::vector<uint64_t> &a)
{
	std::map<int, std::set<uint64_t>> bank;
	size_t m = 0;

	for (uint64_t x : a)
		bank[(x >> 2) & 31].insert(x >> 2);
	for (auto &b : bank)
		m = b.second.size() > m ? b.second.size() : m;
	return (int)m - 1;
}

int main(int argc, char **argv)
{
	const int n = 1 << 16, tb = 256, w = 512, h = 256, tn = 1000;
	const int strides[3] = { 1, 2, 32 }, sblocks = 8;
	float *in, *out, *big;
	int *idx;
	std::vector<int> hidx(n);
	std::vector<float> hin(32 * n), hout(n);
	uint32_t seed = 12345;
	double sum = 0;

	for (int i = 0; i < 32 * n; i++)
		hin[i] = (float)(i % 1000) * 0.5f;
	for (int i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		hidx[i] = (int)((seed >> 8) % (uint32_t)n);
	}
	CK(cudaMalloc(&in, 32 * sizeof(float) * n));
	CK(cudaMalloc(&big, sizeof(float) * w * h));
	CK(cudaMalloc(&out, sizeof(float) * n));
	CK(cudaMalloc(&idx, sizeof(int) * n));
	CK(cudaMemcpy(in, hin.data(), 32 * sizeof(float) * n, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(idx, hidx.data(), sizeof(int) * n, cudaMemcpyHostToDevice));

	const uint64_t I = (uintptr_t)in, O = (uintptr_t)out, X = (uintptr_t)idx,
		       B = (uintptr_t)big;
	auto fetch = [&](const char *what) {
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(hout.data(), out, sizeof(float) * n, cudaMemcpyDeviceToHost));
		double s = 0;
		for (int i = 0; i < n; i++)
			s += hout[i] * (double)((i % 7) + 1);
		printf("%s %.1f\n", what, s);
		sum += s;
	};

	// unit, stride2, stride32, gather: n threads, full warps; per warp
	// a load of 32 lanes then a store of 32 lanes (gather: 2 loads)
	unit<<<n / tb, tb>>>(in, out);
	fetch("unit");
	stride2<<<n / tb, tb>>>(in, out);
	fetch("stride2");
	stride32<<<n / tb, tb>>>(in, out);
	fetch("stride32");
	gather<<<n / tb, tb>>>(in, idx, out);
	fetch("gather");
	for (int wp = 0; wp < n / 32; wp++) {
		req ld{ {}, 4, 0 }, st{ {}, 4, 1 }, l2{ {}, 4, 0 }, l3{ {}, 4, 0 }, gi{ {}, 4, 0 }, gv{ {}, 4, 0 };
		for (int l = 0; l < 32; l++) {
			uint64_t i = wp * 32 + l;
			ld.a.push_back(I + 4 * i);
			st.a.push_back(O + 4 * i);
			l2.a.push_back(I + 8 * i);
			l3.a.push_back(I + 128 * i);
			gi.a.push_back(X + 4 * i);
			gv.a.push_back(I + 4 * (uint64_t)hidx[i]);
		}
		account("unit", ld);
		account("unit", st);
		account("stride2", l2);
		account("stride2", st);
		account("stride32", l3);
		account("stride32", st);
		account("gather", gi);
		account("gather", gv);
		account("gather", st);
	}
	add("@ln[unit, " + std::to_string(unit_line) + "]", 2L * (n / 32));

	// transpose: blocks of 32 x 8, one row of x per warp
	transpose<<<dim3(w / 32, h / 8), dim3(32, 8)>>>(in, big, w, h);
	CK(cudaDeviceSynchronize());
	{
		std::vector<float> t(w * h);
		CK(cudaMemcpy(t.data(), big, sizeof(float) * w * h, cudaMemcpyDeviceToHost));
		double s = 0;
		for (int i = 0; i < w * h; i++)
			s += t[i] * (double)((i % 5) + 1);
		printf("transpose %.1f\n", s);
		sum += s;
	}
	for (int y = 0; y < h; y++)
		for (int bx = 0; bx < w / 32; bx++) {
			req ld{ {}, 4, 0 }, st{ {}, 4, 1 };
			for (int l = 0; l < 32; l++) {
				uint64_t x = bx * 32 + l;
				ld.a.push_back(I + 4 * ((uint64_t)y * w + x));
				st.a.push_back(B + 4 * (x * h + y));
			}
			account("transpose", ld);
			account("transpose", st);
		}

	// tail: tn threads in blocks of tb; the last warp partial
	tail<<<(tn + tb - 1) / tb, tb>>>(in, out, tn);
	fetch("tail");
	for (int wp = 0; wp * 32 < tn; wp++) {
		req ld{ {}, 4, 0 }, st{ {}, 4, 1 };
		for (int l = 0; l < 32 && wp * 32 + l < tn; l++) {
			ld.a.push_back(I + 4 * (uint64_t)(wp * 32 + l));
			st.a.push_back(O + 4 * (uint64_t)(wp * 32 + l));
		}
		account("tail", ld);
		account("tail", st);
	}

	// smem: per stride, sblocks one-warp blocks; 32 conflict-free
	// stores, then one read of word lane * stride
	for (int si = 0; si < 3; si++) {
		int s = strides[si];
		char key[128];

		smem<<<sblocks, 32>>>(out, s);
		fetch("smem");
		for (int b = 0; b < sblocks; b++) {
			req st{ {}, 4, 1 };
			for (int l = 0; l < 32; l++)
				st.a.push_back(O + 4 * (uint64_t)(b * 32 + l));
			account("smem", st);
		}
		std::vector<uint64_t> rd, wr;
		for (int l = 0; l < 32; l++) {
			rd.push_back(4 * (uint64_t)(l * s));
			wr.push_back(4 * (uint64_t)l);
		}
		snprintf(key, sizeof(key), "@c[smem, %d, 1, %d]", s, conflicts(wr));
		add(key, 32L * sblocks);
		snprintf(key, sizeof(key), "@c[smem, %d, 0, %d]", s, conflicts(rd));
		add(key, 1L * sblocks);
	}

	for (auto &e : expect)
		printf("expect %s: %ld\n", e.first.c_str(), e.second);
	for (auto &e : lo)
		printf("expect @lo[%s]: %llu\n", e.first.c_str(), (unsigned long long)e.second);
	for (auto &e : hi)
		printf("expect @hi[%s]: %llu\n", e.first.c_str(), (unsigned long long)e.second);
	printf("checksum %.1f\n", sum);
	cudaFree(in);
	cudaFree(out);
	cudaFree(idx);
	cudaFree(big);
	return 0;
}
