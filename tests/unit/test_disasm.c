/* SPDX-License-Identifier: MIT */
/* eBPF disassembler: the text of instructions of every class. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "compiler/bpf_disasm.h"
#include "compiler/dev_helpers.h"
#include "tests/unit/unit.h"

#define I(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
			    .off = (o), .imm = (i) })

static void one(struct bpf_insn in, const char *want)
{
	char buf[128];

	bpf_insn_str(buf, sizeof(buf), &in, NULL);
	CHECK_STR(buf, want, want);
}

static void test_alu(void)
{
	one(I(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0), "(bf) r1 = r10");
	one(I(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -8), "(07) r1 += -8");
	one(I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0), "(b7) r0 = 0");
	one(I(BPF_ALU64 | BPF_SUB | BPF_X, 3, 4, 0, 0), "(1f) r3 -= r4");
	one(I(BPF_ALU64 | BPF_MUL | BPF_K, 3, 0, 0, 10), "(27) r3 *= 10");
	one(I(BPF_ALU64 | BPF_DIV | BPF_X, 3, 4, 0, 0), "(3f) r3 /= r4");
	one(I(BPF_ALU64 | BPF_MOD | BPF_K, 3, 0, 0, 7), "(97) r3 %= 7");
	one(I(BPF_ALU64 | BPF_OR | BPF_K, 3, 0, 0, 1), "(47) r3 |= 1");
	one(I(BPF_ALU64 | BPF_AND | BPF_K, 3, 0, 0, 255), "(57) r3 &= 255");
	one(I(BPF_ALU64 | BPF_XOR | BPF_X, 3, 3, 0, 0), "(af) r3 ^= r3");
	one(I(BPF_ALU64 | BPF_LSH | BPF_K, 3, 0, 0, 32), "(67) r3 <<= 32");
	one(I(BPF_ALU64 | BPF_RSH | BPF_K, 3, 0, 0, 32), "(77) r3 >>= 32");
	one(I(BPF_ALU64 | BPF_ARSH | BPF_K, 1, 0, 0, 3), "(c7) r1 s>>= 3");
	one(I(BPF_ALU64 | BPF_NEG, 1, 0, 0, 0), "(87) r1 = -r1");
	one(I(BPF_ALU | BPF_ADD | BPF_X, 1, 2, 0, 0), "(0c) w1 += w2");
	one(I(BPF_ALU | BPF_MOV | BPF_K, 0, 0, 0, 5), "(b4) w0 = 5");
	one(I(BPF_ALU | BPF_NEG, 2, 0, 0, 0), "(84) w2 = -w2");
	one(I(BPF_ALU | BPF_END | BPF_TO_BE, 1, 0, 0, 16), "(dc) r1 = be16 r1");
	one(I(BPF_ALU | BPF_END | BPF_TO_LE, 1, 0, 0, 32), "(d4) r1 = le32 r1");
	one(I(BPF_ALU64 | BPF_END, 1, 0, 0, 64), "(d7) r1 = bswap64 r1");
	one(I(BPF_ALU64 | BPF_DIV | BPF_X, 1, 2, 1, 0), "(3f) r1 s/= r2");
	one(I(BPF_ALU64 | BPF_MOV | BPF_X, 1, 2, 8, 0), "(bf) r1 = (s8)r2");
	one(I(BPF_ALU64 | 0xe0, 1, 0, 0, 0), "(e7) invalid alu op");
}

static void test_mem(void)
{
	one(I(BPF_LDX | BPF_MEM | BPF_DW, 0, 10, -8, 0),
	    "(79) r0 = *(u64 *)(r10 -8)");
	one(I(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 4, 0),
	    "(61) r2 = *(u32 *)(r1 +4)");
	one(I(BPF_LDX | BPF_MEM | BPF_H, 2, 1, 0, 0),
	    "(69) r2 = *(u16 *)(r1 +0)");
	one(I(BPF_LDX | 0x80 | BPF_B, 2, 1, 0, 0),
	    "(91) r2 = *(s8 *)(r1 +0)");
	one(I(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -8, 0),
	    "(7b) *(u64 *)(r10 -8) = r1");
	one(I(BPF_STX | BPF_MEM | BPF_B, 10, 1, -1, 0),
	    "(73) *(u8 *)(r10 -1) = r1");
	one(I(BPF_ST | BPF_MEM | BPF_B, 10, 0, -1, 7),
	    "(72) *(u8 *)(r10 -1) = 7");
	one(I(BPF_ST | BPF_MEM | BPF_W, 10, 0, -16, -1),
	    "(62) *(u32 *)(r10 -16) = -1");
	one(I(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, 0, BPF_ADD),
	    "(db) lock *(u64 *)(r1 +0) += r2");
	one(I(BPF_STX | BPF_ATOMIC | BPF_W, 1, 2, 8, BPF_OR),
	    "(c3) lock *(u32 *)(r1 +8) |= r2");
	one(I(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, 0, BPF_ADD | BPF_FETCH),
	    "(db) r2 = atomic64_fetch_add((u64 *)(r1 +0), r2)");
	one(I(BPF_STX | BPF_ATOMIC | BPF_W, 1, 2, 0, BPF_XOR | BPF_FETCH),
	    "(c3) r2 = atomic_fetch_xor((u32 *)(r1 +0), r2)");
	one(I(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, 0, BPF_XCHG),
	    "(db) r2 = atomic64_xchg((u64 *)(r1 +0), r2)");
	one(I(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, -8, BPF_CMPXCHG),
	    "(db) r0 = atomic64_cmpxchg((u64 *)(r1 -8), r0, r2)");
	one(I(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, 0, 0x33),
	    "(db) invalid atomic op 0x33");
	one(I(BPF_LD | BPF_ABS | BPF_B, 0, 0, 0, 12),
	    "(30) r0 = *(u8 *)skb[12]");
	one(I(BPF_LD | BPF_IND | BPF_W, 0, 3, 0, 4),
	    "(40) r0 = *(u32 *)skb[r3 + 4]");
}

static void test_ld_imm64(void)
{
	struct bpf_insn p[2] = {
		I(BPF_LD | BPF_IMM | BPF_DW, 1, 0, 0, 0x23456789),
		I(0, 0, 0, 0, 0x1),
	};
	char buf[128];
	size_t k;

	k = bpf_insn_str(buf, sizeof(buf), &p[0], &p[1]);
	CHECK_STR(buf, "(18) r1 = 0x123456789", "ld_imm64 constant");
	CHECK(k == 2, "ld_imm64 takes two slots");
	p[0].src_reg = BPF_PSEUDO_MAP_FD;
	p[0].imm = 3;
	bpf_insn_str(buf, sizeof(buf), &p[0], &p[1]);
	CHECK_STR(buf, "(18) r1 = map[id:3]", "ld_imm64 map");
	p[0].src_reg = BPF_PSEUDO_MAP_VALUE;
	p[1].imm = 16;
	bpf_insn_str(buf, sizeof(buf), &p[0], &p[1]);
	CHECK_STR(buf, "(18) r1 = map[id:3][0]+16", "ld_imm64 map value");
	k = bpf_insn_str(buf, sizeof(buf), &p[0], NULL);
	CHECK(k == 1 && strstr(buf, "invalid ld_imm64"), "ld_imm64 truncated");
}

static void test_jmp(void)
{
	char want[64];

	one(I(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3, 0),
	    "(15) if r0 == 0x0 goto pc+3");
	one(I(BPF_JMP | BPF_JEQ | BPF_X, 1, 2, -5, 0),
	    "(1d) if r1 == r2 goto pc-5");
	one(I(BPF_JMP | BPF_JNE | BPF_K, 1, 0, 1, -1),
	    "(55) if r1 != 0xffffffff goto pc+1");
	one(I(BPF_JMP | BPF_JGT | BPF_K, 1, 0, 1, 5),
	    "(25) if r1 > 0x5 goto pc+1");
	one(I(BPF_JMP | BPF_JGE | BPF_X, 1, 2, 1, 0),
	    "(3d) if r1 >= r2 goto pc+1");
	one(I(BPF_JMP | BPF_JLT | BPF_K, 1, 0, 1, 5),
	    "(a5) if r1 < 0x5 goto pc+1");
	one(I(BPF_JMP | BPF_JLE | BPF_K, 1, 0, 1, 5),
	    "(b5) if r1 <= 0x5 goto pc+1");
	one(I(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 2, 1),
	    "(45) if r1 & 0x1 goto pc+2");
	one(I(BPF_JMP | BPF_JSGT | BPF_X, 1, 2, 1, 0),
	    "(6d) if r1 s> r2 goto pc+1");
	one(I(BPF_JMP | BPF_JSGE | BPF_K, 1, 0, 1, 0),
	    "(75) if r1 s>= 0x0 goto pc+1");
	one(I(BPF_JMP | BPF_JSLT | BPF_K, 1, 0, 1, 0),
	    "(c5) if r1 s< 0x0 goto pc+1");
	one(I(BPF_JMP | BPF_JSLE | BPF_X, 1, 2, 1, 0),
	    "(dd) if r1 s<= r2 goto pc+1");
	one(I(BPF_JMP32 | BPF_JEQ | BPF_K, 0, 0, 3, 0),
	    "(16) if w0 == 0x0 goto pc+3");
	one(I(BPF_JMP32 | BPF_JLT | BPF_X, 0, 1, 3, 0),
	    "(ae) if w0 < w1 goto pc+3");
	one(I(BPF_JMP | BPF_JA, 0, 0, 3, 0), "(05) goto pc+3");
	one(I(BPF_JMP32 | BPF_JA, 0, 0, 0, -2), "(06) gotol pc-2");
	one(I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0), "(95) exit");
	one(I(BPF_JMP | BPF_CALL, 0, 0, 0, 1),
	    "(85) call bpf_map_lookup_elem#1");
	one(I(BPF_JMP | BPF_CALL, 0, 0, 0, 14),
	    "(85) call bpf_get_current_pid_tgid#14");
	one(I(BPF_JMP | BPF_CALL, 0, 0, 0, 130),
	    "(85) call bpf_ringbuf_output#130");
	snprintf(want, sizeof(want), "(85) call gt_smid#%d", GT_DH_SMID);
	one(I(BPF_JMP | BPF_CALL, 0, 0, 0, GT_DH_SMID), want);
	snprintf(want, sizeof(want), "(85) call gt_map_lookup#%d",
		 GT_DH_MAP_LOOKUP);
	one(I(BPF_JMP | BPF_CALL, 0, 0, 0, GT_DH_MAP_LOOKUP), want);
	one(I(BPF_JMP | BPF_CALL, 0, 0, 0, 99999), "(85) call unknown#99999");
	one(I(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 5),
	    "(85) call pc+5");
	one(I(BPF_JMP | 0xe0, 0, 0, 0, 0), "(e5) invalid jmp op");
}

static void test_names(void)
{
	static const struct { int id; const char *name; } k[] = {
		{ 1, "bpf_map_lookup_elem" }, { 2, "bpf_map_update_elem" },
		{ 3, "bpf_map_delete_elem" }, { 4, "bpf_probe_read" },
		{ 5, "bpf_ktime_get_ns" }, { 6, "bpf_trace_printk" },
		{ 8, "bpf_get_smp_processor_id" },
		{ 15, "bpf_get_current_uid_gid" },
		{ 16, "bpf_get_current_comm" }, { 25, "bpf_perf_event_output" },
		{ 27, "bpf_get_stackid" }, { 35, "bpf_get_current_task" },
		{ 45, "bpf_probe_read_str" }, { 112, "bpf_probe_read_user" },
		{ 113, "bpf_probe_read_kernel" },
		{ 114, "bpf_probe_read_user_str" },
		{ 115, "bpf_probe_read_kernel_str" },
		{ 131, "bpf_ringbuf_reserve" }, { 132, "bpf_ringbuf_submit" },
	};
	size_t i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		CHECK_STR(bpf_helper_name(k[i].id), k[i].name, k[i].name);
	CHECK_STR(bpf_helper_name(GT_DH_PRINTF), "gt_printf", "gt_printf");
	CHECK(bpf_helper_name(0) == NULL && bpf_helper_name(-1) == NULL &&
	      bpf_helper_name(GT_DH_END_) == NULL, "unknown helper names");
}

static void test_listing(void)
{
	const struct bpf_insn p[] = {
		I(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0),
		I(BPF_LD | BPF_IMM | BPF_DW, 1, 0, 0, 1),
		I(0, 0, 0, 0, 0),
		I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	char *buf = NULL, small[12];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	bpf_disasm(f, p, 4);
	fclose(f);
	CHECK_STR(buf, "   0: (bf) r1 = r10\n"
		       "   1: (18) r1 = 0x1\n"
		       "   3: (95) exit\n", "listing");
	free(buf);
	/* a short buffer is cut and terminated */
	bpf_insn_str(small, sizeof(small), &p[0], NULL);
	CHECK_STR(small, "(bf) r1 = r", "short buffer");
}

int main(void)
{
	test_alu();
	test_mem();
	test_ld_imm64();
	test_jmp();
	test_names();
	test_listing();
	UNIT_END();
}
