/* SPDX-License-Identifier: MIT */
/*
 * hbpf: a small eBPF verifier and interpreter for host clauses that run
 * inside the target (the agent), not as kernel uprobes (docs/hostpath.md).
 *
 * Input is the tracer's own compiled program, so the instruction set is
 * what codegen emits for host probes: ALU/ALU64, LDX/ST/STX (and atomic
 * add), LD_IMM64 (plain or a map reference), JMP/JMP32, helper calls,
 * exit.  hbpf_verify() checks the program statically (known opcodes,
 * registers, jumps inside the program and never into the second half of
 * a LD_IMM64, map references inside the map table, only the helpers the
 * agent offers, no fall off the end).  hbpf_run() only runs verified
 * programs, and still checks every memory access at run time against the
 * regions a program may touch: its 512-byte stack, the context (read
 * only) and the map values that a lookup returned during this run; a run
 * stops after HBPF_BUDGET instructions.  So a verified program cannot
 * touch memory of the target, nor loop forever.
 *
 * Shared by the tracer (which clause can run where) and the agent.
 */
#ifndef GT_HBPF_H
#define GT_HBPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/bpf.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* A run's path, beside the agent's launch hook in .text.hot (agent_priv.h's
 * AGENT_HOT): few code lines for a hook that comes back cold. */
#define HBPF_HOT	__attribute__((hot))
#define HBPF_STACK	512
#define HBPF_MAX_INSNS	65536
#define HBPF_MAX_MAPS	256
#define HBPF_BUDGET	1000000		/* instructions per run */
#define HBPF_VALS	16		/* map values one run may hold */
/* A map reference in a register: tag in the top half, index below. */
#define HBPF_MAP_TAG	0x6862706600000000ull	/* "hbpf" */

struct hbpf_map {
	uint32_t key_size;
	uint32_t value_size;
	bool ring;		/* the events ring: only ringbuf_output */
};

/*
 * A lookup memo: one per map (HBPF_MAX_MAPS of them) and per thread of
 * the host, for the JIT (hbpf_jit_run), where a launch's two lookups (a
 * kernel's name, then its count) went through four calls each.  While
 * VAL is set, a lookup of the key_size bytes at KEY returns VAL, and the
 * JIT returns it without asking the host.  The host fills it in its
 * lookup, with KEY where it keeps the key beside the value (an entry's
 * own key: the lines the program reads anyway, no copy to fetch after a
 * driver call left the caches cold), and clears VAL before that memory
 * holds another entry.  Zeroed: nothing memoized.
 */
struct hbpf_memo {
	void *val;
	const void *key;
};

/* N bytes at A and B equal?  16 at a time where SSE2 is (every x86-64):
 * keys are a kernel name's 72 bytes, compared at every launch, and
 * memcmp of a length known only at run time is a libc call. */
static inline bool hbpf_key_eq(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;
	uint64_t u, v, d = 0;
	size_t i = 0;
#ifdef __SSE2__
	__m128i dv = _mm_setzero_si128();

	for (; i + 16 <= n; i += 16)
		dv = _mm_or_si128(dv, _mm_xor_si128(
			_mm_loadu_si128((const __m128i *)(x + i)),
			_mm_loadu_si128((const __m128i *)(y + i))));
	if (_mm_movemask_epi8(_mm_cmpeq_epi8(dv, _mm_setzero_si128())) !=
	    0xffff)
		return false;
#endif
	for (; i + 8 <= n; i += 8) {
		memcpy(&u, x + i, 8);
		memcpy(&v, y + i, 8);
		d |= u ^ v;
	}
	return !d && (i == n || !memcmp(x + i, y + i, n - i));
}

/*
 * What the host offers a program.  ARG is hbpf_run's.  lookup returns a
 * pointer to VALUE_SIZE bytes that stay valid for the run, or NULL.
 * read_user copies N bytes of the target's memory at SRC (0 or -EFAULT;
 * DST zeroed on failure); read_user_str up to N bytes with the NUL
 * (the length with the NUL, or -EFAULT).  Any of them may be NULL: the
 * helper then fails as the kernel's would (NULL, -ENOSYS).
 */
struct hbpf_ops {
	void *(*lookup)(void *arg, int map, const void *key);
	long (*update)(void *arg, int map, const void *key, const void *val,
		       uint64_t flags);
	long (*del)(void *arg, int map, const void *key);
	long (*output)(void *arg, int map, const void *data, uint64_t size);
	long (*read_user)(void *arg, void *dst, uint32_t n, uint64_t src);
	long (*read_user_str)(void *arg, void *dst, uint32_t n, uint64_t src);
	uint64_t (*ktime)(void *arg);
	uint64_t (*pid_tgid)(void *arg);
	uint64_t (*uid_gid)(void *arg);
	uint64_t (*cpu)(void *arg);
	long (*comm)(void *arg, void *dst, uint32_t n);
};

struct hbpf_prog {
	const struct bpf_insn *insns;
	size_t n;
	const struct hbpf_map *maps;
	int nmaps;
	uint32_t ctx_size;	/* bytes the context holds (read only) */
};

/* Conditional jump OP (BPF_JEQ...) taken for A, B (IS32: JMP32)?  The
 * device verifier folds constant conditions with it too. */
bool hbpf_cond(unsigned op, uint64_t a, uint64_t b, bool is32);

/* Whether the agent offers helper ID to host clauses. */
bool hbpf_helper_ok(int id);

/*
 * 0 when P may run, else -EINVAL with the reason (and the instruction)
 * in ERR.  A program using a helper the agent does not offer gets
 * -EOPNOTSUPP and the helper's number in *HELPER (when not NULL): such a
 * clause stays on the kernel uprobe.
 */
int hbpf_verify(const struct hbpf_prog *p, int *helper, char *err,
		size_t errlen);

/*
 * Run verified program P on CTX (P->ctx_size bytes): 0 and r0 in *RET,
 * or -EFAULT (a memory access outside the allowed regions), -E2BIG (the
 * instruction budget ran out), -EINVAL (a map reference or helper
 * argument that is not one); the run then stops where it was.
 */
int hbpf_run(const struct hbpf_prog *p, const struct hbpf_ops *ops,
	     void *arg, const void *ctx, uint64_t *ret);

#endif
