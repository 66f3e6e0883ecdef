/* SPDX-License-Identifier: MIT */
/*
 * eBPF disassembler.  The text follows the kernel verifier log so that
 * people who know `bpftool prog dump xlated` read it without a legend.
 */
#include "compiler/bpf_disasm.h"

#include <stdarg.h>

#include "compiler/dev_helpers.h"

#ifndef BPF_MEMSX
#define BPF_MEMSX 0x80
#endif

/* Kernel helper names, generated from the uapi header so they never drift. */
#define GT_HELPER_NAME(x, ...) [BPF_FUNC_##x] = "bpf_" #x
static const char *const kernel_helpers[] = {
	__BPF_FUNC_MAPPER(GT_HELPER_NAME)
};
#undef GT_HELPER_NAME

const char *bpf_helper_name(int32_t id)
{
	const struct gt_dev_helper_desc *d;

	if (id > 0 && (size_t)id < sizeof(kernel_helpers) / sizeof(*kernel_helpers))
		return kernel_helpers[id];
	d = gt_dev_helper(id);
	return d ? d->name : NULL;
}

/* Append to a bounded buffer; output past LEN is dropped. */
struct sbuf {
	char *p;
	size_t len, pos;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (b->pos >= b->len)
		return;
	va_start(ap, fmt);
	r = vsnprintf(b->p + b->pos, b->len - b->pos, fmt, ap);
	va_end(ap);
	if (r > 0)
		b->pos += (size_t)r;
}

static const char *const alu_ops[16] = {
	[BPF_ADD >> 4] = "+=", [BPF_SUB >> 4] = "-=", [BPF_MUL >> 4] = "*=",
	[BPF_DIV >> 4] = "/=", [BPF_OR >> 4] = "|=", [BPF_AND >> 4] = "&=",
	[BPF_LSH >> 4] = "<<=", [BPF_RSH >> 4] = ">>=", [BPF_MOD >> 4] = "%=",
	[BPF_XOR >> 4] = "^=", [BPF_MOV >> 4] = "=", [BPF_ARSH >> 4] = "s>>=",
};

static const char *const jmp_ops[16] = {
	[BPF_JEQ >> 4] = "==", [BPF_JGT >> 4] = ">", [BPF_JGE >> 4] = ">=",
	[BPF_JSET >> 4] = "&", [BPF_JNE >> 4] = "!=", [BPF_JSGT >> 4] = "s>",
	[BPF_JSGE >> 4] = "s>=", [BPF_JLT >> 4] = "<", [BPF_JLE >> 4] = "<=",
	[BPF_JSLT >> 4] = "s<", [BPF_JSLE >> 4] = "s<=",
};

static void alu_str(struct sbuf *b, const struct bpf_insn *in)
{
	int is64 = BPF_CLASS(in->code) == BPF_ALU64;
	char r = is64 ? 'r' : 'w';
	unsigned op = BPF_OP(in->code);

	if (op == BPF_NEG) {
		sb_printf(b, "%c%d = -%c%d", r, in->dst_reg, r, in->dst_reg);
		return;
	}
	if (op == BPF_END) {
		const char *kind = is64 ? "bswap" :
			BPF_SRC(in->code) == BPF_TO_BE ? "be" : "le";

		sb_printf(b, "r%d = %s%d r%d", in->dst_reg, kind, in->imm,
			  in->dst_reg);
		return;
	}
	if (!alu_ops[op >> 4]) {
		sb_printf(b, "invalid alu op");
		return;
	}
	if (op == BPF_MOV && in->off && BPF_SRC(in->code) == BPF_X) {
		/* movsx (cpu v4) */
		sb_printf(b, "%c%d = (s%d)%c%d", r, in->dst_reg, in->off, r,
			  in->src_reg);
		return;
	}
	sb_printf(b, "%c%d %s%s ", r, in->dst_reg,
		  (op == BPF_DIV || op == BPF_MOD) && in->off == 1 ? "s" : "",
		  alu_ops[op >> 4]);
	if (BPF_SRC(in->code) == BPF_X)
		sb_printf(b, "%c%d", r, in->src_reg);
	else
		sb_printf(b, "%d", in->imm);
}

static void jmp_str(struct sbuf *b, const struct bpf_insn *in)
{
	int is32 = BPF_CLASS(in->code) == BPF_JMP32;
	unsigned op = BPF_OP(in->code);
	const char *name;

	switch (op) {
	case BPF_EXIT:
		sb_printf(b, is32 ? "invalid jmp32 exit" : "exit");
		return;
	case BPF_CALL:
		if (in->src_reg == BPF_PSEUDO_CALL) {
			sb_printf(b, "call pc%+d", in->imm);
		} else if (in->src_reg == BPF_PSEUDO_KFUNC_CALL) {
			sb_printf(b, "call kernel-function#%d", in->imm);
		} else {
			name = bpf_helper_name(in->imm);
			sb_printf(b, "call %s#%d", name ? name : "unknown",
				  in->imm);
		}
		return;
	case BPF_JA:
		if (is32)
			sb_printf(b, "gotol pc%+d", in->imm);
		else
			sb_printf(b, "goto pc%+d", in->off);
		return;
	}
	if (!jmp_ops[op >> 4]) {
		sb_printf(b, "invalid jmp op");
		return;
	}
	sb_printf(b, "if %c%d %s ", is32 ? 'w' : 'r', in->dst_reg,
		  jmp_ops[op >> 4]);
	if (BPF_SRC(in->code) == BPF_X)
		sb_printf(b, "%c%d", is32 ? 'w' : 'r', in->src_reg);
	else
		sb_printf(b, "0x%x", (uint32_t)in->imm);
	sb_printf(b, " goto pc%+d", in->off);
}

static const char *const atomic_ops[16] = {
	[BPF_ADD >> 4] = "add", [BPF_OR >> 4] = "or", [BPF_AND >> 4] = "and",
	[BPF_XOR >> 4] = "xor",
};

static void atomic_str(struct sbuf *b, const struct bpf_insn *in,
		       const char *sz)
{
	const char *w = BPF_SIZE(in->code) == BPF_DW ? "64" : "";
	int op = in->imm & ~BPF_FETCH;

	if (in->imm == BPF_XCHG) {
		sb_printf(b, "r%d = atomic%s_xchg((%s *)(r%d %+d), r%d)",
			  in->src_reg, w, sz, in->dst_reg, in->off,
			  in->src_reg);
	} else if (in->imm == BPF_CMPXCHG) {
		sb_printf(b, "r0 = atomic%s_cmpxchg((%s *)(r%d %+d), r0, r%d)",
			  w, sz, in->dst_reg, in->off, in->src_reg);
	} else if (op >= 0 && op < 256 && !(op & 0x0f) && atomic_ops[op >> 4]) {
		if (in->imm & BPF_FETCH)
			sb_printf(b, "r%d = atomic%s_fetch_%s((%s *)(r%d %+d), r%d)",
				  in->src_reg, w, atomic_ops[op >> 4], sz,
				  in->dst_reg, in->off, in->src_reg);
		else
			sb_printf(b, "lock *(%s *)(r%d %+d) %s r%d", sz,
				  in->dst_reg, in->off, alu_ops[op >> 4],
				  in->src_reg);
	} else {
		sb_printf(b, "invalid atomic op 0x%x", (uint32_t)in->imm);
	}
}

static void ld_imm64_str(struct sbuf *b, const struct bpf_insn *in,
			 const struct bpf_insn *next)
{
	uint64_t v;

	if (!next) {
		sb_printf(b, "invalid ld_imm64: no second slot");
		return;
	}
	switch (in->src_reg) {
	case BPF_PSEUDO_MAP_FD:
	case BPF_PSEUDO_MAP_IDX:
		sb_printf(b, "r%d = map[id:%d]", in->dst_reg, in->imm);
		return;
	case BPF_PSEUDO_MAP_VALUE:
	case BPF_PSEUDO_MAP_IDX_VALUE:
		sb_printf(b, "r%d = map[id:%d][0]+%d", in->dst_reg, in->imm,
			  next->imm);
		return;
	}
	v = (uint64_t)(uint32_t)in->imm | (uint64_t)(uint32_t)next->imm << 32;
	sb_printf(b, "r%d = 0x%llx", in->dst_reg, (unsigned long long)v);
}

static const char *const mem_sizes[4] = {
	[BPF_W >> 3] = "u32", [BPF_H >> 3] = "u16", [BPF_B >> 3] = "u8",
	[BPF_DW >> 3] = "u64",
};

static const char *const memsx_sizes[4] = {
	[BPF_W >> 3] = "s32", [BPF_H >> 3] = "s16", [BPF_B >> 3] = "s8",
	[BPF_DW >> 3] = "s64",
};

size_t bpf_insn_str(char *buf, size_t len, const struct bpf_insn *in,
		    const struct bpf_insn *next)
{
	struct sbuf b = { buf, len, 0 };
	const char *sz = mem_sizes[BPF_SIZE(in->code) >> 3];
	unsigned mode = BPF_MODE(in->code);
	size_t slots = 1;

	if (!len)
		return 1;
	buf[0] = '\0';
	sb_printf(&b, "(%02x) ", in->code);
	switch (BPF_CLASS(in->code)) {
	case BPF_ALU:
	case BPF_ALU64:
		alu_str(&b, in);
		break;
	case BPF_JMP:
	case BPF_JMP32:
		jmp_str(&b, in);
		break;
	case BPF_LDX:
		if (mode == BPF_MEM || mode == BPF_MEMSX)
			sb_printf(&b, "r%d = *(%s *)(r%d %+d)", in->dst_reg,
				  mode == BPF_MEMSX ?
				  memsx_sizes[BPF_SIZE(in->code) >> 3] : sz,
				  in->src_reg, in->off);
		else
			sb_printf(&b, "invalid ldx mode");
		break;
	case BPF_STX:
		if (mode == BPF_MEM)
			sb_printf(&b, "*(%s *)(r%d %+d) = r%d", sz, in->dst_reg,
				  in->off, in->src_reg);
		else if (mode == BPF_ATOMIC)
			atomic_str(&b, in, sz);
		else
			sb_printf(&b, "invalid stx mode");
		break;
	case BPF_ST:
		if (mode == BPF_MEM)
			sb_printf(&b, "*(%s *)(r%d %+d) = %d", sz, in->dst_reg,
				  in->off, in->imm);
		else
			sb_printf(&b, "invalid st mode");
		break;
	case BPF_LD:
		if (mode == BPF_IMM && BPF_SIZE(in->code) == BPF_DW) {
			ld_imm64_str(&b, in, next);
			slots = next ? 2 : 1;
		} else if (mode == BPF_ABS) {
			sb_printf(&b, "r0 = *(%s *)skb[%d]", sz, in->imm);
		} else if (mode == BPF_IND) {
			sb_printf(&b, "r0 = *(%s *)skb[r%d + %d]", sz,
				  in->src_reg, in->imm);
		} else {
			sb_printf(&b, "invalid ld mode");
		}
		break;
	}
	return slots;
}

void bpf_disasm(FILE *f, const struct bpf_insn *insns, size_t n)
{
	char buf[128];
	size_t i = 0;

	while (i < n) {
		size_t k = bpf_insn_str(buf, sizeof(buf), &insns[i],
					i + 1 < n ? &insns[i + 1] : NULL);

		fprintf(f, "%4zu: %s\n", i, buf);
		i += k;
	}
}
