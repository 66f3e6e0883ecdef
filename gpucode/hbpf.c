// SPDX-License-Identifier: MIT
/*
 * hbpf: verifier and interpreter for host clauses run in the agent
 * (gpucode/hbpf.h says what is checked when; docs/hostpath.md why).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpucode/hbpf.h"
#include "gpucode/hbpf_int.h"

/* The helpers the agent offers (numbers of linux/bpf.h). */
static const int helpers[] = {
	BPF_FUNC_map_lookup_elem, BPF_FUNC_map_update_elem,
	BPF_FUNC_map_delete_elem, BPF_FUNC_ktime_get_ns,
	BPF_FUNC_get_smp_processor_id, BPF_FUNC_get_current_pid_tgid,
	BPF_FUNC_get_current_uid_gid, BPF_FUNC_get_current_comm,
	BPF_FUNC_probe_read_user, BPF_FUNC_probe_read_user_str,
	BPF_FUNC_ringbuf_output,
};

bool hbpf_helper_ok(int id)
{
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (helpers[i] == id)
			return true;
	return false;
}

static int fail(char *err, size_t errlen, size_t pc, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "insn %zu: %s", pc, msg);
	return -EINVAL;
}

static bool alu_ok(const struct bpf_insn *in)
{
	uint8_t op = BPF_OP(in->code);

	if (in->off)		/* signed div/mod, movsx: not emitted */
		return false;
	switch (op) {
	case BPF_ADD: case BPF_SUB: case BPF_MUL: case BPF_DIV:
	case BPF_OR: case BPF_AND: case BPF_LSH: case BPF_RSH:
	case BPF_MOD: case BPF_XOR: case BPF_MOV: case BPF_ARSH:
		return true;
	case BPF_NEG:
		return BPF_SRC(in->code) == BPF_K && !in->src_reg;
	case BPF_END:
		return BPF_CLASS(in->code) == BPF_ALU &&
		       (in->imm == 16 || in->imm == 32 || in->imm == 64);
	}
	return false;
}

static bool size_ok(uint8_t code)
{
	return BPF_MODE(code) == BPF_MEM;
}

int hbpf_verify(const struct hbpf_prog *p, int *helper, char *err,
		size_t errlen)
{
	const struct bpf_insn *v = p->insns;
	size_t n = p->n;

	if (helper)
		*helper = -1;
	if (!v || !n || n > HBPF_MAX_INSNS)
		return fail(err, errlen, 0, "%zu instructions", n);
	if (p->nmaps < 0 || p->nmaps > HBPF_MAX_MAPS)
		return fail(err, errlen, 0, "%d maps", p->nmaps);
	/* pass 1: what each instruction is; second halves of LD_IMM64 */
	for (size_t pc = 0; pc < n; pc++) {
		const struct bpf_insn *in = &v[pc];
		uint8_t c = in->code, cls = BPF_CLASS(c);

		if (in->dst_reg > 10 || in->src_reg > 10)
			return fail(err, errlen, pc, "bad register");
		switch (cls) {
		case BPF_ALU:
		case BPF_ALU64:
			if (!alu_ok(in))
				return fail(err, errlen, pc, "bad ALU op 0x%02x", c);
			if (in->dst_reg == BPF_REG_10)
				return fail(err, errlen, pc, "r10 is read only");
			if (BPF_SRC(c) == BPF_K && in->src_reg)
				return fail(err, errlen, pc, "bad source");
			break;
		case BPF_LDX:
			if (!size_ok(c) || in->imm)
				return fail(err, errlen, pc, "bad load 0x%02x", c);
			if (in->dst_reg == BPF_REG_10)
				return fail(err, errlen, pc, "r10 is read only");
			break;
		case BPF_ST:
			if (!size_ok(c) || in->src_reg)
				return fail(err, errlen, pc, "bad store 0x%02x", c);
			break;
		case BPF_STX:
			if (BPF_MODE(c) == BPF_ATOMIC) {
				if ((BPF_SIZE(c) != BPF_W && BPF_SIZE(c) != BPF_DW) ||
				    (in->imm != BPF_ADD &&
				     in->imm != (BPF_ADD | BPF_FETCH)))
					return fail(err, errlen, pc, "bad atomic op");
				break;
			}
			if (!size_ok(c) || in->imm)
				return fail(err, errlen, pc, "bad store 0x%02x", c);
			break;
		case BPF_LD:
			if (c != (BPF_LD | BPF_IMM | BPF_DW))
				return fail(err, errlen, pc, "bad load 0x%02x", c);
			if (pc + 1 >= n || v[pc + 1].code || v[pc + 1].dst_reg ||
			    v[pc + 1].src_reg || v[pc + 1].off)
				return fail(err, errlen, pc, "bad 64-bit immediate");
			if (in->dst_reg == BPF_REG_10 || in->off)
				return fail(err, errlen, pc, "bad 64-bit immediate");
			if (in->src_reg == BPF_PSEUDO_MAP_FD) {
				if (in->imm < 0 || in->imm >= p->nmaps ||
				    v[pc + 1].imm)
					return fail(err, errlen, pc, "no map %d", in->imm);
			} else if (in->src_reg) {
				return fail(err, errlen, pc, "unsupported map value reference");
			}
			pc++;
			break;
		case BPF_JMP:
		case BPF_JMP32: {
			uint8_t op = BPF_OP(c);

			if (op == BPF_CALL) {
				if (cls != BPF_JMP || in->src_reg || in->dst_reg ||
				    in->off || BPF_SRC(c) != BPF_K)
					return fail(err, errlen, pc, "only helper calls");
				if (!hbpf_helper_ok(in->imm)) {
					if (helper)
						*helper = in->imm;
					fail(err, errlen, pc, "helper %d is not offered in the agent",
					     in->imm);
					return -EOPNOTSUPP;
				}
				break;
			}
			if (op == BPF_EXIT) {
				if (cls != BPF_JMP || in->src_reg || in->dst_reg ||
				    in->off || in->imm || BPF_SRC(c) != BPF_K)
					return fail(err, errlen, pc, "bad exit");
				break;
			}
			if (op == BPF_JA) {
				if (cls != BPF_JMP || in->src_reg || in->dst_reg ||
				    in->imm || BPF_SRC(c) != BPF_K)
					return fail(err, errlen, pc, "bad jump");
			} else if (op > BPF_JSLE || op == 0xe0 || op == 0xf0) {
				return fail(err, errlen, pc, "bad jump 0x%02x", c);
			} else if (BPF_SRC(c) == BPF_K && in->src_reg) {
				return fail(err, errlen, pc, "bad source");
			}
			break;
		}
		default:
			return fail(err, errlen, pc, "bad opcode 0x%02x", c);
		}
	}
	/* pass 2: jump targets, and no way off the end */
	for (size_t pc = 0; pc < n; pc++) {
		const struct bpf_insn *in = &v[pc];
		uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
		long t;

		if (in->code == (BPF_LD | BPF_IMM | BPF_DW)) {
			pc++;
			continue;
		}
		if ((cls != BPF_JMP && cls != BPF_JMP32) || op == BPF_CALL ||
		    op == BPF_EXIT)
			continue;
		t = (long)pc + 1 + in->off;
		if (t < 0 || (size_t)t >= n)
			return fail(err, errlen, pc, "jump out of the program");
		if (t > 0 && v[t - 1].code == (BPF_LD | BPF_IMM | BPF_DW)) {
			/* the second half of a LD_IMM64? walk from the start */
			size_t q = 0;

			while (q < (size_t)t)
				q += v[q].code == (BPF_LD | BPF_IMM | BPF_DW) ? 2 : 1;
			if (q != (size_t)t)
				return fail(err, errlen, pc, "jump into a 64-bit immediate");
		}
	}
	{
		const struct bpf_insn *last = &v[n - 1];

		if (n >= 2 && v[n - 2].code == (BPF_LD | BPF_IMM | BPF_DW)) {
			size_t q = 0;

			while (q < n - 1)
				q += v[q].code == (BPF_LD | BPF_IMM | BPF_DW) ? 2 : 1;
			if (q != n - 1)
				return fail(err, errlen, n - 1, "the program falls off its end");
		}
		if (last->code != (BPF_JMP | BPF_EXIT) &&
		    last->code != (BPF_JMP | BPF_JA))
			return fail(err, errlen, n - 1, "the program falls off its end");
	}
	return 0;
}

/* ------------------------------------------------------------ the run -- */

/* Host pointer for N bytes at ADDR, or NULL when no region holds them:
 * the context (read only) or a map value of this run. */
static void *mem_other(struct hbpf_run *r, uint64_t addr, uint64_t n, bool write)
{
	uint64_t c = (uintptr_t)r->ctx;

	if (!write && r->ctx && addr >= c && addr - c <= r->p->ctx_size &&
	    n <= r->p->ctx_size - (addr - c))
		return (void *)(uintptr_t)addr;
	for (int i = 0; i < r->nvals && i < HBPF_VALS; i++) {
		uint64_t b = (uintptr_t)r->vals[i];

		if (addr >= b && addr - b <= r->vsize[i] &&
		    n <= r->vsize[i] - (addr - b))
			return (void *)(uintptr_t)addr;
	}
	return NULL;
}

/* Host pointer for N bytes at ADDR, or NULL when no region holds them. */
static inline __attribute__((always_inline)) void *
mem(struct hbpf_run *r, uint64_t addr, uint64_t n, bool write)
{
	uint64_t s = (uintptr_t)r->stack;

	if (__builtin_expect(addr - s <= HBPF_STACK &&
			     n <= HBPF_STACK - (addr - s), 1))
		return (void *)(uintptr_t)addr;
	if (addr - r->last <= r->lsize && n <= r->lsize - (addr - r->last))
		return (void *)(uintptr_t)addr;
	return mem_other(r, addr, n, write);
}

static int map_of(const struct hbpf_run *r, uint64_t reg)
{
	if ((reg & 0xffffffff00000000ull) != HBPF_MAP_TAG ||
	    (uint32_t)reg >= (uint32_t)r->p->nmaps)
		return -1;
	return (int)(uint32_t)reg;
}

/* Map MI's value for KEY, made one of the run's regions. */
static inline void *lookup(struct hbpf_run *r, const struct hbpf_ops *o,
			   void *arg, int mi, const void *key)
{
	uint8_t *v = o->lookup ? o->lookup(arg, mi, key) : NULL;

	if (v)
		hbpf_int_keep(r, mi, v);
	return v;
}

static HBPF_HOT int call(struct hbpf_run *r, const struct hbpf_ops *o,
			 void *arg, int id, uint64_t *reg)
{
	const struct hbpf_map *m;
	void *a, *b;
	int mi;

	switch (id) {
	case BPF_FUNC_map_lookup_elem:
	case BPF_FUNC_map_update_elem:
	case BPF_FUNC_map_delete_elem:
		mi = map_of(r, reg[1]);
		if (mi < 0 || r->p->maps[mi].ring)
			return -EINVAL;
		m = &r->p->maps[mi];
		a = mem(r, reg[2], m->key_size, false);
		if (!a)
			return -EFAULT;
		if (id == BPF_FUNC_map_lookup_elem) {
			reg[0] = (uintptr_t)lookup(r, o, arg, mi, a);
		} else if (id == BPF_FUNC_map_update_elem) {
			b = mem(r, reg[3], m->value_size, false);
			if (!b)
				return -EFAULT;
			reg[0] = o->update ? o->update(arg, mi, a, b, reg[4]) :
				 -ENOSYS;
		} else {
			reg[0] = o->del ? o->del(arg, mi, a) : -ENOSYS;
		}
		return 0;
	case BPF_FUNC_ringbuf_output:
		mi = map_of(r, reg[1]);
		if (mi < 0 || !r->p->maps[mi].ring)
			return -EINVAL;
		a = mem(r, reg[2], reg[3], false);
		if (!a)
			return -EFAULT;
		reg[0] = o->output ? o->output(arg, mi, a, reg[3]) : -ENOSYS;
		return 0;
	case BPF_FUNC_probe_read_user:
	case BPF_FUNC_probe_read_user_str:
		if (reg[2] > UINT32_MAX)
			return -EFAULT;
		a = mem(r, reg[1], reg[2], true);
		if (!a)
			return -EFAULT;
		if (id == BPF_FUNC_probe_read_user && o->read_user) {
			reg[0] = o->read_user(arg, a, reg[2], reg[3]);
		} else if (id == BPF_FUNC_probe_read_user_str &&
			   o->read_user_str) {
			reg[0] = o->read_user_str(arg, a, reg[2], reg[3]);
		} else {
			memset(a, 0, reg[2]);
			reg[0] = -ENOSYS;
		}
		return 0;
	case BPF_FUNC_get_current_comm:
		if (reg[2] > UINT32_MAX)
			return -EFAULT;
		a = mem(r, reg[1], reg[2], true);
		if (!a)
			return -EFAULT;
		if (o->comm) {
			reg[0] = o->comm(arg, a, reg[2]);
		} else {
			memset(a, 0, reg[2]);
			reg[0] = -ENOSYS;
		}
		return 0;
	case BPF_FUNC_ktime_get_ns:
		reg[0] = o->ktime ? o->ktime(arg) : 0;
		return 0;
	case BPF_FUNC_get_current_pid_tgid:
		reg[0] = o->pid_tgid ? o->pid_tgid(arg) : 0;
		return 0;
	case BPF_FUNC_get_current_uid_gid:
		reg[0] = o->uid_gid ? o->uid_gid(arg) : 0;
		return 0;
	case BPF_FUNC_get_smp_processor_id:
		reg[0] = o->cpu ? o->cpu(arg) : 0;
		return 0;
	}
	return -EINVAL;
}

static uint64_t bswap(uint64_t x, int bits)
{
	switch (bits) {
	case 16:
		return __builtin_bswap16((uint16_t)x);
	case 32:
		return __builtin_bswap32((uint32_t)x);
	default:
		return __builtin_bswap64(x);
	}
}

/* DST op SRC, 64 bits (ALU64) or 32 (ALU, zero-extended). */
static uint64_t alu(uint8_t op, bool is64, uint64_t d, uint64_t s, int32_t imm)
{
	if (!is64) {
		uint32_t a = (uint32_t)d, b = (uint32_t)s;

		switch (op) {
		case BPF_ADD: return (uint32_t)(a + b);
		case BPF_SUB: return (uint32_t)(a - b);
		case BPF_MUL: return (uint32_t)(a * b);
		case BPF_DIV: return b ? a / b : 0;
		case BPF_MOD: return b ? a % b : a;
		case BPF_OR: return a | b;
		case BPF_AND: return a & b;
		case BPF_XOR: return a ^ b;
		case BPF_LSH: return (uint32_t)(a << (b & 31));
		case BPF_RSH: return a >> (b & 31);
		case BPF_ARSH: return (uint32_t)((int32_t)a >> (b & 31));
		case BPF_NEG: return (uint32_t)-a;
		case BPF_MOV: return b;
		}
		return 0;
	}
	switch (op) {
	case BPF_ADD: return d + s;
	case BPF_SUB: return d - s;
	case BPF_MUL: return d * s;
	case BPF_DIV: return s ? d / s : 0;
	case BPF_MOD: return s ? d % s : d;
	case BPF_OR: return d | s;
	case BPF_AND: return d & s;
	case BPF_XOR: return d ^ s;
	case BPF_LSH: return d << (s & 63);
	case BPF_RSH: return d >> (s & 63);
	case BPF_ARSH: return (uint64_t)((int64_t)d >> (s & 63));
	case BPF_NEG: return -d;
	case BPF_MOV: return s;
	}
	(void)imm;
	return 0;
}

bool hbpf_cond(unsigned op, uint64_t a, uint64_t b, bool is32)
{
	int64_t sa = (int64_t)a, sb = (int64_t)b;

	if (is32) {
		a = (uint32_t)a;
		b = (uint32_t)b;
		sa = (int32_t)a;
		sb = (int32_t)b;
	}
	switch (op) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	case BPF_JLT: return a < b;
	case BPF_JLE: return a <= b;
	case BPF_JSET: return a & b;
	case BPF_JSGT: return sa > sb;
	case BPF_JSGE: return sa >= sb;
	case BPF_JSLT: return sa < sb;
	default: return sa <= sb;	/* BPF_JSLE */
	}
}

static const uint8_t sizes[4] = { 4, 2, 1, 8 };	/* BPF_W H B DW >> 3 */

/* Fixed-size moves: a memcpy of a variable size is a call into libc. */
static inline uint64_t load(const void *a, int n)
{
	uint32_t w;
	uint16_t h;
	uint64_t v;

	switch (n) {
	case 1:
		return *(const uint8_t *)a;
	case 2:
		memcpy(&h, a, 2);
		return h;
	case 4:
		memcpy(&w, a, 4);
		return w;
	default:
		memcpy(&v, a, 8);
		return v;
	}
}

static inline void store(void *a, uint64_t v, int n)
{
	uint32_t w = (uint32_t)v;
	uint16_t h = (uint16_t)v;

	switch (n) {
	case 1:
		*(uint8_t *)a = (uint8_t)v;
		break;
	case 2:
		memcpy(a, &h, 2);
		break;
	case 4:
		memcpy(a, &w, 4);
		break;
	default:
		memcpy(a, &v, 8);
	}
}

/*
 * Threaded dispatch: each instruction jumps through a table indexed by
 * its opcode to its handler, and each handler ends with a jump of its
 * own to the next one (NEXT), so the branch predictor learns per
 * handler; the instructions codegen emits most have handlers without
 * the general decoding, every other opcode goes to `general`.  A run
 * that leaves the program or passes its budget stops as before.
 */
#define NEXT()								\
	do {								\
		if (__builtin_expect(pc >= end, 0))			\
			return -EINVAL;	/* unverified: fell off the end */ \
		if (__builtin_expect(--budget < 0, 0))			\
			return -E2BIG;					\
		in = &v[pc];						\
		d = &reg[in->dst_reg];					\
		goto *lab[fast[in->code]];				\
	} while (0)

/* A run taken over where another left it (hbpf_int_resume). */
struct resume {
	const struct hbpf_run *r;
	const uint64_t *reg;
	size_t pc;
	long budget;
};

/*
 * P on CTX, or from RS's state when RS is not NULL: its run, registers
 * (copied: the run ends here) and stack.  One function for both, with
 * the state in locals as a plain run has it, since it is not inlined
 * (a computed goto) and a pointer to the state would cost each NEXT.
 */
static int interp(const struct hbpf_prog *p, const struct hbpf_ops *ops,
		  void *arg, const void *ctx, uint64_t *ret,
		  const struct resume *rs)
{
	/*
	 * Bytes, not pointers: a launch's run starts with cold caches (the
	 * driver's own work between two), and 256 pointers are 32 lines of
	 * which a program touches a line per opcode; these are 4, and 3.
	 */
	enum { GEN, LDX_DW, STX_DW, ST_DW, ST_W, MOV_X, MOV_K, ADD_K, JEQ_K,
	       JNE_K, JA, LD_IMM64, CALL, EXIT, JSET_K, JEQ_X, JNE_X, RSH_K };
	static const void *const lab[] = {
		[GEN] = &&general, [LDX_DW] = &&ldx_dw, [STX_DW] = &&stx_dw,
		[ST_DW] = &&st_dw, [ST_W] = &&st_w, [MOV_X] = &&mov_x,
		[MOV_K] = &&mov_k, [ADD_K] = &&add_k, [JEQ_K] = &&jeq_k,
		[JNE_K] = &&jne_k, [JA] = &&ja, [LD_IMM64] = &&ld_imm64,
		[CALL] = &&call_, [EXIT] = &&exit_, [JSET_K] = &&jset_k,
		[JEQ_X] = &&jeq_x, [JNE_X] = &&jne_x, [RSH_K] = &&rsh_k,
	};
	static const uint8_t fast[256] __attribute__((aligned(64))) = {
		[BPF_LDX | BPF_MEM | BPF_DW] = LDX_DW,
		[BPF_STX | BPF_MEM | BPF_DW] = STX_DW,
		[BPF_ST | BPF_MEM | BPF_DW] = ST_DW,
		[BPF_ST | BPF_MEM | BPF_W] = ST_W,
		[BPF_ALU64 | BPF_MOV | BPF_X] = MOV_X,
		[BPF_ALU64 | BPF_MOV | BPF_K] = MOV_K,
		[BPF_ALU64 | BPF_ADD | BPF_K] = ADD_K,
		[BPF_JMP | BPF_JEQ | BPF_K] = JEQ_K,
		[BPF_JMP | BPF_JNE | BPF_K] = JNE_K,
		[BPF_JMP | BPF_JA] = JA,
		[BPF_LD | BPF_IMM | BPF_DW] = LD_IMM64,
		/* every program: its helpers, its end, the cuda:launch
		 * filter's bit test; pid's shift, predicates' compares */
		[BPF_JMP | BPF_CALL] = CALL,
		[BPF_JMP | BPF_EXIT] = EXIT,
		[BPF_JMP | BPF_JSET | BPF_K] = JSET_K,
		[BPF_JMP | BPF_JEQ | BPF_X] = JEQ_X,
		[BPF_JMP | BPF_JNE | BPF_X] = JNE_X,
		[BPF_ALU64 | BPF_RSH | BPF_K] = RSH_K,
	};
	uint64_t stack[HBPF_STACK / 8], reg[11];
	const struct bpf_insn *v = p->insns, *in;
	static const struct hbpf_ops none;
	const size_t end = p->n;
	size_t pc = 0;
	long budget = HBPF_BUDGET;
	uint64_t src, *d;
	struct hbpf_run r;
	void *a;
	int n;

	if (!ops)
		ops = &none;
	/* not the value ring: it is read only below nvals */
	r.p = p;
	r.stack = (uint8_t *)stack;
	r.ctx = ctx;
	r.nvals = 0;
	r.last = 0;
	r.lsize = 0;
	memset(reg, 0, sizeof(reg));
	reg[1] = (uintptr_t)ctx;
	reg[10] = (uintptr_t)stack + HBPF_STACK;
	if (__builtin_expect(rs != NULL, 0)) {
		r = *rs->r;
		memcpy(reg, rs->reg, sizeof(reg));
		pc = rs->pc;
		budget = rs->budget;
	}
	NEXT();

	/* stack accesses checked against the stack only (mem) */
ldx_dw:	/* the context's registers too, before the value ring */
	src = reg[in->src_reg] + (int64_t)in->off;
	if (ctx && src - (uintptr_t)ctx <= p->ctx_size &&
	    8 <= p->ctx_size - (src - (uintptr_t)ctx))
		a = (void *)(uintptr_t)src;
	else if (!(a = mem(&r, src, 8, false)))
		return -EFAULT;
	memcpy(d, a, 8);
	pc++;
	NEXT();
stx_dw:
	src = reg[in->src_reg];
	goto store_dw;
st_dw:
	src = (uint64_t)(int64_t)in->imm;
store_dw:
	a = mem(&r, *d + (int64_t)in->off, 8, true);
	if (!a)
		return -EFAULT;
	memcpy(a, &src, 8);
	pc++;
	NEXT();
st_w:	/* string constants */
	a = mem(&r, *d + (int64_t)in->off, 4, true);
	if (!a)
		return -EFAULT;
	store(a, (uint64_t)(int64_t)in->imm, 4);
	pc++;
	NEXT();
mov_x:
	*d = reg[in->src_reg];
	pc++;
	NEXT();
mov_k:
	*d = (uint64_t)(int64_t)in->imm;
	pc++;
	NEXT();
add_k:
	*d += (uint64_t)(int64_t)in->imm;
	pc++;
	NEXT();
jeq_k:
	pc += 1 + (*d == (uint64_t)(int64_t)in->imm ? in->off : 0);
	NEXT();
jne_k:
	pc += 1 + (*d != (uint64_t)(int64_t)in->imm ? in->off : 0);
	NEXT();
ja:
	pc += 1 + in->off;
	NEXT();
ld_imm64:
	if (in->src_reg != BPF_PSEUDO_MAP_FD || pc + 1 >= end)
		goto general;
	*d = HBPF_MAP_TAG | (uint32_t)in->imm;
	pc += 2;
	NEXT();
call_:
	n = call(&r, ops, arg, in->imm, reg);
	if (n)
		return n;
	/* r1-r5 are clobbered by a call */
	reg[1] = reg[2] = reg[3] = reg[4] = reg[5] = 0;
	pc++;
	NEXT();
exit_:
	*ret = reg[0];
	return 0;
jset_k:
	pc += 1 + (*d & (uint64_t)(int64_t)in->imm ? in->off : 0);
	NEXT();
jeq_x:
	pc += 1 + (*d == reg[in->src_reg] ? in->off : 0);
	NEXT();
jne_x:
	pc += 1 + (*d != reg[in->src_reg] ? in->off : 0);
	NEXT();
rsh_k:
	*d >>= (uint64_t)(int64_t)in->imm & 63;
	pc++;
	NEXT();

general: {
	uint8_t c = in->code, cls = BPF_CLASS(c), op = BPF_OP(c);

	src = BPF_SRC(c) == BPF_X ? reg[in->src_reg] :
	      (uint64_t)(int64_t)in->imm;
	switch (cls) {
	case BPF_ALU64:
	case BPF_ALU:
		if (op == BPF_END) {
			/* x86 is little endian: to_le only truncates */
			*d = BPF_SRC(c) == BPF_X ? bswap(*d, in->imm) :
			     in->imm == 64 ? *d :
			     *d & ((1ull << in->imm) - 1);
		} else {
			if (cls == BPF_ALU && BPF_SRC(c) == BPF_K)
				src = (uint32_t)in->imm;
			*d = alu(op, cls == BPF_ALU64, *d, src, in->imm);
		}
		break;
	case BPF_LDX:
		n = sizes[BPF_SIZE(c) >> 3];
		a = mem(&r, reg[in->src_reg] + (int64_t)in->off, n, false);
		if (!a)
			return -EFAULT;
		*d = load(a, n);
		break;
	case BPF_ST:
	case BPF_STX: {
		uint64_t val = cls == BPF_ST ? (uint64_t)(int64_t)in->imm :
			       reg[in->src_reg];

		n = sizes[BPF_SIZE(c) >> 3];
		a = mem(&r, *d + (int64_t)in->off, n, true);
		if (!a)
			return -EFAULT;
		if (BPF_MODE(c) == BPF_ATOMIC) {
			uint64_t old;

			if (n == 8)
				old = __atomic_fetch_add((uint64_t *)a, val,
							 __ATOMIC_RELAXED);
			else
				old = __atomic_fetch_add((uint32_t *)a,
							 (uint32_t)val,
							 __ATOMIC_RELAXED);
			if (in->imm & BPF_FETCH)
				reg[in->src_reg] = old;
		} else {
			store(a, val, n);
		}
		break;
	}
	case BPF_LD:
		if (pc + 1 >= p->n)
			return -EINVAL;
		if (in->src_reg == BPF_PSEUDO_MAP_FD)
			*d = HBPF_MAP_TAG | (uint32_t)in->imm;
		else
			*d = (uint32_t)in->imm |
			     (uint64_t)(uint32_t)v[pc + 1].imm << 32;
		pc++;
		break;
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_EXIT) {
			*ret = reg[0];
			return 0;
		}
		if (op == BPF_CALL) {
			int e = call(&r, ops, arg, in->imm, reg);

			if (e)
				return e;
			/* r1-r5 are clobbered by a call */
			reg[1] = reg[2] = reg[3] = reg[4] = reg[5] = 0;
			break;
		}
		if (op == BPF_JA || hbpf_cond(op, *d, src, cls == BPF_JMP32))
			pc += in->off;
		break;
	default:
		return -EINVAL;
	}
	pc++;
	NEXT();
	}
}
#undef NEXT

int hbpf_run(const struct hbpf_prog *p, const struct hbpf_ops *ops,
	     void *arg, const void *ctx, uint64_t *ret)
{
	return interp(p, ops, arg, ctx, ret, NULL);
}

int hbpf_int_run_on(const struct hbpf_prog *p, const struct hbpf_ops *ops,
		    void *arg, const void *ctx, uint64_t *stack,
		    uint64_t *ret)
{
	uint64_t reg[11] = { 0 };
	struct hbpf_run r = {
		.p = p, .stack = (uint8_t *)stack, .ctx = ctx,
	};

	reg[1] = (uintptr_t)ctx;
	reg[10] = (uintptr_t)stack + HBPF_STACK;
	return hbpf_int_resume(&r, ops, arg, reg, 0, HBPF_BUDGET, ret);
}

int hbpf_int_resume(struct hbpf_run *r, const struct hbpf_ops *o, void *arg,
		    uint64_t *reg, size_t pc, long budget, uint64_t *ret)
{
	struct resume rs = { r, reg, pc, budget };

	return interp(r->p, o, arg, r->ctx, ret, &rs);
}

/* Not inlined into the interpreter's handlers: wrappers of their own. */
void *hbpf_int_mem(struct hbpf_run *r, uint64_t addr, uint64_t n, bool write)
{
	return mem(r, addr, n, write);
}

HBPF_HOT int hbpf_int_call(struct hbpf_run *r, const struct hbpf_ops *o,
			   void *arg, int id, uint64_t *reg)
{
	return call(r, o, arg, id, reg);
}

HBPF_HOT void *hbpf_int_lookup(struct hbpf_run *r, const struct hbpf_ops *o,
			       void *arg, int mi, const void *key)
{
	return lookup(r, o, arg, mi, key);
}
