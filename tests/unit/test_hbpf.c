// SPDX-License-Identifier: MIT
/*
 * gpucode/hbpf.c, the verifier and interpreter of host clauses run in
 * the agent: what the verifier refuses, the instruction semantics (the
 * kernel's: division by zero, 32-bit results zero-extended, signed
 * jumps), memory confined to the stack, the context (read only) and map
 * values, the instruction budget; and the agent configuration's host
 * programs section (gpucode/agent_config.c) written and read back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/emit.h"
#include "gpucode/agent_proto.h"
#include "gpucode/hbpf.h"
#include "gpucode/hbpf_int.h"
#include "gpucode/hbpf_jit.h"
#include "unit.h"

#define N(a)	(sizeof(a) / sizeof((a)[0]))

static int jit_runs, jit_diffs;

static const struct hbpf_map maps[] = {
	{ 8, 8, false }, { 8, 16, false }, { 0, 0, true },
};

static struct hbpf_prog prog(const struct bpf_insn *v, size_t n)
{
	struct hbpf_prog p = { v, n, maps, (int)N(maps), 32 };

	return p;
}

static int verify(const struct bpf_insn *v, size_t n)
{
	struct hbpf_prog p = prog(v, n);
	char err[256];

	return hbpf_verify(&p, NULL, err, sizeof(err));
}

/* A one-entry-per-map backend: values in VALS, key ignored. */
struct backend {
	uint64_t vals[2][2];
	bool have[2];
	int updates;
	char out[64];
	uint64_t outlen;
};

/*
 * The arena of a differential run: the stack between guards that no
 * run may write, a context right after it (an access across the two is
 * refused), and the backend's state ARG (ARGLEN bytes), restored before
 * each run so that both see the same values at the same addresses.
 */
struct arena {
	uint64_t below[32];
	uint64_t stack[HBPF_STACK / 8];
	uint64_t ctx[4];
	uint64_t above[32];
};

static void arena_init(struct arena *a, const void *ctx)
{
	memset(a, 0xa5, sizeof(*a));
	for (size_t i = 0; i < N(a->stack); i++)
		a->stack[i] = 0x0123456789abcdefull * (i + 1);
	if (ctx)
		memcpy(a->ctx, ctx, sizeof(a->ctx));
}

/*
 * P by the interpreter on the arena's stack, then by the JIT on the same
 * stack from the same state: the same error, r0 and memory, or a line
 * saying how they differ (counted in jit_diffs).  The JIT's state stays.
 * CTX: the arena's, or another (when not NULL and ACTX is false).
 */
static int differ(const struct hbpf_prog *p, const struct hbpf_ops *o,
		  void *arg, size_t arglen, const void *ctx, bool actx,
		  uint64_t *ret)
{
	static struct arena a, ai;
	static uint8_t before[4096], after[4096];
	uint64_t r0i = 0xdead, r0j = 0xdead;
	const void *c;
	struct hbpf_jit *j;
	char err[256];
	int ei, ej;

	j = hbpf_jit_compile(p, o, err, sizeof(err));
	if (!j) {
		printf("# jit: %s\n", err);
		jit_diffs++;
		return hbpf_run(p, o, arg, ctx, ret);
	}
	arena_init(&a, actx ? ctx : NULL);
	c = actx ? (const void *)a.ctx : ctx;
	if (arglen > sizeof(before))
		abort();
	if (arglen)
		memcpy(before, arg, arglen);
	ei = hbpf_int_run_on(p, o, arg, c, a.stack, &r0i);
	ai = a;
	if (arglen) {
		memcpy(after, arg, arglen);
		memcpy(arg, before, arglen);
	}
	arena_init(&a, actx ? ctx : NULL);
	ej = hbpf_jit_run_on(j, arg, c, NULL, a.stack, &r0j);
	jit_runs++;
	if (ei != ej || (!ei && r0i != r0j) || memcmp(&a, &ai, sizeof(a)) ||
	    (arglen && memcmp(after, arg, arglen))) {
		printf("# jit differs: %d r0 %#llx, interpreter %d r0 %#llx%s%s\n",
		       ej, (unsigned long long)r0j, ei,
		       (unsigned long long)r0i,
		       memcmp(&a, &ai, sizeof(a)) ? ", memory" : "",
		       arglen && memcmp(after, arg, arglen) ? ", maps" : "");
		jit_diffs++;
	}
	hbpf_jit_free(j);
	if (!ej)
		*ret = r0j;
	return ej;
}

/* Verify and run; r0 in *RET.  The interpreter (hbpf_run), then both
 * again from the same state (differ), whose results must agree. */
static int run(const struct bpf_insn *v, size_t n, const struct hbpf_ops *o,
	       void *arg, const void *ctx, uint64_t *ret)
{
	struct hbpf_prog p = prog(v, n);
	size_t arglen = arg ? sizeof(struct backend) : 0;
	static uint8_t before[sizeof(struct backend)];
	uint64_t r0 = 0xdead, r1 = 0xdead;
	char err[256];
	int e = hbpf_verify(&p, NULL, err, sizeof(err)), e1;

	if (e) {
		printf("# verify: %s\n", err);
		return e;
	}
	if (arglen)
		memcpy(before, arg, arglen);
	e = hbpf_run(&p, o, arg, ctx, &r0);
	if (arglen)
		memcpy(arg, before, arglen);
	e1 = differ(&p, o, arg, arglen, ctx, false, &r1);
	if (e != e1 || (!e && r0 != r1)) {
		printf("# hbpf_run %d, on a given stack %d\n", e, e1);
		jit_diffs++;
	}
	*ret = 0xdead;
	if (!e)
		*ret = r0;
	return e;
}

static void test_verify(void)
{
	const struct bpf_insn ok[] = { I_MOV64_IMM(0, 0), I_EXIT() };
	const struct bpf_insn falls[] = { I_MOV64_IMM(0, 0) };
	const struct bpf_insn out[] = { I_JA(5), I_EXIT() };
	const struct bpf_insn back[] = { I_JA(-3), I_EXIT() };
	const struct bpf_insn into[] = {
		I_JA(1), I_LD64_LO(1, 0, 7), I_LD64_HI(0), I_EXIT(),
	};
	const struct bpf_insn r10[] = { I_MOV64_IMM(10, 0), I_EXIT() };
	const struct bpf_insn badmap[] = {
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 3), I_LD64_HI(0), I_EXIT(),
	};
	const struct bpf_insn mapval[] = {
		I_LD64_LO(1, BPF_PSEUDO_MAP_VALUE, 0), I_LD64_HI(0), I_EXIT(),
	};
	const struct bpf_insn half[] = { I_LD64_LO(1, 0, 7) };
	const struct bpf_insn stack[] = { I_CALL(BPF_FUNC_get_stackid), I_EXIT() };
	const struct bpf_insn sub[] = {
		I_RAW(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 1), I_EXIT(),
		I_EXIT(),
	};
	const struct bpf_insn badop[] = { I_RAW(0xff, 0, 0, 0, 0), I_EXIT() };
	const struct bpf_insn badreg[] = { I_MOV64_REG(11, 1), I_EXIT() };
	struct hbpf_prog p = prog(stack, N(stack));
	char err[256];
	int helper;

	CHECK(verify(ok, N(ok)) == 0, "verify/minimal program");
	CHECK(verify(ok, 0) == -EINVAL, "verify/empty");
	CHECK(verify(falls, N(falls)) == -EINVAL, "verify/falls off the end");
	CHECK(verify(out, N(out)) == -EINVAL, "verify/jump out");
	CHECK(verify(back, N(back)) == -EINVAL, "verify/jump before the start");
	CHECK(verify(into, N(into)) == -EINVAL, "verify/jump into LD_IMM64");
	CHECK(verify(r10, N(r10)) == -EINVAL, "verify/r10 read only");
	CHECK(verify(badmap, N(badmap)) == -EINVAL, "verify/map index");
	CHECK(verify(mapval, N(mapval)) == -EINVAL, "verify/map value reference");
	CHECK(verify(half, N(half)) == -EINVAL, "verify/LD_IMM64 cut");
	CHECK(verify(sub, N(sub)) == -EINVAL, "verify/no bpf-to-bpf calls");
	CHECK(verify(badop, N(badop)) == -EINVAL, "verify/unknown opcode");
	CHECK(verify(badreg, N(badreg)) == -EINVAL, "verify/register 11");
	CHECK(hbpf_verify(&p, &helper, err, sizeof(err)) == -EOPNOTSUPP &&
	      helper == BPF_FUNC_get_stackid && strstr(err, "not offered"),
	      "verify/kernel-only helper named");
	CHECK(hbpf_helper_ok(BPF_FUNC_map_lookup_elem) &&
	      !hbpf_helper_ok(BPF_FUNC_probe_read_kernel) &&
	      !hbpf_helper_ok(BPF_FUNC_get_stackid),
	      "verify/the agent's helper set");
}

static void test_alu(void)
{
	const struct bpf_insn div0[] = {
		I_MOV64_IMM(0, 7), I_MOV64_IMM(1, 0),
		I_ALU64_REG(BPF_DIV, 0, 1), I_EXIT(),
	};
	const struct bpf_insn mod0[] = {
		I_MOV64_IMM(0, 7), I_MOV64_IMM(1, 0),
		I_ALU64_REG(BPF_MOD, 0, 1), I_EXIT(),
	};
	const struct bpf_insn w32[] = {
		I_MOV64_IMM(0, -1), I_ALU32_REG(BPF_ADD, 0, 0), I_EXIT(),
	};
	const struct bpf_insn mov32[] = {
		I_LD64_LO(0, 0, 0xffffffff00000005ull),
		I_LD64_HI(0xffffffff00000005ull), I_MOV32_REG(0, 0), I_EXIT(),
	};
	const struct bpf_insn arsh[] = {
		I_MOV64_IMM(0, -16), I_ALU64_IMM(BPF_ARSH, 0, 2), I_EXIT(),
	};
	const struct bpf_insn be[] = {
		I_MOV64_IMM(0, 0x1234),
		I_RAW(BPF_ALU | BPF_END | BPF_TO_BE, 0, 0, 0, 16), I_EXIT(),
	};
	const struct bpf_insn sgn[] = {
		I_MOV64_IMM(1, -1), I_MOV64_IMM(0, 1),
		I_JMP_IMM(BPF_JSGT, 1, 0, 1), I_MOV64_IMM(0, 2), I_EXIT(),
	};
	const struct bpf_insn uns[] = {
		I_MOV64_IMM(1, -1), I_MOV64_IMM(0, 1),
		I_JMP_IMM(BPF_JGT, 1, 0, 1), I_MOV64_IMM(0, 2), I_EXIT(),
	};
	const struct bpf_insn j32[] = {
		I_LD64_LO(1, 0, 0x100000000ull), I_LD64_HI(0x100000000ull),
		I_MOV64_IMM(0, 1),
		I_RAW(BPF_JMP32 | BPF_JEQ | BPF_K, 1, 0, 1, 0),
		I_MOV64_IMM(0, 2), I_EXIT(),
	};
	const struct bpf_insn loop[] = {	/* r0 = 1 + 2 + ... + 10 */
		I_MOV64_IMM(0, 0), I_MOV64_IMM(1, 10),
		I_ALU64_REG(BPF_ADD, 0, 1), I_ALU64_IMM(BPF_SUB, 1, 1),
		I_JMP_IMM(BPF_JNE, 1, 0, -3), I_EXIT(),
	};
	/* the handlers of their own: a shift, bit tests (the immediate
	 * sign-extended), register compares; r0 = 2 + 8 */
	const struct bpf_insn fast[] = {
		I_LD64_LO(1, 0, 0x500000000ull), I_LD64_HI(0x500000000ull),
		I_LD64_LO(3, 0, 1ull << 40), I_LD64_HI(1ull << 40),
		I_MOV64_IMM(0, 0), I_ALU64_IMM(BPF_RSH, 1, 32),
		I_JMP_IMM(BPF_JSET, 1, 4, 1), I_ALU64_IMM(BPF_ADD, 0, 1),
		I_JMP_IMM(BPF_JSET, 1, 2, 1), I_ALU64_IMM(BPF_ADD, 0, 2),
		I_MOV64_IMM(2, 5),
		I_JMP_REG(BPF_JEQ, 1, 2, 1), I_ALU64_IMM(BPF_ADD, 0, 4),
		I_JMP_REG(BPF_JNE, 1, 2, 1), I_ALU64_IMM(BPF_ADD, 0, 8),
		I_JMP_IMM(BPF_JSET, 3, -1, 1), I_ALU64_IMM(BPF_ADD, 0, 16),
		I_EXIT(),
	};
	/* a 32-bit shift by a register holding 32 (0 once masked) */
	const struct bpf_insn sh0[] = {
		I_LD64_LO(0, 0, 0xffffffff00000005ull),
		I_LD64_HI(0xffffffff00000005ull), I_MOV64_IMM(4, 32),
		I_ALU32_REG(BPF_LSH, 0, 4), I_EXIT(),
	};
	uint64_t r;

	CHECK(!run(sh0, N(sh0), NULL, NULL, NULL, &r) && r == 5,
	      "alu/32-bit shift by 0 zero-extended");
	CHECK(!run(fast, N(fast), NULL, NULL, NULL, &r) && r == 10,
	      "alu/rsh, jset, jeq and jne of registers");
	CHECK(!run(div0, N(div0), NULL, NULL, NULL, &r) && r == 0,
	      "alu/division by zero is 0");
	CHECK(!run(mod0, N(mod0), NULL, NULL, NULL, &r) && r == 7,
	      "alu/modulo by zero keeps the dividend");
	CHECK(!run(w32, N(w32), NULL, NULL, NULL, &r) && r == 0xfffffffeull,
	      "alu/32-bit results zero-extended");
	CHECK(!run(mov32, N(mov32), NULL, NULL, NULL, &r) && r == 5,
	      "alu/mov32 and LD_IMM64");
	CHECK(!run(arsh, N(arsh), NULL, NULL, NULL, &r) && (int64_t)r == -4,
	      "alu/arithmetic shift");
	CHECK(!run(be, N(be), NULL, NULL, NULL, &r) && r == 0x3412,
	      "alu/to big endian");
	CHECK(!run(sgn, N(sgn), NULL, NULL, NULL, &r) && r == 2,
	      "jump/signed");
	CHECK(!run(uns, N(uns), NULL, NULL, NULL, &r) && r == 1,
	      "jump/unsigned");
	CHECK(!run(j32, N(j32), NULL, NULL, NULL, &r) && r == 1,
	      "jump/32-bit compares the low half");
	CHECK(!run(loop, N(loop), NULL, NULL, NULL, &r) && r == 55,
	      "jump/bounded loop");
}

static void *b_lookup(void *arg, int map, const void *key)
{
	struct backend *b = arg;

	return b->have[map] ? b->vals[map] : NULL;
}

static long b_update(void *arg, int map, const void *key, const void *val,
		     uint64_t flags)
{
	struct backend *b = arg;

	memcpy(b->vals[map], val, maps[map].value_size);
	b->have[map] = true;
	b->updates++;
	return 0;
}

static long b_output(void *arg, int map, const void *data, uint64_t size)
{
	struct backend *b = arg;

	if (size > sizeof(b->out))
		return -E2BIG;
	memcpy(b->out, data, size);
	b->outlen = size;
	return 0;
}

static long b_read(void *arg, void *dst, uint32_t n, uint64_t src)
{
	memset(dst, 0x5a, n);
	return 0;
}

static const struct hbpf_ops ops = {
	.lookup = b_lookup, .update = b_update, .output = b_output,
	.read_user = b_read,
};

static void test_memory(void)
{
	uint64_t ctx[4] = { 11, 22, 33, 44 }, r;
	const struct bpf_insn rctx[] = {
		I_LDX(BPF_DW, 0, 1, 24), I_EXIT(),
	};
	const struct bpf_insn past[] = {
		I_LDX(BPF_DW, 0, 1, 28), I_EXIT(),
	};
	const struct bpf_insn wctx[] = {
		I_ST(BPF_DW, 1, 0, 1), I_MOV64_IMM(0, 0), I_EXIT(),
	};
	const struct bpf_insn below[] = {
		I_LDX(BPF_DW, 0, 10, -520), I_EXIT(),
	};
	const struct bpf_insn above[] = {
		I_LDX(BPF_B, 0, 10, 0), I_EXIT(),
	};
	const struct bpf_insn stk[] = {
		I_ST(BPF_W, 10, -4, 0x7f), I_LDX(BPF_W, 0, 10, -4), I_EXIT(),
	};
	const struct bpf_insn wild[] = {
		I_LD64_LO(1, 0, 0x1000), I_LD64_HI(0), I_LDX(BPF_DW, 0, 1, 0),
		I_EXIT(),
	};
	/* @[0] = count() as codegen writes it: lookup, else update */
	const struct bpf_insn count[] = {
		I_ST(BPF_DW, 10, -8, 0),
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 0), I_LD64_HI(0),
		I_MOV64_REG(2, 10), I_ALU64_IMM(BPF_ADD, 2, -8),
		I_CALL(BPF_FUNC_map_lookup_elem),
		I_JMP_IMM(BPF_JEQ, 0, 0, 4),
		I_LDX(BPF_DW, 1, 0, 0), I_ALU64_IMM(BPF_ADD, 1, 1),
		I_STX(BPF_DW, 0, 1, 0), I_EXIT(),
		I_ST(BPF_DW, 10, -16, 1),
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 0), I_LD64_HI(0),
		I_MOV64_REG(2, 10), I_ALU64_IMM(BPF_ADD, 2, -8),
		I_MOV64_REG(3, 10), I_ALU64_IMM(BPF_ADD, 3, -16),
		I_MOV64_IMM(4, 0), I_CALL(BPF_FUNC_map_update_elem),
		I_EXIT(),
	};
	/* past the end of an 8-byte value */
	const struct bpf_insn beyond[] = {
		I_ST(BPF_DW, 10, -8, 0),
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 0), I_LD64_HI(0),
		I_MOV64_REG(2, 10), I_ALU64_IMM(BPF_ADD, 2, -8),
		I_CALL(BPF_FUNC_map_lookup_elem),
		I_JMP_IMM(BPF_JEQ, 0, 0, 1),
		I_LDX(BPF_DW, 0, 0, 8), I_EXIT(),
	};
	/* a key read past the stack's top */
	const struct bpf_insn badkey[] = {
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 0), I_LD64_HI(0),
		I_MOV64_REG(2, 10), I_ALU64_IMM(BPF_ADD, 2, -4),
		I_CALL(BPF_FUNC_map_lookup_elem), I_EXIT(),
	};
	/* the map reference must be one: a plain number is refused */
	const struct bpf_insn fakemap[] = {
		I_MOV64_IMM(1, 0), I_MOV64_REG(2, 10),
		I_ALU64_IMM(BPF_ADD, 2, -8), I_ST(BPF_DW, 10, -8, 0),
		I_CALL(BPF_FUNC_map_lookup_elem), I_EXIT(),
	};
	/* probe_read_user into 16 bytes of stack, at -8: too long */
	const struct bpf_insn rdlong[] = {
		I_MOV64_REG(1, 10), I_ALU64_IMM(BPF_ADD, 1, -8),
		I_MOV64_IMM(2, 16), I_MOV64_IMM(3, 0),
		I_CALL(BPF_FUNC_probe_read_user), I_EXIT(),
	};
	const struct bpf_insn event[] = {
		I_ST(BPF_DW, 10, -16, 42), I_ST(BPF_DW, 10, -8, 43),
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 2), I_LD64_HI(0),
		I_MOV64_REG(2, 10), I_ALU64_IMM(BPF_ADD, 2, -16),
		I_MOV64_IMM(3, 16), I_MOV64_IMM(4, 0),
		I_CALL(BPF_FUNC_ringbuf_output), I_EXIT(),
	};
	/* lookup on the ring, output on a hash map: refused */
	const struct bpf_insn wrongmap[] = {
		I_ST(BPF_DW, 10, -8, 0),
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 0), I_LD64_HI(0),
		I_MOV64_REG(2, 10), I_ALU64_IMM(BPF_ADD, 2, -8),
		I_MOV64_IMM(3, 8), I_MOV64_IMM(4, 0),
		I_CALL(BPF_FUNC_ringbuf_output), I_EXIT(),
	};
	const struct bpf_insn xadd[] = {
		I_ST(BPF_DW, 10, -8, 5), I_MOV64_IMM(1, 3),
		I_RAW(BPF_STX | BPF_ATOMIC | BPF_DW, 10, 1, -8,
		      BPF_ADD | BPF_FETCH),
		I_LDX(BPF_DW, 0, 10, -8), I_ALU64_REG(BPF_MUL, 0, 1),
		I_EXIT(),
	};
	const struct bpf_insn forever[] = { I_JA(-1), I_EXIT() };
	struct backend b = { 0 };
	/* two values: the older one stays readable after the newer one
	 * (the interpreter checks the last inline), 8 + 8 bytes of map 1's */
	const struct bpf_insn two[] = {
		I_ST(BPF_DW, 10, -8, 0),
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 0), I_LD64_HI(0),
		I_MOV64_REG(2, 10), I_ALU64_IMM(BPF_ADD, 2, -8),
		I_CALL(BPF_FUNC_map_lookup_elem),
		I_JMP_IMM(BPF_JEQ, 0, 0, 11),
		I_MOV64_REG(6, 0),
		I_LD64_LO(1, BPF_PSEUDO_MAP_FD, 1), I_LD64_HI(0),
		I_MOV64_REG(2, 10), I_ALU64_IMM(BPF_ADD, 2, -8),
		I_CALL(BPF_FUNC_map_lookup_elem),
		I_JMP_IMM(BPF_JEQ, 0, 0, 4),
		I_LDX(BPF_DW, 1, 0, 8), I_LDX(BPF_DW, 0, 6, 0),
		I_ALU64_REG(BPF_ADD, 0, 1), I_EXIT(),
		I_MOV64_IMM(0, 0), I_EXIT(),
	};
	/* a value handed to an earlier run is not this run's */
	uintptr_t v0 = (uintptr_t)b.vals[0];
	const struct bpf_insn stale[] = {
		I_LD64_LO(1, 0, (uint32_t)v0), I_LD64_HI((uint32_t)(v0 >> 32)),
		I_LDX(BPF_DW, 0, 1, 0), I_EXIT(),
	};

	CHECK(!run(rctx, N(rctx), NULL, NULL, ctx, &r) && r == 44,
	      "memory/context read");
	CHECK(run(past, N(past), NULL, NULL, ctx, &r) == -EFAULT,
	      "memory/read past the context");
	CHECK(run(wctx, N(wctx), NULL, NULL, ctx, &r) == -EFAULT && ctx[0] == 11,
	      "memory/context is read only");
	CHECK(run(below, N(below), NULL, NULL, NULL, &r) == -EFAULT,
	      "memory/below the stack");
	CHECK(run(above, N(above), NULL, NULL, NULL, &r) == -EFAULT,
	      "memory/above the stack");
	CHECK(!run(stk, N(stk), NULL, NULL, NULL, &r) && r == 0x7f,
	      "memory/stack store and load");
	CHECK(run(wild, N(wild), NULL, NULL, NULL, &r) == -EFAULT,
	      "memory/any other address");
	for (int i = 0; i < 3; i++)
		run(count, N(count), &ops, &b, NULL, &r);
	CHECK(b.vals[0][0] == 3 && b.updates == 1, "maps/count: update, then lookups");
	CHECK(run(beyond, N(beyond), &ops, &b, NULL, &r) == -EFAULT,
	      "maps/past a value's end");
	b.vals[1][1] = 7;
	b.have[1] = true;
	CHECK(!run(two, N(two), &ops, &b, NULL, &r) && r == 3 + 7,
	      "maps/two values, the older one read last");
	CHECK(run(stale, N(stale), &ops, &b, NULL, &r) == -EFAULT,
	      "maps/an earlier run's value");
	CHECK(run(badkey, N(badkey), &ops, &b, NULL, &r) == -EFAULT,
	      "maps/key outside the stack");
	CHECK(run(fakemap, N(fakemap), &ops, &b, NULL, &r) == -EINVAL,
	      "maps/a number is no map");
	CHECK(run(rdlong, N(rdlong), &ops, &b, NULL, &r) == -EFAULT,
	      "helpers/read_user bounded by the stack");
	CHECK(!run(event, N(event), &ops, &b, NULL, &r) && r == 0 &&
	      b.outlen == 16 && b.out[0] == 42 && b.out[8] == 43,
	      "helpers/ringbuf_output");
	CHECK(run(wrongmap, N(wrongmap), &ops, &b, NULL, &r) == -EINVAL,
	      "helpers/ringbuf_output only on the ring");
	/* 8 after the add, times the old 5 that the fetch put in r1 */
	CHECK(!run(xadd, N(xadd), NULL, NULL, NULL, &r) && r == 8 * 5,
	      "memory/atomic add with fetch");
	CHECK(run(forever, N(forever), NULL, NULL, NULL, &r) == -E2BIG,
	      "budget/an endless loop stops");
}

static void test_config(void)
{
	char path[] = "/tmp/test_hbpf.XXXXXX";
	struct bpf_insn insns[] = { I_MOV64_IMM(0, -3), I_EXIT() };
	struct agent_hmap hm[] = {
		{ AGENT_HM_AGG, 0, 16, 8, true }, { AGENT_HM_NAMES, 0, 8, 72, false },
	};
	struct agent_hprog hp = { AGENT_HE_EX, 2, insns };
	char *globs[] = { "triton_*", "at::native::*" };
	struct devrt_map_desc md = { .kind = DEVRT_K_COUNT, .key_size = 8,
				     .nshards = 1, .capacity = 4 };
	struct agent_config c = {
		.nmaps = 1, .maps = &md, .decls = "", .nhmaps = 2,
		.hmaps = hm, .nhprogs = 1, .hprogs = &hp,
		.nhglobs = 2, .hglobs = globs,
	}, back;
	int fd = mkstemp(path), ok;

	if (fd < 0) {
		CHECK(0, "config/mkstemp");
		return;
	}
	close(fd);
	CHECK(agent_config_write(&c, path) == 0, "config/write host programs");
	ok = agent_config_read(path, &back) == 0;
	CHECK(ok && back.nhmaps == 2 && back.hmaps[0].bucket &&
	      back.hmaps[0].key_size == 16 && back.hmaps[1].role == AGENT_HM_NAMES &&
	      back.nhprogs == 1 && back.hprogs[0].entry == AGENT_HE_EX &&
	      back.hprogs[0].ninsns == 2 &&
	      !memcmp(back.hprogs[0].insns, insns, sizeof(insns)) &&
	      back.nhglobs == 2 && !strcmp(back.hglobs[0], "triton_*") &&
	      !strcmp(back.hglobs[1], "at::native::*"),
	      "config/host programs and GLOBs read back");
	if (ok)
		agent_config_free(&back);
	/* an AGG map past the config's maps is refused */
	hm[0].devmap = 1;
	agent_config_write(&c, path);
	CHECK(agent_config_read(path, &back) == -EINVAL,
	      "config/host map naming no config map");
	unlink(path);
}

/* ------------------------------------------------------------- JIT -- */

/* The random programs' backend: every helper, answers that depend on
 * the arguments, so that a wrong argument shows in the maps or r0. */
struct rback {
	uint64_t vals[3][2];
	uint64_t calls;
	uint64_t out[8];
	uint64_t outlen;
};

static void *r_lookup(void *arg, int map, const void *key)
{
	struct rback *b = arg;
	uint8_t k;

	memcpy(&k, key, 1);
	b->calls++;
	return (k & 3) == 3 ? NULL : b->vals[map];
}

static long r_update(void *arg, int map, const void *key, const void *val,
		     uint64_t flags)
{
	struct rback *b = arg;

	memcpy(b->vals[map], val, maps[map].value_size);
	b->calls += flags;
	return flags & 1 ? -E2BIG : 0;
}

static long r_del(void *arg, int map, const void *key)
{
	((struct rback *)arg)->calls += 3;
	return -ENOENT;
}

static long r_output(void *arg, int map, const void *data, uint64_t size)
{
	struct rback *b = arg;

	b->outlen = size;
	memcpy(b->out, data, size < sizeof(b->out) ? size : sizeof(b->out));
	return size & 1;
}

static long r_read(void *arg, void *dst, uint32_t n, uint64_t src)
{
	memset(dst, (int)(src & 0xff), n);
	return src ? 0 : -EFAULT;
}

static long r_read_str(void *arg, void *dst, uint32_t n, uint64_t src)
{
	if (!n)
		return 0;
	memset(dst, 'a', n - 1);
	((char *)dst)[n - 1] = 0;
	return n;
}

static uint64_t r_num(void *arg)
{
	return ++((struct rback *)arg)->calls * 1000 + 7;
}

static long r_comm(void *arg, void *dst, uint32_t n)
{
	memset(dst, 'c', n);
	return n;
}

static const struct hbpf_ops rops = {
	.lookup = r_lookup, .update = r_update, .del = r_del,
	.output = r_output, .read_user = r_read, .read_user_str = r_read_str,
	.ktime = r_num, .pid_tgid = r_num, .uid_gid = r_num, .cpu = r_num,
	.comm = r_comm,
};

static uint64_t rnd_s = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_s ^= rnd_s << 13;
	rnd_s ^= rnd_s >> 7;
	rnd_s ^= rnd_s << 17;
	return rnd_s;
}

static int32_t rnd_imm(void)
{
	static const int32_t k[] = {
		0, 1, -1, 2, 7, 8, 16, 31, 32, 33, 63, 64, 255, 0x7fff,
		0x7fffffff, INT32_MIN, -8, -512, 0x40000000,
	};

	return rnd() % 3 ? k[rnd() % N(k)] : (int32_t)rnd();
}

/* A base register and offset for an access of SIZE: the stack mostly,
 * the context (r6), a value (r0), anything. */
static void rnd_mem(int *base, int16_t *off, int size)
{
	switch (rnd() % 8) {
	case 0: case 1: case 2: case 3:
		*base = 10;
		*off = -(int16_t)(rnd() % 66) * 8 + (rnd() % 4 ? 0 :
						       (int16_t)(rnd() % 8));
		if (!(rnd() % 8))
			*off = (int16_t)rnd() % 600 - 540;
		break;
	case 4:
		*base = 6;
		*off = (int16_t)(rnd() % 48) - 8;
		break;
	case 5: case 6:
		*base = 0;
		*off = (int16_t)(rnd() % 24) - (int16_t)(rnd() % 4 ? 0 : 4);
		break;
	default:
		*base = (int)(rnd() % 11);
		*off = (int16_t)rnd() % 64;
	}
	(void)size;
}

/* A helper call with its arguments set up (mostly sensible ones). */
static int rnd_call(struct bpf_insn *v)
{
	static const int id[] = {
		BPF_FUNC_map_lookup_elem, BPF_FUNC_map_update_elem,
		BPF_FUNC_map_delete_elem, BPF_FUNC_ringbuf_output,
		BPF_FUNC_probe_read_user, BPF_FUNC_probe_read_user_str,
		BPF_FUNC_get_current_comm, BPF_FUNC_ktime_get_ns,
		BPF_FUNC_get_current_pid_tgid, BPF_FUNC_get_current_uid_gid,
		BPF_FUNC_get_smp_processor_id,
	};
	int f = id[rnd() % N(id)], n = 0;
	uint32_t m = rnd() % 3;

	if (rnd() % 4)
		m = f == BPF_FUNC_ringbuf_output ? 2 : rnd() % 2;

	if (f <= BPF_FUNC_map_delete_elem || f == BPF_FUNC_ringbuf_output) {
		struct bpf_insn ld[] = {
			I_LD64_LO(1, BPF_PSEUDO_MAP_FD, m), I_LD64_HI(0),
		};

		if (rnd() % 8) {
			v[n++] = ld[0];
			v[n++] = ld[1];
		}
		v[n++] = (struct bpf_insn)I_MOV64_REG(2, 10);
		v[n++] = (struct bpf_insn)I_ALU64_IMM(BPF_ADD, 2,
			-(int32_t)(rnd() % 9) * 8 - (rnd() % 8 ? 8 : 0));
		v[n++] = (struct bpf_insn)I_MOV64_REG(3, 10);
		v[n++] = (struct bpf_insn)I_ALU64_IMM(BPF_ADD, 3,
			-(int32_t)(rnd() % 9) * 8 - 16);
		if (f == BPF_FUNC_ringbuf_output)
			v[n++] = (struct bpf_insn)I_MOV64_IMM(3, rnd() % 40);
		v[n++] = (struct bpf_insn)I_MOV64_IMM(4, rnd() % 3);
	} else if (f == BPF_FUNC_probe_read_user ||
		   f == BPF_FUNC_probe_read_user_str ||
		   f == BPF_FUNC_get_current_comm) {
		v[n++] = (struct bpf_insn)I_MOV64_REG(1, rnd() % 4 ? 10 : 0);
		v[n++] = (struct bpf_insn)I_ALU64_IMM(BPF_ADD, 1,
			-(int32_t)(rnd() % 12) * 8);
		v[n++] = (struct bpf_insn)I_MOV64_IMM(2, rnd() % 40);
		v[n++] = (struct bpf_insn)I_MOV64_IMM(3, rnd_imm());
	}
	v[n++] = (struct bpf_insn)I_CALL(f);
	return n;
}

/*
 * A random program of at most MAX slots (MAX >= 48), ending in an exit;
 * LOOPS: backward jumps too.  Jumps get their targets at the end.  The
 * verifier decides whether it is one.
 */
static size_t rnd_prog(struct bpf_insn *v, size_t max, bool loops)
{
	static const uint8_t alu[] = {
		BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR, BPF_AND, BPF_LSH,
		BPF_RSH, BPF_NEG, BPF_MOD, BPF_XOR, BPF_MOV, BPF_ARSH, BPF_END,
	};
	static const uint8_t jmp[] = {
		BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET, BPF_JNE, BPF_JSGT,
		BPF_JSGE, BPF_JLT, BPF_JLE, BPF_JSLT, BPF_JSLE, BPF_JA,
	};
	static const uint8_t sz[] = { BPF_B, BPF_H, BPF_W, BPF_DW };
	size_t n = 0, want = 4 + rnd() % (max - 24);

	if (rnd() % 4)
		v[n++] = (struct bpf_insn)I_MOV64_REG(6, 1);
	while (n < want) {
		uint8_t op, c;
		int base, r = rnd() % 10;
		int16_t off;

		switch (rnd() % 20) {
		case 0: case 1: case 2: case 3: case 4:
			op = alu[rnd() % N(alu)];
			c = (rnd() % 2 ? BPF_ALU64 : BPF_ALU) | op |
			    (rnd() % 2 ? BPF_X : BPF_K);
			if (op == BPF_NEG)
				c &= ~BPF_X;
			if (op == BPF_END)
				c = BPF_ALU | BPF_END |
				    (rnd() % 2 ? BPF_X : BPF_K);
			v[n++] = (struct bpf_insn)I_RAW(c, r,
				BPF_SRC(c) == BPF_X ? rnd() % 11 : 0, 0,
				op == BPF_END ? 16 << rnd() % 3 : rnd_imm());
			break;
		case 5: case 6:
			v[n++] = (struct bpf_insn)I_MOV64_IMM(r, rnd_imm());
			break;
		case 7: case 8:
			c = sz[rnd() % 4];
			rnd_mem(&base, &off, c);
			v[n++] = (struct bpf_insn)I_RAW(BPF_LDX | BPF_MEM | c,
				r, base, off, 0);
			break;
		case 9: case 10:
			c = sz[rnd() % 4];
			rnd_mem(&base, &off, c);
			if (rnd() % 2)
				v[n++] = (struct bpf_insn)I_RAW(BPF_ST |
					BPF_MEM | c, base, 0, off, rnd_imm());
			else
				v[n++] = (struct bpf_insn)I_RAW(BPF_STX |
					BPF_MEM | c, base, rnd() % 11, off, 0);
			break;
		case 11:
			rnd_mem(&base, &off, 8);
			v[n++] = (struct bpf_insn)I_RAW(BPF_STX | BPF_ATOMIC |
				(rnd() % 2 ? BPF_DW : BPF_W), base,
				rnd() % 11, off & ~3,
				BPF_ADD | (rnd() % 2 ? BPF_FETCH : 0));
			break;
		case 12: {
			uint64_t k = rnd() % 2 ? rnd() : (uint64_t)rnd_imm();
			struct bpf_insn ld[] = {
				I_LD64_LO(r, 0, k), I_LD64_HI(k),
			};

			v[n++] = ld[0];
			v[n++] = ld[1];
			break;
		}
		case 13: case 14:
			n += rnd_call(&v[n]);
			break;
		case 15: case 16: case 17:
			op = jmp[rnd() % N(jmp)];
			c = op != BPF_JA && rnd() % 3 == 0 ? BPF_JMP32 : BPF_JMP;
			c |= op | (op != BPF_JA && rnd() % 2 ? BPF_X : BPF_K);
			/* the target's slot in off, fixed below */
			v[n] = (struct bpf_insn)I_RAW(c, op == BPF_JA ? 0 : r,
				BPF_SRC(c) == BPF_X ? rnd() % 11 : 0, 0,
				op == BPF_JA ? 0 : rnd_imm());
			v[n].off = (int16_t)(rnd() % 16);
			if (loops && rnd() % 3 == 0)
				v[n].off = -(int16_t)(rnd() % 8) - 1;
			n++;
			break;
		case 18:
			v[n++] = (struct bpf_insn)I_EXIT();
			break;
		default:
			v[n++] = (struct bpf_insn)I_MOV64_REG(r, rnd() % 11);
		}
	}
	v[n++] = (struct bpf_insn)I_EXIT();
	/* forward jumps: OFF slots ahead, at most to the exit */
	for (size_t pc = 0; pc < n; pc++) {
		uint8_t cls = BPF_CLASS(v[pc].code), op = BPF_OP(v[pc].code);

		if (v[pc].code == (BPF_LD | BPF_IMM | BPF_DW)) {
			pc++;
			continue;
		}
		if ((cls == BPF_JMP || cls == BPF_JMP32) && op != BPF_CALL &&
		    op != BPF_EXIT && v[pc].off > 0 &&
		    pc + 1 + v[pc].off >= n)
			v[pc].off = (int16_t)(n - 2 - pc);
	}
	return n;
}

/* 0 ends, 1 -EFAULT, 2 -E2BIG, 3 -EINVAL */
static int kind(int e)
{
	return e == 0 ? 0 : e == -EFAULT ? 1 : e == -E2BIG ? 2 : 3;
}

/* Thousands of random programs the verifier accepts, both ways. */
static void test_jit_random(void)
{
	static struct bpf_insn v[96];
	int kinds[4] = { 0 }, ok = 0, tried = 0, d0 = jit_diffs;
	static const uint64_t ctx[4] = { 0x1111, 0x2222, 0x3333, 0x4444 };

	while (ok < 6000 && tried < 400000) {
		size_t n = rnd_prog(v, N(v), !(tried % 16));
		struct hbpf_prog p = prog(v, n);
		struct rback b = {
			{ { 1, 2 }, { 3, 4 }, { 5, 6 } }, 0, { 0 }, 0,
		};
		uint64_t r;
		int e;

		tried++;
		if (hbpf_verify(&p, NULL, NULL, 0))
			continue;
		ok++;
		/* every eighth without a context: no unchecked reads then */
		e = differ(&p, &rops, &b, sizeof(b), ok % 8 ? ctx : NULL,
			   ok % 8, &r);
		kinds[kind(e)]++;
	}
	printf("# %d random programs of %d verified: %d ran to the end, "
	       "%d -EFAULT, %d -E2BIG, %d -EINVAL\n", ok, tried, kinds[0],
	       kinds[1], kinds[2], kinds[3]);
	CHECK(ok == 6000 && jit_diffs == d0 && kinds[0] > 400 &&
	      kinds[1] > 100 && kinds[2] > 10 && kinds[3] > 10,
	      "jit/random verified programs as the interpreter runs them");
}

/*
 * The budget's edge: N rounds of a 3-instruction loop after PAD
 * instructions, then a store and a store below the stack.  Around the
 * N where the budget ends between the two, the outcome and the stack
 * must be the interpreter's: the JIT counts a block at its start, and
 * hands a block that would pass the budget to the interpreter.
 */
static void test_jit_budget(void)
{
	int kinds[4] = { 0 }, d0 = jit_diffs;

	for (int pad = 1; pad <= 3; pad++) {
		for (int32_t n = 333329; n <= 333334; n++) {
			struct bpf_insn v[16];
			size_t k = 0;
			uint64_t r;
			int e;

			v[k++] = (struct bpf_insn)I_MOV64_IMM(1, n);
			for (int i = 1; i < pad; i++)
				v[k++] = (struct bpf_insn)I_MOV64_IMM(0, i);
			v[k++] = (struct bpf_insn)I_ALU64_IMM(BPF_SUB, 1, 1);
			v[k++] = (struct bpf_insn)I_JMP_IMM(BPF_JEQ, 1, 0, 1);
			v[k++] = (struct bpf_insn)I_JA(-3);
			v[k++] = (struct bpf_insn)I_ST(BPF_DW, 10, -8, 7);
			v[k++] = (struct bpf_insn)I_ST(BPF_DW, 10, -520, 1);
			v[k++] = (struct bpf_insn)I_EXIT();
			{
				struct hbpf_prog p = prog(v, k);

				e = differ(&p, NULL, NULL, 0, NULL, false, &r);
			}
			kinds[kind(e)]++;
		}
	}
	CHECK(jit_diffs == d0 && kinds[1] && kinds[2],
	      "jit/a run ending at the budget's edge (fault or -E2BIG)");
	/* a loop of exactly HBPF_BUDGET instructions ends; one more not:
	 * 2 + PAD + 3 N + 1 instructions */
	for (int pad = 1; pad <= 2; pad++) {
		int32_t n = (HBPF_BUDGET - 4) / 3;
		struct bpf_insn v[8];
		struct hbpf_prog p;
		uint64_t r = 0;
		size_t k = 0;
		int e;

		v[k++] = (struct bpf_insn)I_MOV64_IMM(0, 0);
		v[k++] = (struct bpf_insn)I_MOV64_IMM(1, n);
		for (int i = 0; i < pad; i++)
			v[k++] = (struct bpf_insn)I_MOV64_IMM(2, i);
		v[k++] = (struct bpf_insn)I_ALU64_IMM(BPF_ADD, 0, 1);
		v[k++] = (struct bpf_insn)I_ALU64_IMM(BPF_SUB, 1, 1);
		v[k++] = (struct bpf_insn)I_JMP_IMM(BPF_JNE, 1, 0, -3);
		v[k++] = (struct bpf_insn)I_EXIT();
		p = prog(v, k);
		e = differ(&p, NULL, NULL, 0, NULL, false, &r);
		CHECK(jit_diffs == d0 && (pad == 2 ? e == -E2BIG :
					  !e && r == (uint64_t)n),
		      pad == 2 ? "jit/budget: one instruction too many" :
				 "jit/budget: HBPF_BUDGET instructions");
	}
}

struct lback {
	uint64_t names[9];	/* .cuda_names: key[64], bits */
	uint64_t count;
	uint64_t lookups;	/* calls of l_lookup */
	struct hbpf_memo *memo;	/* filled when not NULL, as the agent does */
	uint64_t keys[2][8];	/* the keys the memo's entries point at */
};

static void *l_lookup(void *arg, int map, const void *key)
{
	struct lback *b = arg;
	void *v = map == 3 ? (void *)b->names : map == 0 ? &b->count : NULL;
	int k = map == 3;

	b->lookups++;
	if (v && b->memo) {
		memcpy(b->keys[k], key, map == 3 ? 8 : 64);
		b->memo[map] = (struct hbpf_memo){ v, b->keys[k] };
	}
	return v;
}

static const struct hbpf_ops lops = { .lookup = l_lookup };

/*
 * The lookup memo (struct hbpf_memo) on P, the @[kernel] program, with
 * a host that fills it as the agent does: the first run asks the host
 * for the name and the count, the next ones ask nothing while the memo
 * holds, and count the same; a name key that differs, or a memo the
 * host cleared, asks again; a host that fills no memo is always asked.
 */
static void test_jit_memo(const struct hbpf_prog *p)
{
	static struct hbpf_memo memo[HBPF_MAX_MAPS];
	struct lback b = { { 0x6c656e72656bull }, 0, 0, memo, { { 0 } } };
	uint64_t ctx[21] = { 0 }, r = 0, l0;
	struct hbpf_jit *j;
	char err[256];
	int e = 0;

	j = hbpf_jit_compile(p, &lops, err, sizeof(err));
	if (!j) {
		CHECK(0, "jit/memo: the @[kernel] program compiles");
		return;
	}
	for (int i = 0; i < 5 && !e; i++)
		e = hbpf_jit_run(j, &b, ctx, memo, &r);
	CHECK(!e && b.count == 5 && b.lookups == 2,
	      "jit/memo: five runs count 5 and ask the host twice");
	l0 = b.lookups;
	ctx[14] = 7;	/* another handle: the name is asked, the count not */
	e = hbpf_jit_run(j, &b, ctx, memo, &r);
	CHECK(!e && b.count == 6 && b.lookups == l0 + 1,
	      "jit/memo: another key asks the host once");
	l0 = b.lookups;
	memo[3].val = NULL;	/* the host reused the name's memory */
	b.names[8] = 1u << 30;	/* now the agent's own kernel: skipped */
	e = hbpf_jit_run(j, &b, ctx, memo, &r);
	CHECK(!e && b.count == 6 && b.lookups == l0 + 1,
	      "jit/memo: a cleared memo asks again and sees the new value");
	b.names[8] = 0;
	memset(memo, 0, sizeof(memo));
	b.memo = NULL;
	l0 = b.lookups;
	for (int i = 0; i < 3 && !e; i++)
		e = hbpf_jit_run(j, &b, ctx, memo, &r);
	CHECK(!e && b.count == 9 && b.lookups == l0 + 6,
	      "jit/memo: a host that fills no memo is asked at every lookup");
	hbpf_jit_free(j);
}

/* What codegen sends for `cuda:launch { @[kernel] = count(); }`. */
static void test_jit_launch(void)
{
	static const struct bpf_insn v[] = {
		I_RAW(0xbf,6,1,0,0),
		I_RAW(0x79,1,6,112,0),
		I_RAW(0x7b,10,1,-8,0),
		I_RAW(0x18,1,1,0,(int32_t)0x3),
		I_RAW(0, 0, 0, 0,(int32_t)0x0),
		I_RAW(0xbf,2,10,0,0),
		I_RAW(0x7,2,0,0,-8),
		I_RAW(0x85,0,0,0,1),
		I_RAW(0x7b,10,0,-16,0),
		I_RAW(0x15,0,0,5,(int32_t)0x0),
		I_RAW(0x79,0,0,64,0),
		I_RAW(0x45,0,0,1,(int32_t)0x40000000),
		I_RAW(0x05,0,0,2,0),
		I_RAW(0xb7,0,0,0,0),
		I_RAW(0x95,0,0,0,0),
		I_RAW(0xb7,0,0,0,1),
		I_RAW(0x7b,10,0,-24,0),
		I_RAW(0x79,0,10,-16,0),
		I_RAW(0x15,0,0,17,(int32_t)0x0),
		I_RAW(0x79,1,0,0,0),
		I_RAW(0x7b,10,1,-88,0),
		I_RAW(0x79,1,0,8,0),
		I_RAW(0x7b,10,1,-80,0),
		I_RAW(0x79,1,0,16,0),
		I_RAW(0x7b,10,1,-72,0),
		I_RAW(0x79,1,0,24,0),
		I_RAW(0x7b,10,1,-64,0),
		I_RAW(0x79,1,0,32,0),
		I_RAW(0x7b,10,1,-56,0),
		I_RAW(0x79,1,0,40,0),
		I_RAW(0x7b,10,1,-48,0),
		I_RAW(0x79,1,0,48,0),
		I_RAW(0x7b,10,1,-40,0),
		I_RAW(0x79,1,0,56,0),
		I_RAW(0x7b,10,1,-32,0),
		I_RAW(0x05,0,0,16,0),
		I_RAW(0x62,10,0,-88,1852534389),
		I_RAW(0x62,10,0,-84,7239535),
		I_RAW(0x62,10,0,-80,0),
		I_RAW(0x62,10,0,-76,0),
		I_RAW(0x62,10,0,-72,0),
		I_RAW(0x62,10,0,-68,0),
		I_RAW(0x62,10,0,-64,0),
		I_RAW(0x62,10,0,-60,0),
		I_RAW(0x62,10,0,-56,0),
		I_RAW(0x62,10,0,-52,0),
		I_RAW(0x62,10,0,-48,0),
		I_RAW(0x62,10,0,-44,0),
		I_RAW(0x62,10,0,-40,0),
		I_RAW(0x62,10,0,-36,0),
		I_RAW(0x62,10,0,-32,0),
		I_RAW(0x62,10,0,-28,0),
		I_RAW(0x18,1,1,0,(int32_t)0x0),
		I_RAW(0, 0, 0, 0,(int32_t)0x0),
		I_RAW(0xbf,2,10,0,0),
		I_RAW(0x7,2,0,0,-88),
		I_RAW(0x85,0,0,0,1),
		I_RAW(0x15,0,0,4,(int32_t)0x0),
		I_RAW(0x79,1,0,0,0),
		I_RAW(0x7,1,0,0,1),
		I_RAW(0x7b,0,1,0,0),
		I_RAW(0x05,0,0,10,0),
		I_RAW(0x79,1,10,-24,0),
		I_RAW(0x7a,10,0,-96,1),
		I_RAW(0x18,1,1,0,(int32_t)0x0),
		I_RAW(0, 0, 0, 0,(int32_t)0x0),
		I_RAW(0xbf,2,10,0,0),
		I_RAW(0x7,2,0,0,-88),
		I_RAW(0xbf,3,10,0,0),
		I_RAW(0x7,3,0,0,-96),
		I_RAW(0xb7,4,0,0,0),
		I_RAW(0x85,0,0,0,2),
		I_RAW(0xb7,0,0,0,0),
		I_RAW(0x95,0,0,0,0)
	};
	static const struct hbpf_map lm[] = {
		{ 64, 8, false }, { 8, 8, false }, { 8, 8, false },
		{ 8, 72, false },
	};
	struct hbpf_prog p = { v, N(v), lm, (int)N(lm), 168 };
	static struct lback b = { { 0x6c656e72656bull }, 0, 0, NULL, { { 0 } } };
	uint64_t ctx[21] = { 0 }, r = 0;
	struct hbpf_jit *j;
	char err[256];
	int e = 0, d0 = jit_diffs;

	j = hbpf_jit_compile(&p, &lops, err, sizeof(err));
	CHECK(j && hbpf_jit_size(j) < 2048,
	      "jit/the @[kernel] program in under 2 KB of code");
	if (j)
		printf("# %zu instructions: %zu bytes\n", N(v),
		       hbpf_jit_size(j));
	hbpf_jit_free(j);
	for (int i = 0; i < 3 && !e; i++) {
		ctx[14] = i;
		e = differ(&p, &lops, &b, sizeof(b), ctx, false, &r);
	}
	b.names[8] = 1u << 30;	/* the agent's own kernel: skipped */
	if (!e)
		e = differ(&p, &lops, &b, sizeof(b), ctx, false, &r);
	CHECK(!e && b.count == 3 && jit_diffs == d0,
	      "jit/the @[kernel] program counts as the interpreter does");
	test_jit_memo(&p);
}

int main(void)
{
	test_verify();
	test_alu();
	test_memory();
	test_config();
	CHECK(jit_runs > 20 && !jit_diffs,
	      "jit/every program above as the interpreter runs it");
	test_jit_random();
	test_jit_budget();
	test_jit_launch();
	return unit_failed;
}
