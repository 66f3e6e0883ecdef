/* SPDX-License-Identifier: MIT */
/* Building eBPF instructions. */
#ifndef GT_EMIT_H
#define GT_EMIT_H

#include <linux/bpf.h>
#include <stdint.h>

#define I_RAW(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define I_ALU64_REG(op, d, s)	I_RAW(BPF_ALU64 | BPF_OP(op) | BPF_X, d, s, 0, 0)
#define I_ALU64_IMM(op, d, k)	I_RAW(BPF_ALU64 | BPF_OP(op) | BPF_K, d, 0, 0, k)
#define I_ALU32_REG(op, d, s)	I_RAW(BPF_ALU | BPF_OP(op) | BPF_X, d, s, 0, 0)
#define I_MOV64_REG(d, s)	I_ALU64_REG(BPF_MOV, d, s)
#define I_MOV64_IMM(d, k)	I_ALU64_IMM(BPF_MOV, d, k)
#define I_MOV32_REG(d, s)	I_ALU32_REG(BPF_MOV, d, s)
#define I_LDX(sz, d, s, o)	I_RAW(BPF_LDX | BPF_SIZE(sz) | BPF_MEM, d, s, o, 0)
#define I_STX(sz, d, s, o)	I_RAW(BPF_STX | BPF_SIZE(sz) | BPF_MEM, d, s, o, 0)
#define I_ST(sz, d, o, k)	I_RAW(BPF_ST | BPF_SIZE(sz) | BPF_MEM, d, 0, o, k)
#define I_JMP_IMM(op, d, k, o)	I_RAW(BPF_JMP | BPF_OP(op) | BPF_K, d, 0, o, k)
#define I_JMP_REG(op, d, s, o)	I_RAW(BPF_JMP | BPF_OP(op) | BPF_X, d, s, o, 0)
#define I_JA(o)			I_RAW(BPF_JMP | BPF_JA, 0, 0, o, 0)
#define I_CALL(id)		I_RAW(BPF_JMP | BPF_CALL, 0, 0, 0, id)
#define I_EXIT()		I_RAW(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
/* ld_imm64 takes two instructions. */
#define I_LD64_LO(d, src, v)	I_RAW(BPF_LD | BPF_DW | BPF_IMM, d, src, 0, (int32_t)(uint32_t)(v))
#define I_LD64_HI(v)		I_RAW(0, 0, 0, 0, (int32_t)(uint32_t)((uint64_t)(v) >> 32))

#endif
