/* SPDX-License-Identifier: MIT */
/*
 * eBPF disassembler in the style of the kernel verifier log and bpftool:
 *
 *	  12: (bf) r1 = r10
 *	  13: (07) r1 += -8
 *	  14: (85) call bpf_map_lookup_elem#1
 *	  15: (15) if r0 == 0x0 goto pc+3
 */
#ifndef GT_BPF_DISASM_H
#define GT_BPF_DISASM_H

#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Format INSN (without index) into BUF, "(bf) r1 = r10".  NEXT is the
 * following slot, needed by ld_imm64; NULL when there is none.  Returns
 * the number of slots the instruction takes (2 for ld_imm64, else 1).
 * BUF is always NUL-terminated; 80 bytes hold any instruction.
 */
size_t bpf_insn_str(char *buf, size_t len, const struct bpf_insn *insn,
		    const struct bpf_insn *next);

/* Print N instructions, one per line, "%4zu: " index first. */
void bpf_disasm(FILE *f, const struct bpf_insn *insns, size_t n);

/*
 * Name of helper ID: "bpf_map_lookup_elem" for kernel helpers,
 * "gt_smid" for device helpers, NULL when unknown.
 */
const char *bpf_helper_name(int32_t id);

#endif
