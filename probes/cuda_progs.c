// SPDX-License-Identifier: MIT
/*
 * The cuda: provider's hidden programs, written by hand: they are the
 * same whatever the clauses say.
 *
 * Kernel names: a CUfunction or CUkernel handle is an opaque pointer, so
 * the entry of cuModuleGetFunction / cuLibraryGetKernel saves where the
 * handle will be written and the name's address (cuKernelGetFunction:
 * the CUkernel, whose name we already know) per thread; the return,
 * when the call succeeded, reads the handle and records
 * names[handle] = { key, GLOB bits }: the key is a hash of the whole
 * mangled name (gpucode/kname.h), and knames[hash] keeps the name for
 * the tracer.  The bits come from the match table that the tracer
 * filled from the target's fatbins, since eBPF cannot demangle a name
 * to match a GLOB.
 *
 * Entry-time values (cuda:malloc size, cuda:sync start) are saved under
 * the entry stack pointer + 8, which is the stack pointer at return:
 * unique per call in flight, and readable by the clause's uretprobe
 * program straight from its context.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <asm/ptrace.h>

#include "compiler/emit.h"
#include "gpucode/kname.h"
#include "probes/cuda_priv.h"

#define R(f)	((int)offsetof(struct pt_regs, f))

struct code {
	struct bpf_insn *v;
	size_t n, cap;
	bool nomem;
};

static void emit(struct code *a, struct bpf_insn in)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct bpf_insn *v = realloc(a->v, cap * sizeof(*v));

		if (!v) {
			a->nomem = true;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = in;
}

static void map_ref(struct code *a, int reg, int map)
{
	emit(a, I_LD64_LO(reg, BPF_PSEUDO_MAP_FD, map));
	emit(a, I_LD64_HI(0));
}

/* r2 = r10 + OFF */
static void fp(struct code *a, int reg, int off)
{
	emit(a, I_MOV64_REG(reg, BPF_REG_10));
	emit(a, I_ALU64_IMM(BPF_ADD, reg, off));
}

/* A forward jump: its index, patched by land(). */
static size_t jump(struct code *a, struct bpf_insn in)
{
	emit(a, in);
	return a->n - 1;
}

static void land(struct code *a, size_t j)
{
	if (!a->nomem)
		a->v[j].off = (int16_t)(a->n - j - 1);
}

static void ret0(struct code *a)
{
	emit(a, I_MOV64_IMM(BPF_REG_0, 0));
	emit(a, I_EXIT());
}

/* pend[pid_tgid] = { rdi, SRC, KIND } */
static void name_entry(struct code *a, const struct cuda_shared *sh, int src,
		       int kind)
{
	emit(a, I_MOV64_REG(BPF_REG_6, BPF_REG_1));
	emit(a, I_CALL(BPF_FUNC_get_current_pid_tgid));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, -8));
	emit(a, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_6, R(rdi)));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -32));
	emit(a, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_6, src));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -24));
	emit(a, I_ST(BPF_DW, BPF_REG_10, -16, kind));
	map_ref(a, BPF_REG_1, sh->pend_map);
	fp(a, BPF_REG_2, -8);
	fp(a, BPF_REG_3, -32);
	emit(a, I_MOV64_IMM(BPF_REG_4, BPF_ANY));
	emit(a, I_CALL(BPF_FUNC_map_update_elem));
	ret0(a);
}

static void ld64(struct code *a, int reg, uint64_t v)
{
	emit(a, I_LD64_LO(reg, 0, v));
	emit(a, I_LD64_HI(v));
}

/*
 * The name at user address r8 -> its key (gpucode/kname.h) at -96, its
 * hash at -104, the agent bit when it is one of the agent's kernels;
 * knames[hash] = the name, for the tracer.  The name is read into a
 * per-CPU buffer and hashed a byte at a time (a bounded loop: names are
 * met once per module, not per launch).  Failures jump to OUT.
 */
static void name_key(struct code *a, const struct cuda_shared *sh,
		     size_t *out, int *nout)
{
	uint64_t prefix;
	uint16_t rest;
	size_t loop, done, notagent[3];

	memcpy(&prefix, KNAME_AGENT_PREFIX, 8);
	memcpy(&rest, KNAME_AGENT_PREFIX + 8, 2);
	emit(a, I_ST(BPF_DW, BPF_REG_10, -104, 0));
	map_ref(a, BPF_REG_1, sh->scratch_map);
	fp(a, BPF_REG_2, -104);
	emit(a, I_CALL(BPF_FUNC_map_lookup_elem));
	out[(*nout)++] = jump(a, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	emit(a, I_MOV64_REG(BPF_REG_7, BPF_REG_0));
	emit(a, I_MOV64_REG(BPF_REG_1, BPF_REG_7));
	emit(a, I_MOV64_IMM(BPF_REG_2, KNAME_MAX));
	emit(a, I_MOV64_REG(BPF_REG_3, BPF_REG_8));
	emit(a, I_CALL(BPF_FUNC_probe_read_user_str));
	out[(*nout)++] = jump(a, I_JMP_IMM(BPF_JSLE, BPF_REG_0, 0, 0));
	emit(a, I_MOV64_REG(BPF_REG_8, BPF_REG_0));
	emit(a, I_ALU64_IMM(BPF_SUB, BPF_REG_8, 1));	/* the NUL */
	out[(*nout)++] = jump(a, I_JMP_IMM(BPF_JGT, BPF_REG_8, KNAME_MAX - 1, 0));
	/* the agent's kernels: KNAME_AGENT_PREFIX */
	notagent[0] = jump(a, I_JMP_IMM(BPF_JLT, BPF_REG_8, 10, 0));
	emit(a, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_7, 0));
	ld64(a, BPF_REG_2, prefix);
	notagent[1] = jump(a, I_JMP_REG(BPF_JNE, BPF_REG_1, BPF_REG_2, 0));
	emit(a, I_LDX(BPF_H, BPF_REG_1, BPF_REG_7, 8));
	notagent[2] = jump(a, I_JMP_IMM(BPF_JNE, BPF_REG_1, rest, 0));
	emit(a, I_ST(BPF_DW, BPF_REG_10, -96 + CUDA_BITS_OFF,
		     1 << CUDA_BIT_AGENT));
	for (int i = 0; i < 3; i++)
		land(a, notagent[i]);
	/* FNV-1a over the name's bytes */
	ld64(a, BPF_REG_1, KNAME_FNV_OFF);
	ld64(a, BPF_REG_5, KNAME_FNV_PRIME);
	emit(a, I_MOV64_IMM(BPF_REG_2, 0));
	loop = a->n;
	done = jump(a, I_JMP_REG(BPF_JGE, BPF_REG_2, BPF_REG_8, 0));
	emit(a, I_MOV64_REG(BPF_REG_3, BPF_REG_7));
	emit(a, I_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_2));
	emit(a, I_LDX(BPF_B, BPF_REG_4, BPF_REG_3, 0));
	emit(a, I_ALU64_REG(BPF_XOR, BPF_REG_1, BPF_REG_4));
	emit(a, I_ALU64_REG(BPF_MUL, BPF_REG_1, BPF_REG_5));
	emit(a, I_ALU64_IMM(BPF_ADD, BPF_REG_2, 1));
	emit(a, I_JA((int16_t)((long)loop - (long)a->n - 1)));
	land(a, done);
	emit(a, I_ST(BPF_DW, BPF_REG_10, -96, KNAME_TAG));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -96 + KNAME_HASH_OFF));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -104));
	map_ref(a, BPF_REG_1, sh->knames_map);
	fp(a, BPF_REG_2, -104);
	emit(a, I_MOV64_REG(BPF_REG_3, BPF_REG_7));
	emit(a, I_MOV64_IMM(BPF_REG_4, BPF_ANY));
	emit(a, I_CALL(BPF_FUNC_map_update_elem));
}

/*
 * Stack: -8 pid_tgid, -16 handle, -24 CUkernel key, -96..-25 the
 * names value (key at -96, bits at -32), -104 the name's hash.
 */
static void name_ret(struct code *a, const struct cuda_shared *sh)
{
	size_t out[9], by_name, store, nomatch;
	int i, nout = 0;

	emit(a, I_MOV64_REG(BPF_REG_6, BPF_REG_1));
	emit(a, I_CALL(BPF_FUNC_get_current_pid_tgid));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, -8));
	map_ref(a, BPF_REG_1, sh->pend_map);
	fp(a, BPF_REG_2, -8);
	emit(a, I_CALL(BPF_FUNC_map_lookup_elem));
	out[nout++] = jump(a, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	emit(a, I_LDX(BPF_DW, BPF_REG_7, BPF_REG_0, 0));
	emit(a, I_LDX(BPF_DW, BPF_REG_8, BPF_REG_0, 8));
	emit(a, I_LDX(BPF_DW, BPF_REG_9, BPF_REG_0, 16));
	map_ref(a, BPF_REG_1, sh->pend_map);
	fp(a, BPF_REG_2, -8);
	emit(a, I_CALL(BPF_FUNC_map_delete_elem));
	/* CUresult is an enum: CUDA_SUCCESS is 0 in the low 32 bits */
	emit(a, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_6, R(rax)));
	emit(a, I_MOV32_REG(BPF_REG_0, BPF_REG_0));
	out[nout++] = jump(a, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
	emit(a, I_ST(BPF_DW, BPF_REG_10, -16, 0));
	fp(a, BPF_REG_1, -16);
	emit(a, I_MOV64_IMM(BPF_REG_2, 8));
	emit(a, I_MOV64_REG(BPF_REG_3, BPF_REG_7));
	emit(a, I_CALL(BPF_FUNC_probe_read_user));
	out[nout++] = jump(a, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
	for (i = 0; i < CUDA_NAMES_VALUE; i += 8)
		emit(a, I_ST(BPF_DW, BPF_REG_10, -96 + i, 0));
	by_name = jump(a, I_JMP_IMM(BPF_JEQ, BPF_REG_9, 0, 0));
	/* cuKernelGetFunction: the function is named like its kernel */
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_8, -24));
	map_ref(a, BPF_REG_1, sh->names_map);
	fp(a, BPF_REG_2, -24);
	emit(a, I_CALL(BPF_FUNC_map_lookup_elem));
	out[nout++] = jump(a, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	for (i = 0; i < CUDA_NAMES_VALUE; i += 8) {
		emit(a, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, i));
		emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -96 + i));
	}
	store = jump(a, I_JA(0));
	land(a, by_name);
	name_key(a, sh, out, &nout);
	map_ref(a, BPF_REG_1, sh->match_map);
	fp(a, BPF_REG_2, -104);
	emit(a, I_CALL(BPF_FUNC_map_lookup_elem));
	nomatch = jump(a, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	emit(a, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
	emit(a, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, -96 + CUDA_BITS_OFF));
	emit(a, I_ALU64_REG(BPF_OR, BPF_REG_1, BPF_REG_2));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -96 + CUDA_BITS_OFF));
	land(a, nomatch);
	land(a, store);
	map_ref(a, BPF_REG_1, sh->names_map);
	fp(a, BPF_REG_2, -16);
	fp(a, BPF_REG_3, -96);
	emit(a, I_MOV64_IMM(BPF_REG_4, BPF_ANY));
	emit(a, I_CALL(BPF_FUNC_map_update_elem));
	for (i = 0; i < nout; i++)
		land(a, out[i]);
	ret0(a);
}

/* calls[sp + 8] = { value, 1 }: sp + 8 is the stack pointer at return */
static void save(struct code *a, const struct cuda_shared *sh,
		 enum cuda_hidden what)
{
	emit(a, I_MOV64_REG(BPF_REG_6, BPF_REG_1));
	switch (what) {
	case CH_SAVE_TIME:
		emit(a, I_CALL(BPF_FUNC_ktime_get_ns));
		emit(a, I_MOV64_REG(BPF_REG_7, BPF_REG_0));
		break;
	case CH_SAVE_PITCH:
		emit(a, I_LDX(BPF_DW, BPF_REG_7, BPF_REG_6, R(rdx)));
		emit(a, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_6, R(rcx)));
		emit(a, I_ALU64_REG(BPF_MUL, BPF_REG_7, BPF_REG_1));
		break;
	default:
		emit(a, I_LDX(BPF_DW, BPF_REG_7, BPF_REG_6, R(rsi)));
		break;
	}
	emit(a, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_6, R(rsp)));
	emit(a, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 8));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -8));
	emit(a, I_STX(BPF_DW, BPF_REG_10, BPF_REG_7, -24));
	emit(a, I_ST(BPF_DW, BPF_REG_10, -16, 1));
	map_ref(a, BPF_REG_1, sh->calls_map);
	fp(a, BPF_REG_2, -8);
	fp(a, BPF_REG_3, -24);
	emit(a, I_MOV64_IMM(BPF_REG_4, BPF_ANY));
	emit(a, I_CALL(BPF_FUNC_map_update_elem));
	ret0(a);
}

int cuda_prog_build(enum cuda_hidden what, const struct cuda_shared *sh,
		    struct bpf_insn **insns, size_t *n)
{
	struct code a = { 0 };

	switch (what) {
	case CH_NAME_ENTRY:
		name_entry(&a, sh, R(rdx), 0);
		break;
	case CH_KERNEL_ENTRY:
		name_entry(&a, sh, R(rsi), 1);
		break;
	case CH_NAME_RET:
		name_ret(&a, sh);
		break;
	default:
		save(&a, sh, what);
		break;
	}
	if (a.nomem) {
		free(a.v);
		return -ENOMEM;
	}
	*insns = a.v;
	*n = a.n;
	return 0;
}
