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
#include "unit.h"

#define N(a)	(sizeof(a) / sizeof((a)[0]))

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

/* Verify and run; r0 in *RET. */
static int run(const struct bpf_insn *v, size_t n, const struct hbpf_ops *o,
	       void *arg, const void *ctx, uint64_t *ret)
{
	struct hbpf_prog p = prog(v, n);
	char err[256];
	int e = hbpf_verify(&p, NULL, err, sizeof(err));

	if (e) {
		printf("# verify: %s\n", err);
		return e;
	}
	*ret = 0xdead;
	return hbpf_run(&p, o, arg, ctx, ret);
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
	uint64_t r;

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

/* A one-entry-per-map backend: values in VALS, key ignored. */
struct backend {
	uint64_t vals[2][2];
	bool have[2];
	int updates;
	char out[64];
	uint64_t outlen;
};

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

int main(void)
{
	test_verify();
	test_alu();
	test_memory();
	test_config();
	return unit_failed;
}
