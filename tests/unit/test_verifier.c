/* SPDX-License-Identifier: MIT */
/* Device verifier: hand-written unsafe programs rejected, safe ones kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ptx_lower.h"
#include "compiler/verifier.h"
#include "tests/unit/unit.h"

#define I(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
			    .off = (o), .imm = (i) })
#define MOV(d, k)	I(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, k)
#define MOVR(d, s)	I(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define ALU(op, d, k)	I(BPF_ALU64 | (op) | BPF_K, d, 0, 0, k)
#define ALUR(op, d, s)	I(BPF_ALU64 | (op) | BPF_X, d, s, 0, 0)
#define ALU32(op, d, k)	I(BPF_ALU | (op) | BPF_K, d, 0, 0, k)
#define ALU32R(op, d, s) I(BPF_ALU | (op) | BPF_X, d, s, 0, 0)
#define LDX(sz, d, s, o) I(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define STX(sz, d, s, o) I(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define ST(sz, d, o, k)	I(BPF_ST | BPF_MEM | (sz), d, 0, o, k)
#define XADD(sz, d, s, o, op) I(BPF_STX | BPF_ATOMIC | (sz), d, s, o, op)
#define JI(op, d, k, o)	I(BPF_JMP | (op) | BPF_K, d, 0, o, k)
#define JR(op, d, s, o)	I(BPF_JMP | (op) | BPF_X, d, s, o, 0)
#define J32I(op, d, k, o) I(BPF_JMP32 | (op) | BPF_K, d, 0, o, k)
#define JA(o)		I(BPF_JMP | BPF_JA, 0, 0, o, 0)
#define CALL(id)	I(BPF_JMP | BPF_CALL, 0, 0, 0, id)
#define EXIT()		I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define LD64(d, v)	I(BPF_LD | BPF_DW | BPF_IMM, d, 0, 0, (int32_t)(uint32_t)(v)), \
			I(0, 0, 0, 0, (int32_t)(uint32_t)((uint64_t)(v) >> 32))
#define LDMAP(d, idx)	I(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, idx), \
			I(0, 0, 0, 0, 0)
#define RET0()		MOV(0, 0), EXIT()
/* r2 = fp-8 holding an 8-byte key, r1 = map 1 */
#define KEY8()		ST(BPF_DW, 10, -8, 0), MOVR(2, 10), ALU(BPF_ADD, 2, -8), \
			MOV(1, 1)
#define LOOKUP()	KEY8(), CALL(GT_DH_MAP_LOOKUP)

/* id key value per_kernel */
static const struct gt_dev_map maps[] = {
	{ 1, 8, 8, false },	/* @x[u64] = u64 */
	{ 2, 0, 16, false },	/* @y = (u64, u64), no key */
	{ 7, 16, 8, false },	/* @z[u64, u64] */
};
#define NMAPS ((int)(sizeof(maps) / sizeof(maps[0])))

static void reject(const char *name, const struct bpf_insn *p, size_t n,
		   int want_ret, int want_pc, const char *want)
{
	char err[256], prefix[64], msg[512];
	int ret = vf_verify(p, n, maps, NMAPS, "t", NULL, err, sizeof(err));
	int ok;

	if (want_pc >= 0)
		snprintf(prefix, sizeof(prefix), "t: insn %d: ", want_pc);
	else
		snprintf(prefix, sizeof(prefix), "t: insn ");
	ok = ret == want_ret && !strncmp(err, prefix, strlen(prefix)) &&
	     strstr(err, want);
	snprintf(msg, sizeof(msg), "reject %s (ret %d, \"%s\")", name, ret,
		 err);
	CHECK(ok, ok ? name : msg);
}

static void accept(const char *name, const struct bpf_insn *p, size_t n)
{
	char err[256], msg[512];
	int ret = vf_verify(p, n, maps, NMAPS, "t", NULL, err, sizeof(err));

	snprintf(msg, sizeof(msg), "accept %s (ret %d, \"%s\")", name, ret,
		 err);
	CHECK(ret == 0 && !err[0], ret == 0 ? name : msg);
}

#define REJECT(name, ret, pc, want, ...) do {				\
	const struct bpf_insn p_[] = { __VA_ARGS__ };			\
	reject(name, p_, sizeof(p_) / sizeof(p_[0]), ret, pc, want);	\
} while (0)

#define ACCEPT(name, ...) do {						\
	const struct bpf_insn p_[] = { __VA_ARGS__ };			\
	accept(name, p_, sizeof(p_) / sizeof(p_[0]));			\
} while (0)

static void test_structure(void)
{
	/* a part reached only by a jump back is reached all the same */
	REJECT("back edge leaves exit unreachable", -EINVAL, 2,
	       "unreachable instruction", MOV(0, 0), JA(-2), EXIT());
	ACCEPT("reached by a jump back only", MOV(6, 0), JA(3),
	       ALU(BPF_ADD, 6, 1), JI(BPF_JGE, 6, 3, 2), JA(-3),
	       JI(BPF_JLT, 6, 3, -3), RET0());
	REJECT("jump out of range", -EINVAL, 1, "jump out of range to insn 7",
	       MOV(0, 0), JA(5), EXIT());
	REJECT("falls off the end", -EINVAL, 1, "falls off the end",
	       MOV(0, 0), MOV(1, 0));
	REJECT("call falls off the end", -EINVAL, 1, "falls off the end",
	       MOV(0, 0), CALL(GT_DH_SMID));
	REJECT("unreachable", -EINVAL, 2, "unreachable instruction",
	       RET0(), RET0());
	REJECT("jump into ld_imm64", -EINVAL, 0, "middle of ld_imm64",
	       JA(1), LD64(0, 1), EXIT());
	REJECT("bad opcode", -EINVAL, 0, "invalid ALU opcode",
	       I(BPF_ALU64 | 0xe0 | BPF_K, 0, 0, 0, 0), EXIT());
	reject("empty", NULL, 0, -EINVAL, 0, "empty program");
}

static void test_too_large(void)
{
	size_t n = VF_MAX_INSNS + 1, i;
	struct bpf_insn *p = calloc(n, sizeof(*p));

	for (i = 0; i + 1 < n; i++)
		p[i] = MOV(0, (int)i);
	p[n - 1] = EXIT();
	reject("too many insns", p, n, -EINVAL, 0, "program too large: 4097");
	/* the limit itself is fine */
	p[n - 2] = EXIT();
	accept("4096 insns", p, n - 1);
	free(p);
}

/*
 * Twenty independent ifs on an unknown, each setting its own bit: 2^20
 * distinct states, so no pruning can save the walk.
 */
static void test_too_complex(void)
{
	struct bpf_insn p[64];
	int n = 0, k;

	p[n++] = CALL(GT_DH_CLOCK);
	p[n++] = MOVR(7, 0);
	p[n++] = MOV(6, 0);
	for (k = 0; k < 20; k++) {
		p[n++] = JI(BPF_JSET, 7, 1 << k, 1);
		p[n++] = ALU(BPF_OR, 6, 1 << k);
	}
	p[n++] = MOVR(0, 6);
	p[n++] = EXIT();
	reject("too complex", p, n, -EACCES, -1,
	       "program too complex: more than 100000 instructions");
}

static void test_registers(void)
{
	REJECT("uninit reg", -EACCES, 0, "R2 is not initialised",
	       MOVR(0, 2), EXIT());
	REJECT("uninit r0 at exit", -EACCES, 0, "R0 is not initialised at exit",
	       EXIT());
	REJECT("r0 void after call", -EACCES, 5, "R0 is not initialised at exit",
	       KEY8(), CALL(GT_DH_AGG_COUNT), EXIT());
	REJECT("args clobbered by call", -EACCES, 2, "R1 is not initialised",
	       MOV(1, 3), CALL(GT_DH_SMID), MOVR(0, 1), EXIT());
	REJECT("write r10", -EACCES, 0, "frame pointer r10 is read only",
	       MOV(10, 0), RET0());
	REJECT("add to r10", -EACCES, 0, "frame pointer r10 is read only",
	       ALU(BPF_ADD, 10, -8), RET0());
	REJECT("exit with pointer", -EACCES, 1, "exit with a pointer",
	       MOVR(0, 10), EXIT());
	REJECT("bad register", -EINVAL, 0, "invalid register r11",
	       MOVR(0, 11), EXIT());
}

static void test_stack(void)
{
	REJECT("uninit stack read", -EACCES, 0,
	       "read of uninitialised stack fp-8",
	       LDX(BPF_DW, 0, 10, -8), EXIT());
	REJECT("partly written stack", -EACCES, 1,
	       "read of uninitialised stack fp-4",
	       ST(BPF_W, 10, -8, 1), LDX(BPF_DW, 0, 10, -8), EXIT());
	REJECT("stack below 512", -EACCES, 0, "invalid stack access fp-520",
	       ST(BPF_DW, 10, -520, 0), RET0());
	REJECT("stack at fp", -EACCES, 0, "invalid stack access fp+0",
	       ST(BPF_W, 10, 0, 0), RET0());
	REJECT("stack misaligned", -EACCES, 0, "misaligned stack access fp-12",
	       ST(BPF_DW, 10, -12, 0), RET0());
	REJECT("stack through moved pointer", -EACCES, 2,
	       "invalid stack access fp-516",
	       MOVR(1, 10), ALU(BPF_ADD, 1, -512), STX(BPF_W, 1, 1, -4),
	       RET0());
	REJECT("partial read of spilled pointer", -EACCES, 1,
	       "partial read of a spilled stack pointer",
	       STX(BPF_DW, 10, 10, -8), LDX(BPF_W, 0, 10, -8), EXIT());
	REJECT("partial pointer store", -EACCES, 0,
	       "partial store of a stack pointer",
	       STX(BPF_W, 10, 10, -8), RET0());
	REJECT("pointer bits after partial overwrite", -EACCES, 2,
	       "read of uninitialised stack fp-4",
	       STX(BPF_DW, 10, 10, -8), ST(BPF_W, 10, -8, 0),
	       LDX(BPF_W, 0, 10, -4), EXIT());
	REJECT("scalar deref", -EACCES, 1, "R1 invalid memory access: scalar",
	       MOV(1, 4096), LDX(BPF_DW, 0, 1, 0), EXIT());
	REJECT("ctx deref", -EACCES, 0, "R1 invalid memory access: ctx",
	       LDX(BPF_DW, 0, 1, 0), EXIT());
	REJECT("atomic result is unknown", -EACCES, 8,
	       "gt_agg_count: R1 must be a known constant",
	       ST(BPF_W, 10, -16, 7), ST(BPF_W, 10, -12, 0), MOV(3, 7),
	       XADD(BPF_DW, 10, 3, -16, BPF_ADD), LDX(BPF_DW, 1, 10, -16),
	       ST(BPF_DW, 10, -8, 0), MOVR(2, 10), ALU(BPF_ADD, 2, -8),
	       CALL(GT_DH_AGG_COUNT), RET0());
	REJECT("atomic on spilled pointer", -EACCES, 2,
	       "atomic op on a spilled stack pointer",
	       STX(BPF_DW, 10, 10, -8), MOV(1, 1),
	       XADD(BPF_DW, 10, 1, -8, BPF_ADD), RET0());
	REJECT("atomic on uninit stack", -EACCES, 1,
	       "atomic op on uninitialised stack fp-8",
	       MOV(1, 1), XADD(BPF_DW, 10, 1, -8, BPF_ADD), RET0());
}

static void test_pointer_alu(void)
{
	REJECT("stack ptr + unknown", -EACCES, 2, "unknown scalar",
	       CALL(GT_DH_LANEID), MOVR(1, 10), ALUR(BPF_ADD, 1, 0), RET0());
	REJECT("unknown + stack ptr", -EACCES, 1, "unknown scalar",
	       CALL(GT_DH_LANEID), ALUR(BPF_ADD, 0, 10), RET0());
	REJECT("pointer mul", -EACCES, 1, "other than add/sub",
	       MOVR(1, 10), ALU(BPF_MUL, 1, 2), RET0());
	REJECT("pointer and", -EACCES, 1, "other than add/sub",
	       MOVR(1, 10), ALU(BPF_AND, 1, -8), RET0());
	REJECT("pointer - pointer", -EACCES, 2, "between two pointers",
	       MOVR(1, 10), MOVR(2, 10), ALUR(BPF_SUB, 1, 2), RET0());
	REJECT("scalar - pointer", -EACCES, 1, "subtracting a pointer",
	       MOV(1, 0), ALUR(BPF_SUB, 1, 10), RET0());
	REJECT("32-bit pointer add", -EACCES, 1, "32-bit arithmetic",
	       MOVR(1, 10), ALU32(BPF_ADD, 1, -8), RET0());
	REJECT("32-bit pointer move", -EACCES, 0, "32-bit move of a stack",
	       ALU32R(BPF_MOV, 1, 10), RET0());
	REJECT("pointer negation", -EACCES, 1, "negation of a stack pointer",
	       MOVR(1, 10), I(BPF_ALU64 | BPF_NEG, 1, 0, 0, 0), RET0());
	REJECT("ctx arithmetic", -EACCES, 0, "arithmetic on the ctx",
	       ALU(BPF_ADD, 1, 8), RET0());
	REJECT("pointer compare", -EACCES, 1, "only be compared with == 0",
	       MOVR(1, 10), JI(BPF_JGT, 1, 5, 0), RET0());
	REJECT("32-bit pointer compare", -EACCES, 1, "32-bit comparison",
	       MOVR(1, 10), J32I(BPF_JEQ, 1, 0, 0), RET0());
}

static void test_scalar_alu(void)
{
	REJECT("div by constant zero", -EACCES, 1, "division by zero",
	       MOV(0, 5), ALU(BPF_DIV, 0, 0), EXIT());
	REJECT("mod by known-zero reg", -EACCES, 2, "division by zero",
	       MOV(0, 5), MOV(1, 0), ALUR(BPF_MOD, 0, 1), EXIT());
	REJECT("32-bit div by zero high bits", -EACCES, 3, "division by zero",
	       MOV(0, 5), LD64(1, 0x100000000ull), ALU32R(BPF_DIV, 0, 1),
	       EXIT());
	REJECT("shift too far", -EINVAL, 1, "invalid shift 64",
	       MOV(0, 1), ALU(BPF_LSH, 0, 64), EXIT());
	REJECT("32-bit shift too far", -EINVAL, 1, "invalid shift 32",
	       MOV(0, 1), ALU32(BPF_RSH, 0, 32), EXIT());
	REJECT("cpu v4 sdiv", -EINVAL, 1, "cpu v4",
	       MOV(0, 1), I(BPF_ALU64 | BPF_DIV | BPF_K, 0, 0, 1, 3), EXIT());
}

static void test_maps(void)
{
	REJECT("no null check", -EACCES, 5,
	       "R0 invalid memory access: map value pointer that may be NULL",
	       LOOKUP(), LDX(BPF_DW, 1, 0, 0), RET0());
	REJECT("null check inverted", -EACCES, 6,
	       "R0 invalid memory access: scalar",
	       LOOKUP(), JI(BPF_JNE, 0, 0, 3), LDX(BPF_DW, 1, 0, 0), RET0(),
	       RET0());
	REJECT("copy used before check", -EACCES, 6, "may be NULL",
	       LOOKUP(), MOVR(6, 0), ST(BPF_DW, 6, 0, 1), RET0());
	REJECT("arith before null check", -EACCES, 5, "may be NULL",
	       LOOKUP(), ALU(BPF_ADD, 0, 8), RET0());
	REJECT("value past end", -EACCES, 6,
	       "invalid map value access off 8 size 8 (value_size 8)",
	       LOOKUP(), JI(BPF_JEQ, 0, 0, 3), LDX(BPF_DW, 1, 0, 8), RET0(),
	       RET0());
	REJECT("value straddles end", -EACCES, 6,
	       "invalid map value access off 6 size 4",
	       LOOKUP(), JI(BPF_JEQ, 0, 0, 3), ST(BPF_W, 0, 6, 1), RET0(),
	       RET0());
	REJECT("value negative", -EACCES, 7,
	       "invalid map value access off -8",
	       LOOKUP(), JI(BPF_JEQ, 0, 0, 4), ALU(BPF_ADD, 0, -8),
	       LDX(BPF_DW, 1, 0, 0), RET0(), RET0());
	REJECT("value misaligned", -EACCES, 6, "misaligned map value access",
	       LOOKUP(), JI(BPF_JEQ, 0, 0, 3), LDX(BPF_W, 1, 0, 2), RET0(),
	       RET0());
	REJECT("pointer into map value", -EACCES, 6,
	       "storing a stack pointer into a map value",
	       LOOKUP(), JI(BPF_JEQ, 0, 0, 3), STX(BPF_DW, 0, 10, 0), RET0(),
	       RET0());
	REJECT("ld_imm64 map fd", -EACCES, 0, "map reference",
	       LDMAP(1, 0), RET0());
}

static void test_helpers(void)
{
	REJECT("kernel helper", -EACCES, 0,
	       "kernel helper bpf_map_lookup_elem#1 is not available",
	       CALL(BPF_FUNC_map_lookup_elem), RET0());
	REJECT("kernel ktime", -EACCES, 0, "bpf_ktime_get_ns#5",
	       CALL(BPF_FUNC_ktime_get_ns), EXIT());
	REJECT("unknown helper", -EACCES, 0, "unknown helper id 99999",
	       CALL(99999), EXIT());
	REJECT("helper past the table", -EACCES, 0, "unknown helper id",
	       CALL(GT_DH_END_), EXIT());
	REJECT("tail call", -EACCES, 0, "tail calls are not supported",
	       CALL(BPF_FUNC_tail_call), RET0());
	REJECT("bpf-to-bpf call", -EACCES, 0, "bpf-to-bpf calls",
	       I(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 1), RET0());
	REJECT("kfunc", -EACCES, 0, "kfunc calls",
	       I(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, 5), RET0());
	REJECT("ld_abs", -EACCES, 0, "ld_abs/ld_ind",
	       I(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 12), EXIT());
	REJECT("map id unknown scalar", -EACCES, 7,
	       "gt_map_lookup: R1 must be a known constant",
	       CALL(GT_DH_SMID), ST(BPF_DW, 10, -8, 0), MOVR(2, 10),
	       ALU(BPF_ADD, 2, -8), MOVR(1, 0), LD64(0, 0),
	       CALL(GT_DH_MAP_LOOKUP), RET0());
	REJECT("map id not a map", -EACCES, 4,
	       "R1 = 42 is not a device map id",
	       ST(BPF_DW, 10, -8, 0), MOVR(2, 10), ALU(BPF_ADD, 2, -8),
	       MOV(1, 42), CALL(GT_DH_AGG_COUNT), RET0());
	REJECT("key uninit", -EACCES, 3,
	       "gt_map_lookup: R2 key reads uninitialised stack fp-8",
	       MOVR(2, 10), ALU(BPF_ADD, 2, -8), MOV(1, 1),
	       CALL(GT_DH_MAP_LOOKUP), RET0());
	REJECT("key too short", -EACCES, 4,
	       "R2 key reads uninitialised stack fp-8",
	       ST(BPF_DW, 10, -16, 0), MOVR(2, 10), ALU(BPF_ADD, 2, -16),
	       MOV(1, 7), CALL(GT_DH_MAP_LOOKUP), RET0());
	REJECT("key is a scalar", -EACCES, 2,
	       "R2 key must point to the stack, not be a scalar",
	       MOV(2, 5), MOV(1, 1), CALL(GT_DH_MAP_DELETE), RET0());
	REJECT("key misaligned", -EACCES, 4, "not 8-byte aligned",
	       ST(BPF_DW, 10, -16, 0), MOVR(2, 10), ALU(BPF_ADD, 2, -12),
	       MOV(1, 1), CALL(GT_DH_MAP_LOOKUP), RET0());
	REJECT("key outside stack", -EACCES, 3, "outside the stack",
	       MOVR(2, 10), ALU(BPF_ADD, 2, -520), MOV(1, 1),
	       CALL(GT_DH_MAP_LOOKUP), RET0());
	REJECT("key holds pointer", -EACCES, 4, "holds a spilled pointer",
	       STX(BPF_DW, 10, 10, -8), MOVR(2, 10), ALU(BPF_ADD, 2, -8),
	       MOV(1, 1), CALL(GT_DH_MAP_LOOKUP), RET0());
	REJECT("update value uninit", -EACCES, 7,
	       "gt_map_update: R3 value reads uninitialised stack fp-12",
	       KEY8(), ST(BPF_W, 10, -16, 1), MOVR(3, 10),
	       ALU(BPF_ADD, 3, -16), CALL(GT_DH_MAP_UPDATE), RET0());
	REJECT("agg value is a pointer", -EACCES, 5,
	       "gt_agg_sum: R3 must be a scalar, not a stack pointer",
	       KEY8(), MOVR(3, 10), CALL(GT_DH_AGG_SUM), RET0());
	REJECT("agg value uninit", -EACCES, 4,
	       "gt_agg_max: R3 is not initialised",
	       KEY8(), CALL(GT_DH_AGG_MAX), RET0());
	REJECT("arg index unknown", -EACCES, 2,
	       "gt_arg: R1 must be a known constant",
	       CALL(GT_DH_TID_X), MOVR(1, 0), CALL(GT_DH_ARG), EXIT());
	REJECT("printf size unknown", -EACCES, 5,
	       "gt_printf: R3 buffer size must be a known constant",
	       CALL(GT_DH_SMID), MOVR(3, 0), MOV(1, 0), MOVR(2, 10),
	       ALU(BPF_ADD, 2, -8), CALL(GT_DH_PRINTF), RET0());
	REJECT("printf buffer uninit", -EACCES, 5,
	       "R2 buffer reads uninitialised stack fp-8",
	       ST(BPF_DW, 10, -16, 0), MOV(1, 0), MOVR(2, 10),
	       ALU(BPF_ADD, 2, -16), MOV(3, 16), CALL(GT_DH_PRINTF), RET0());
	REJECT("no-key map with pointer-ish scalar", -EACCES, 2,
	       "key of a map without key must be 0",
	       MOV(1, 2), MOV(2, 8), CALL(GT_DH_AGG_COUNT), RET0());
}

static void test_safe(void)
{
	ACCEPT("return 0", RET0());
	ACCEPT("straight line", MOV(1, 5), ALU(BPF_MUL, 1, 3),
	       STX(BPF_DW, 10, 1, -8), LDX(BPF_DW, 0, 10, -8),
	       ALU(BPF_SUB, 0, 15), ST(BPF_B, 10, -9, 1),
	       LDX(BPF_B, 2, 10, -9), ALUR(BPF_ADD, 0, 2), EXIT());
	ACCEPT("every scalar op", CALL(GT_DH_CLOCK), MOVR(6, 0),
	       ALU(BPF_ADD, 6, 1), ALU(BPF_SUB, 6, 1), ALU(BPF_MUL, 6, 3),
	       ALU(BPF_DIV, 6, 3), ALU(BPF_MOD, 6, 7), ALU(BPF_OR, 6, 1),
	       ALU(BPF_AND, 6, 0xff), ALU(BPF_XOR, 6, 2), ALU(BPF_LSH, 6, 3),
	       ALU(BPF_RSH, 6, 1), ALU(BPF_ARSH, 6, 1),
	       I(BPF_ALU64 | BPF_NEG, 6, 0, 0, 0),
	       I(BPF_ALU | BPF_END | BPF_TO_BE, 6, 0, 0, 32),
	       ALU32(BPF_ADD, 6, 1), ALU32R(BPF_MUL, 6, 6),
	       MOV(7, 3), ALUR(BPF_DIV, 6, 0), ALUR(BPF_MOD, 6, 7),
	       ALU32R(BPF_MOV, 0, 6), EXIT());
	ACCEPT("branches", CALL(GT_DH_WARPID), JI(BPF_JGT, 0, 3, 2),
	       MOV(0, 1), JA(1), MOV(0, 2),
	       J32I(BPF_JSLT, 0, -1, 1), MOV(0, 3),
	       JR(BPF_JSGE, 0, 0, 0), EXIT());
	ACCEPT("null-checked lookup", LOOKUP(), JI(BPF_JEQ, 0, 0, 4),
	       LDX(BPF_DW, 1, 0, 0), ALU(BPF_ADD, 1, 1),
	       STX(BPF_DW, 0, 1, 0), ST(BPF_W, 0, 4, 2), RET0());
	ACCEPT("null check with !=", LOOKUP(), JI(BPF_JNE, 0, 0, 2), RET0(),
	       LDX(BPF_DW, 0, 0, 0), EXIT());
	ACCEPT("null check on a copy", LOOKUP(), MOVR(6, 0),
	       JI(BPF_JEQ, 6, 0, 2), ST(BPF_DW, 0, 0, 1), ST(BPF_DW, 6, 0, 2),
	       RET0());
	ACCEPT("null check of a spilled copy", LOOKUP(),
	       STX(BPF_DW, 10, 0, -16), JI(BPF_JEQ, 0, 0, 2),
	       LDX(BPF_DW, 1, 10, -16), ST(BPF_DW, 1, 0, 1), RET0());
	ACCEPT("null check against register", LOOKUP(), MOV(3, 0),
	       JR(BPF_JEQ, 0, 3, 2), ALU(BPF_ADD, 0, 4), ST(BPF_W, 0, 0, 1),
	       RET0());
	ACCEPT("value pointer arithmetic", LOOKUP(), JI(BPF_JEQ, 0, 0, 3),
	       MOVR(1, 0), ALU(BPF_ADD, 1, 4), LDX(BPF_W, 0, 1, 0), RET0());
	ACCEPT("atomic add on value", LOOKUP(), JI(BPF_JEQ, 0, 0, 2),
	       MOV(1, 1), XADD(BPF_DW, 0, 1, 0, BPF_ADD), RET0());
	ACCEPT("atomic fetch on stack", ST(BPF_DW, 10, -8, 0), MOV(1, 1),
	       XADD(BPF_DW, 10, 1, -8, BPF_ADD | BPF_FETCH),
	       MOVR(0, 1), LDX(BPF_DW, 2, 10, -8), EXIT());
	ACCEPT("aggregations", KEY8(), CALL(GT_DH_AGG_COUNT),
	       CALL(GT_DH_GTIME), MOVR(3, 0), KEY8(), CALL(GT_DH_AGG_HIST),
	       MOV(3, 1), KEY8(), CALL(GT_DH_AGG_SMLOAD), RET0());
	ACCEPT("map without key", MOV(1, 2), MOV(2, 0), CALL(GT_DH_AGG_COUNT),
	       MOV(1, 2), MOV(2, 0), CALL(GT_DH_MAP_LOOKUP),
	       JI(BPF_JEQ, 0, 0, 1), LDX(BPF_DW, 0, 0, 8), RET0());
	ACCEPT("two-part key", ST(BPF_DW, 10, -16, 1), CALL(GT_DH_SMID),
	       STX(BPF_DW, 10, 0, -8), MOV(1, 7), MOVR(2, 10),
	       ALU(BPF_ADD, 2, -16), MOV(3, 1), CALL(GT_DH_AGG_SUM), RET0());
	ACCEPT("update from stack", KEY8(), ST(BPF_DW, 10, -16, 5),
	       MOVR(3, 10), ALU(BPF_ADD, 3, -16), CALL(GT_DH_MAP_UPDATE),
	       KEY8(), CALL(GT_DH_MAP_DELETE), RET0());
	ACCEPT("printf", CALL(GT_DH_SMID), STX(BPF_DW, 10, 0, -16),
	       ST(BPF_DW, 10, -8, 3), MOV(1, 4), MOVR(2, 10),
	       ALU(BPF_ADD, 2, -16), MOV(3, 16), CALL(GT_DH_PRINTF),
	       MOV(1, 5), MOV(2, 0), MOV(3, 0), CALL(GT_DH_PRINTF), RET0());
	ACCEPT("spill and fill pointer", MOVR(1, 10), ALU(BPF_ADD, 1, -16),
	       STX(BPF_DW, 10, 1, -8), LDX(BPF_DW, 2, 10, -8),
	       ST(BPF_DW, 2, 0, 7), LDX(BPF_DW, 0, 10, -16), EXIT());
	ACCEPT("ctx copied", MOVR(6, 1), STX(BPF_DW, 10, 6, -8), RET0());
	ACCEPT("constant map id via ld_imm64 and spill", LD64(6, 7),
	       STX(BPF_DW, 10, 6, -24), ST(BPF_DW, 10, -16, 0),
	       ST(BPF_DW, 10, -8, 0), LDX(BPF_DW, 1, 10, -24), MOVR(2, 10),
	       ALU(BPF_ADD, 2, -16), CALL(GT_DH_AGG_COUNT), RET0());
	ACCEPT("map id learnt from ==", CALL(GT_DH_GPU), MOVR(1, 0),
	       JI(BPF_JNE, 1, 1, 4), ST(BPF_DW, 10, -8, 0), MOVR(2, 10),
	       ALU(BPF_ADD, 2, -8), CALL(GT_DH_AGG_COUNT), RET0());
	ACCEPT("dead branch not walked", MOV(0, 1), JI(BPF_JEQ, 0, 2, 1),
	       EXIT(), LDX(BPF_DW, 0, 10, -8), EXIT());
	ACCEPT("gotol", CALL(GT_DH_SMID), JI(BPF_JEQ, 0, 0, 1),
	       I(BPF_JMP32 | BPF_JA, 0, 0, 0, 1), MOV(0, 1), EXIT());
}

/* One call of every device helper, arguments built from the table. */
static void test_every_helper(void)
{
	struct bpf_insn p[1024];
	int n = 0, id, i, bad = 0;
	const struct gt_dev_helper_desc *d;

	p[n++] = ST(BPF_DW, 10, -8, 0);		/* key of map 1 */
	p[n++] = ST(BPF_DW, 10, -16, 0);	/* value / printf args */
	for (id = GT_DH_BASE; id < GT_DH_END_; id++) {
		d = gt_dev_helper(id);
		if (!d || d->id != id || !d->name || strncmp(d->name, "gt_", 3)) {
			bad = 1;
			continue;
		}
		for (i = 0; i < 5 && d->args[i] != GT_DHA_NONE; i++) {
			int r = i + 1;

			switch (d->args[i]) {
			case GT_DHA_MAP_ID:
				p[n++] = MOV(r, 1);
				break;
			case GT_DHA_KEY:
				p[n++] = MOVR(r, 10);
				p[n++] = ALU(BPF_ADD, r, -8);
				break;
			case GT_DHA_VALUE_PTR:
			case GT_DHA_STACK_BUF:
				p[n++] = MOVR(r, 10);
				p[n++] = ALU(BPF_ADD, r, -16);
				break;
			default:	/* constants, scalars, buffer sizes */
				p[n++] = MOV(r, 8);
				break;
			}
		}
		p[n++] = CALL(id);
	}
	p[n++] = MOV(0, 0);
	p[n++] = EXIT();
	CHECK(!bad, "helper table complete");
	CHECK(gt_dev_helper(GT_DH_BASE - 1) == NULL &&
	      gt_dev_helper(GT_DH_END_) == NULL && gt_dev_helper(1) == NULL,
	      "helper table bounds");
	accept("every device helper", p, n);
}

static void test_walk(void)
{
	const struct bpf_insn p[] = {
		LOOKUP(), JI(BPF_JEQ, 0, 0, 1), ST(BPF_DW, 0, 0, 1), RET0(),
	};
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int ret = vf_verify(p, sizeof(p) / sizeof(p[0]), maps, NMAPS,
			    "gpu:kernel:vadd", f, err, sizeof(err));

	fclose(f);
	CHECK(ret == 0, "walk verifies");
	CHECK(strstr(buf, "0: R1=ctx R10=fp0\n") != NULL, "walk initial state");
	CHECK(strstr(buf, "4: (85) call gt_map_lookup#") != NULL,
	      "walk shows insn");
	CHECK(strstr(buf, "R0=map_value_or_null(map=1,off=0,id=5)") != NULL,
	      "walk shows or-null");
	CHECK(strstr(buf, "fp-8=0") != NULL, "walk shows spilled constant");
	CHECK(strstr(buf, "from 5 to 7: R0=0 ") != NULL, "walk shows branch");
	CHECK(strstr(buf, "6: (7a) *(u64 *)(r0 +0) = 1") != NULL &&
	      strstr(buf, "R0=map_value(map=1,off=0)") != NULL,
	      "walk shows checked pointer");
	free(buf);

	/* the error goes to the walk too, and names the clause */
	buf = NULL;
	f = open_memstream(&buf, &len);
	ret = vf_verify(p, 5, maps, NMAPS, "gpu:kernel:vadd", f, err,
			sizeof(err));
	fclose(f);
	CHECK_STR(err, "gpu:kernel:vadd: insn 4: falls off the end of the "
		  "program", "error names clause");
	CHECK(ret == -EINVAL && strstr(buf, "insn 4: falls off") != NULL,
	      "error in walk");
	free(buf);

	ret = vf_verify(p, 5, maps, NMAPS, NULL, NULL, err, sizeof(err));
	CHECK(!strncmp(err, "program: insn 4:", 16), "default clause name");
	/* a short buffer is cut, never overrun */
	ret = vf_verify(p, 5, maps, NMAPS, NULL, NULL, err, 8);
	CHECK(ret == -EINVAL && strlen(err) == 7, "short error buffer");
}

/* 30 diamonds on unknowns that join in the same state: pruning keeps it
 * linear instead of 2^30 paths. */
static void test_pruning(void)
{
	struct bpf_insn p[128];
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n = 0, k, ret;
	long visits = -1;
	char *s;

	p[n++] = CALL(GT_DH_CLOCK);
	p[n++] = MOVR(6, 0);
	for (k = 0; k < 30; k++) {
		p[n++] = JI(BPF_JSET, 6, 1 << (k % 31), 2);
		p[n++] = MOV(1, 1);
		p[n++] = JA(1);
		p[n++] = MOV(1, 2);
	}
	p[n++] = MOV(0, 0);
	p[n++] = EXIT();
	f = open_memstream(&buf, &len);
	ret = vf_verify(p, n, maps, NMAPS, "t", f, err, sizeof(err));
	fclose(f);
	s = strstr(buf, "verified: ");
	if (s)
		visits = strtol(s + 10, NULL, 10);
	CHECK(ret == 0, "pruned program verifies");
	CHECK(visits > 0 && visits < 400, "pruning keeps the walk linear");
	free(buf);
}

/* Rounds of "r6 += 1 while r6 < N" (3 insns a round), a loop at 1. */
static int count_loop(struct bpf_insn *p, int32_t rounds)
{
	int n = 0;

	p[n++] = MOV(6, 0);
	p[n++] = JI(BPF_JGE, 6, rounds, 2);
	p[n++] = ALU(BPF_ADD, 6, 1);
	p[n++] = JA(-3);
	p[n++] = MOV(0, 0);
	p[n++] = EXIT();
	return n;
}

/* ERR of a refused program, and the loop vf_verify_drop blames. */
static int loop_of(struct bpf_insn *p, size_t n, char *err, size_t len)
{
	int loop = -2;

	if (!vf_verify_drop(p, n, maps, NMAPS, "t", NULL, err, len, &loop))
		return -3;
	return loop;
}

/*
 * while loops: walked round by round with value bounds; refused when a
 * round comes back to a state an earlier one covers (it may never end)
 * or when the walk runs past the budget (not bounded, or too long).
 */
static void test_loops(void)
{
	struct bpf_insn p[64];
	char err[256], *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n;

	ACCEPT("loop of 5 rounds", MOV(6, 0), JI(BPF_JGE, 6, 5, 2),
	       ALU(BPF_ADD, 6, 1), JA(-3), RET0());
	/* codegen's form: the counter lives on the stack */
	ACCEPT("loop counter on the stack", ST(BPF_DW, 10, -8, 0),
	       LDX(BPF_DW, 1, 10, -8), JI(BPF_JGE, 1, 10, 3),
	       ALU(BPF_ADD, 1, 1), STX(BPF_DW, 10, 1, -8), JA(-5), RET0());
	ACCEPT("loop with a map update each round", MOV(6, 0),
	       JI(BPF_JSGE, 6, 4, 7), ST(BPF_DW, 10, -8, 0), MOVR(2, 10),
	       ALU(BPF_ADD, 2, -8), MOV(1, 1), CALL(GT_DH_MAP_LOOKUP),
	       ALU(BPF_ADD, 6, 1), JA(-8), RET0());
	ACCEPT("nested loops 3 x 4", MOV(6, 0), JI(BPF_JGE, 6, 3, 6),
	       MOV(7, 0), JI(BPF_JGE, 7, 4, 2), ALU(BPF_ADD, 7, 1), JA(-3),
	       ALU(BPF_ADD, 6, 1), JA(-7), RET0());
	/* break: leave from the middle; continue: back from the middle */
	ACCEPT("loop with break", MOV(6, 0), ALU(BPF_ADD, 6, 1),
	       JI(BPF_JEQ, 6, 7, 1), JA(-3), RET0());
	ACCEPT("loop with continue", MOV(6, 0), JI(BPF_JGE, 6, 6, 5),
	       ALU(BPF_ADD, 6, 1), JI(BPF_JSET, 6, 1, -3), CALL(GT_DH_SMID),
	       MOVR(7, 0), JA(-6), RET0());
	/* trip counts bounded by the value, not known: per thread */
	ACCEPT("bound from % 4", CALL(GT_DH_TID_X), MOVR(7, 0),
	       ALU(BPF_MOD, 7, 4), MOV(6, 0), JR(BPF_JGE, 6, 7, 2),
	       ALU(BPF_ADD, 6, 1), JA(-3), RET0());
	ACCEPT("bound from & 7, signed compare", CALL(GT_DH_CLOCK),
	       MOVR(7, 0), ALU(BPF_AND, 7, 7), MOV(6, 0),
	       JR(BPF_JSGE, 6, 7, 2), ALU(BPF_ADD, 6, 1), JA(-3), RET0());
	ACCEPT("bound from >> 54, counting down", CALL(GT_DH_CLOCK),
	       MOVR(6, 0), ALU(BPF_RSH, 6, 54), JI(BPF_JEQ, 6, 0, 2),
	       ALU(BPF_ADD, 6, -1), JA(-3), RET0());
	ACCEPT("bound from a 1-byte load", ST(BPF_DW, 10, -8, 0),
	       CALL(GT_DH_CLOCK), STX(BPF_DW, 10, 0, -8),
	       LDX(BPF_B, 7, 10, -8), MOV(6, 0), JR(BPF_JGE, 6, 7, 2),
	       ALU(BPF_ADD, 6, 1), JA(-3), RET0());
	ACCEPT("bound learnt from a branch", CALL(GT_DH_CLOCK), MOVR(7, 0),
	       JI(BPF_JGT, 7, 9, 4), MOV(6, 0), JR(BPF_JGE, 6, 7, 2),
	       ALU(BPF_ADD, 6, 1), JA(-3), RET0());
	ACCEPT("bound through a 32-bit move", CALL(GT_DH_CLOCK),
	       ALU32R(BPF_MOV, 7, 0), ALU(BPF_RSH, 7, 24), MOV(6, 0),
	       JR(BPF_JGE, 6, 7, 2), ALU(BPF_ADD, 6, 1), JA(-3), RET0());

	REJECT("jump to itself", -EACCES, 1, "loop at insn 1 may never end",
	       MOV(0, 0), JI(BPF_JEQ, 0, 0, -1), EXIT());
	REJECT("ja to itself", -EACCES, 2, "loop at insn 2 may never end",
	       CALL(GT_DH_CLOCK), JI(BPF_JEQ, 0, 0, 1), JA(-1), RET0());
	REJECT("loop on a map value", -EACCES, 0, "may never end",
	       ST(BPF_DW, 10, -8, 0), MOVR(2, 10), ALU(BPF_ADD, 2, -8),
	       MOV(1, 1), CALL(GT_DH_MAP_LOOKUP), JI(BPF_JEQ, 0, 0, 3),
	       LDX(BPF_DW, 1, 0, 0), JI(BPF_JEQ, 1, 0, 1), JA(-9), RET0());
	REJECT("loop on an unknown bound", -EACCES, -1, "loop at insn 3 is "
	       "not bounded", CALL(GT_DH_CLOCK), MOVR(7, 0), MOV(6, 0),
	       JR(BPF_JGE, 6, 7, 2), ALU(BPF_ADD, 6, 1), JA(-3), RET0());
	/* % by an unknown keeps the dividend's bound: none */
	REJECT("no bound from % unknown", -EACCES, -1, "not bounded",
	       CALL(GT_DH_CLOCK), MOVR(7, 0), CALL(GT_DH_CLOCK),
	       ALUR(BPF_MOD, 7, 0), MOV(6, 0), JR(BPF_JGE, 6, 7, 2),
	       ALU(BPF_ADD, 6, 1), JA(-3), RET0());
	/* 32-bit compares say nothing of the high half */
	REJECT("no bound from a 32-bit compare", -EACCES, -1, "not bounded",
	       CALL(GT_DH_CLOCK), MOVR(7, 0), J32I(BPF_JGT, 7, 9, 4),
	       MOV(6, 0), JR(BPF_JGE, 6, 7, 2), ALU(BPF_ADD, 6, 1), JA(-3),
	       RET0());

	/* the budget: 3 insns a round, 100 000 instructions explored */
	n = count_loop(p, 33000);
	accept("loop of 33000 rounds", p, n);
	n = count_loop(p, 34000);
	reject("loop of 34000 rounds", p, n, -EACCES, -1, "loop at insn 1 "
	       "runs too long: more than 100000 instructions explored");

	/* the loop blamed is the one that keeps going round */
	{
		struct bpf_insn outer[] = {	/* outer unbounded at 3 */
			CALL(GT_DH_CLOCK), MOVR(8, 0), MOV(6, 0),
			JR(BPF_JGE, 6, 8, 6), MOV(7, 0),
			JI(BPF_JGE, 7, 4, 2), ALU(BPF_ADD, 7, 1), JA(-3),
			ALU(BPF_ADD, 6, 1), JA(-7), RET0(),
		};
		struct bpf_insn inner[] = {	/* inner unbounded at 5 */
			CALL(GT_DH_CLOCK), MOVR(8, 0), MOV(6, 0),
			JI(BPF_JGE, 6, 4, 6), MOV(7, 0),
			JR(BPF_JGE, 7, 8, 2), ALU(BPF_ADD, 7, 1), JA(-3),
			ALU(BPF_ADD, 6, 1), JA(-7), RET0(),
		};
		struct bpf_insn same[] = {	/* outer repeats itself at 2 */
			CALL(GT_DH_CLOCK), MOVR(8, 0),
			JI(BPF_JEQ, 8, 0, 6), MOV(7, 0),
			JI(BPF_JGE, 7, 4, 2), ALU(BPF_ADD, 7, 1), JA(-3),
			CALL(GT_DH_CLOCK), JA(-7), RET0(),
		};
		int lo = loop_of(outer, 12, err, sizeof(err));
		int li = loop_of(inner, 12, err, sizeof(err));
		int ls = loop_of(same, 11, err, sizeof(err));

		CHECK(lo == 3, "unbounded outer loop blamed");
		CHECK(li == 5, "unbounded inner loop blamed");
		CHECK(ls == 2 && strstr(err, "may never end"),
		      "repeating outer loop blamed, not its inner one");
		CHECK(loop_of(p, 0, err, sizeof(err)) == -1,
		      "no loop blamed for other errors");
	}

	/* -d verifier shows the bounds */
	f = open_memstream(&buf, &len);
	{
		const struct bpf_insn q[] = {
			CALL(GT_DH_TID_X), MOVR(7, 0), ALU(BPF_MOD, 7, 4),
			MOV(6, 0), JR(BPF_JGE, 6, 7, 2), ALU(BPF_ADD, 6, 1),
			JA(-3), RET0(),
		};

		CHECK(vf_verify(q, 9, maps, NMAPS, "t", f, err,
				sizeof(err)) == 0, "walk of a loop verifies");
	}
	fclose(f);
	CHECK(strstr(buf, "R7=scalar(umax=3)") != NULL, "walk shows bounds");
	CHECK(strstr(buf, "R6=3 R7=3") != NULL && strstr(buf, "R6=1 R7=1"),
	      "walk goes round until the bound");
	free(buf);
}

/*
 * The lowering emits every instruction, so the proof must cover them all
 * (issue 17, defect 3): register numbers past r10 are refused even where
 * no path goes, and what no path reaches is dropped before lowering.
 */
static void test_dead_code(void)
{
	struct bpf_insn dead[] = {
		MOV(0, 0), JI(BPF_JEQ, 0, 0, 1),	/* always taken */
		STX(BPF_DW, 5, 0, 0),			/* through uninit r5 */
		RET0(),
	};
	struct bpf_insn want[] = {
		MOV(0, 0), JI(BPF_JEQ, 0, 0, 1), JA(0), RET0(),
	};
	struct pl_opts o = { .index = 0, .mode = PL_THREAD };
	struct pl_func fa = { 0 }, fb = { 0 };
	char err[256];
	int ret;

	REJECT("dead r12", -EINVAL, 2, "invalid register r12",
	       MOV(0, 0), JI(BPF_JEQ, 0, 0, 1), MOV(12, 1), RET0());
	REJECT("dead r11 source", -EINVAL, 2, "invalid register r11",
	       MOV(0, 0), JI(BPF_JEQ, 0, 0, 1), MOVR(0, 11), RET0());
	REJECT("byte swap of r13", -EINVAL, 0, "invalid register r13",
	       I(BPF_ALU | BPF_END | BPF_TO_BE, 13, 0, 0, 64), RET0());
	ret = vf_verify_drop(dead, 5, maps, NMAPS, "t", NULL, err, sizeof(err),
			     NULL);
	CHECK(ret == 0, "dead store verified");
	CHECK(!memcmp(dead, want, sizeof(want)), "dead store dropped");
	CHECK(!pl_lower(dead, 5, maps, NMAPS, &o, &fa, err, sizeof(err)) &&
	      !pl_lower(want, 5, maps, NMAPS, &o, &fb, err, sizeof(err)) &&
	      !strcmp(fa.text, fb.text), "dead store not lowered");
	pl_func_free(&fa);
	pl_func_free(&fb);
}

int main(void)
{
	test_dead_code();
	test_structure();
	test_too_large();
	test_too_complex();
	test_registers();
	test_stack();
	test_pointer_alu();
	test_scalar_alu();
	test_maps();
	test_helpers();
	test_safe();
	test_every_helper();
	test_walk();
	test_pruning();
	test_loops();
	UNIT_END();
}
