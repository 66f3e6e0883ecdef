/* SPDX-License-Identifier: MIT */
/*
 * Device verifier: the effect of one non-branching instruction on the
 * abstract state (ALU, loads and stores, ld_imm64, helper calls).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "compiler/bpf_disasm.h"
#include "compiler/verifier_priv.h"

#ifndef BPF_MEMSX
#define BPF_MEMSX 0x80
#endif

/* Pointer offsets beyond this are bugs, and would overflow int64 sums. */
#define PTR_OFF_MAX ((int64_t)1 << 29)

static const char *type_name(const struct vf_reg *r)
{
	static const char *const names[] = {
		[VT_NOT_INIT] = "uninitialised register",
		[VT_SCALAR] = "scalar",
		[VT_CTX] = "ctx pointer",
		[VT_STACK] = "stack pointer",
		[VT_MAP_VALUE] = "map value pointer",
		[VT_MAP_VALUE_OR_NULL] = "map value pointer that may be NULL",
	};

	return names[r->type];
}

static int check_regno(struct vf_env *v, int regno)
{
	if (regno >= VF_NREGS)
		return vf_fail(v, -EINVAL, "invalid register r%d", regno);
	return 0;
}

/* REGNO is read: it must exist and hold something. */
static int read_reg(struct vf_env *v, struct vf_state *st, int regno)
{
	int err = check_regno(v, regno);

	if (err)
		return err;
	if (st->regs[regno].type == VT_NOT_INIT)
		return vf_fail(v, -EACCES, "R%d is not initialised", regno);
	return 0;
}

/* REGNO is written: it must exist and not be the frame pointer. */
static int write_reg(struct vf_env *v, int regno)
{
	int err = check_regno(v, regno);

	if (err)
		return err;
	if (regno == BPF_REG_10)
		return vf_fail(v, -EACCES, "frame pointer r10 is read only");
	return 0;
}

/* ---- ALU ---- */

/* Bounds of a scalar as an operand of WIDTH bits: a 32-bit op sees its
 * low half, whose bounds are known only when the high half is 0. */
static void operand(const struct vf_reg *r, unsigned width, uint64_t *lo,
		    uint64_t *hi)
{
	*lo = r->umin;
	*hi = r->umax;
	if (width == 32 && r->known) {
		*lo = *hi = (uint32_t)r->val;
	} else if (width == 32 && *hi > UINT32_MAX) {
		*lo = 0;
		*hi = UINT32_MAX;
	}
}

/* All ones up to X's highest set bit. */
static uint64_t fill_bits(uint64_t x)
{
	for (int s = 1; s < 64; s <<= 1)
		x |= x >> s;
	return x;
}

/*
 * Bounds of OP on operands [A0, A1] and [B0, B1] of WIDTH bits, where the
 * result is not a constant: whatever cannot overflow keeps bounds, the
 * rest is any value of the width.  These bounds are what lets a loop such
 * as `while ($i < tid % 4)` end.
 */
static void range_alu(struct vf_reg *dst, unsigned op, unsigned width,
		      uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1,
		      bool b_known)
{
	uint64_t mask = width == 64 ? UINT64_MAX : UINT32_MAX;
	uint64_t lo = 0, hi = mask;

	/* adding a negative constant is how eBPF subtracts one */
	if (op == BPF_ADD && b_known && b0 > mask >> 1) {
		op = BPF_SUB;
		b0 = b1 = (0 - b0) & mask;
	}
	switch (op) {
	case BPF_ADD:
		if (a1 <= mask - b1) {
			lo = a0 + b0;
			hi = a1 + b1;
		}
		break;
	case BPF_SUB:
		if (a0 >= b1) {
			lo = a0 - b1;
			hi = a1 - b0;
		}
		break;
	case BPF_MUL:
		if (!a1 || b1 <= mask / a1) {
			lo = a0 * b0;
			hi = a1 * b1;
		}
		break;
	case BPF_DIV:		/* x / 0 = 0 */
		if (b0) {
			lo = a0 / b1;
			hi = a1 / b0;
		} else {
			hi = a1;
		}
		break;
	case BPF_MOD:		/* x % 0 = x, and x % y <= x */
		hi = b0 && b1 - 1 < a1 ? b1 - 1 : a1;
		break;
	case BPF_AND:
		hi = a1 < b1 ? a1 : b1;
		break;
	case BPF_OR:
		lo = a0 > b0 ? a0 : b0;
		hi = fill_bits(a1 > b1 ? a1 : b1);
		break;
	case BPF_XOR:
		hi = fill_bits(a1 > b1 ? a1 : b1);
		break;
	case BPF_LSH:
		if (b_known && b0 < width && a1 <= mask >> b0) {
			lo = a0 << b0;
			hi = a1 << b0;
		}
		break;
	case BPF_ARSH:		/* of a value whose sign bit is clear */
		if (a1 > mask >> 1)
			break;
		/* fall through */
	case BPF_RSH:		/* the lowering masks the shift count */
		if (b_known && b0 < width) {
			lo = a0 >> b0;
			hi = a1 >> b0;
		} else {
			hi = a1;
		}
		break;
	}
	vf_set_range(dst, lo, hi);
}

static int scalar_alu(struct vf_env *v, struct vf_reg *dst,
		      const struct vf_reg *src, unsigned op, bool is64, bool x,
		      int32_t imm)
{
	unsigned width = is64 ? 64 : 32;
	uint64_t a = dst->val, b = src->val, r = 0;
	bool known = dst->known && src->known;

	if (!is64) {
		a = (uint32_t)a;
		b = (uint32_t)b;
	}
	if ((op == BPF_DIV || op == BPF_MOD) && src->known && b == 0)
		return vf_fail(v, -EACCES, "division by zero");
	if (op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH) {
		if (!x && (uint32_t)imm >= width)
			return vf_fail(v, -EINVAL, "invalid shift %d", imm);
		/* hardware disagrees on big shifts: the result is unknown */
		if (b >= width)
			known = false;
	}
	if (!known) {
		uint64_t a0, a1, b0, b1;

		operand(dst, width, &a0, &a1);
		operand(src, width, &b0, &b1);
		range_alu(dst, op, width, a0, a1, b0, b1, b0 == b1);
		return 0;
	}
	switch (op) {
	case BPF_ADD: r = a + b; break;
	case BPF_SUB: r = a - b; break;
	case BPF_MUL: r = a * b; break;
	case BPF_DIV: r = a / b; break;
	case BPF_MOD: r = a % b; break;
	case BPF_OR: r = a | b; break;
	case BPF_AND: r = a & b; break;
	case BPF_XOR: r = a ^ b; break;
	case BPF_LSH: r = a << b; break;
	case BPF_RSH: r = a >> b; break;
	case BPF_ARSH:
		r = is64 ? (uint64_t)((int64_t)a >> b) :
			   (uint32_t)((int32_t)(uint32_t)a >> b);
		break;
	}
	vf_set_scalar(dst, true, is64 ? r : (uint32_t)r);
	return 0;
}

static int ptr_alu(struct vf_env *v, struct vf_reg *dst,
		   const struct vf_reg *src, const struct bpf_insn *in,
		   bool is64)
{
	unsigned op = BPF_OP(in->code);
	const struct vf_reg *ptr = vf_is_ptr(dst) ? dst : src;
	const struct vf_reg *k = vf_is_ptr(dst) ? src : dst;
	struct vf_reg res;
	int64_t delta;

	if (!is64)
		return vf_fail(v, -EACCES, "32-bit arithmetic on a %s",
			       type_name(ptr));
	if (vf_is_ptr(dst) && vf_is_ptr(src))
		return vf_fail(v, -EACCES, "arithmetic between two pointers");
	if (ptr->type == VT_MAP_VALUE_OR_NULL)
		return vf_fail(v, -EACCES, "arithmetic on a %s (check it "
			       "against 0 first)", type_name(ptr));
	if (ptr->type == VT_CTX)
		return vf_fail(v, -EACCES, "arithmetic on the ctx pointer");
	if (op != BPF_ADD && op != BPF_SUB)
		return vf_fail(v, -EACCES, "pointer arithmetic other than "
			       "add/sub on a %s", type_name(ptr));
	if (op == BPF_SUB && !vf_is_ptr(dst))
		return vf_fail(v, -EACCES, "subtracting a pointer from a "
			       "scalar");
	if (!k->known)
		return vf_fail(v, -EACCES, "pointer arithmetic with an "
			       "unknown scalar (offsets must be constants)");
	delta = (int64_t)k->val;
	if (delta < -PTR_OFF_MAX || delta > PTR_OFF_MAX)
		return vf_fail(v, -EACCES, "pointer offset %" PRId64
			       " out of range", delta);
	res = *ptr;
	res.off += op == BPF_ADD ? delta : -delta;
	if (res.off < -PTR_OFF_MAX || res.off > PTR_OFF_MAX)
		return vf_fail(v, -EACCES, "pointer offset %" PRId64
			       " out of range", res.off);
	*dst = res;
	return 0;
}

static uint64_t bswap(uint64_t x, int bits)
{
	uint64_t r = 0;
	int i;

	for (i = 0; i < bits / 8; i++)
		r = r << 8 | ((x >> (8 * i)) & 0xff);
	return r;
}

static int do_end(struct vf_env *v, struct vf_state *st,
		  const struct bpf_insn *in)
{
	struct vf_reg *dst;
	uint64_t x;
	int err;

	if (BPF_CLASS(in->code) == BPF_ALU64)
		return vf_fail(v, -EINVAL, "bswap (cpu v4) is not supported");
	if (in->src_reg || in->off ||
	    (in->imm != 16 && in->imm != 32 && in->imm != 64))
		return vf_fail(v, -EINVAL, "invalid byte swap encoding");
	if ((err = write_reg(v, in->dst_reg)) ||
	    (err = read_reg(v, st, in->dst_reg)))
		return err;
	dst = &st->regs[in->dst_reg];
	x = dst->val;
	if (dst->type != VT_SCALAR)
		return vf_fail(v, -EACCES, "byte swap of a %s",
			       type_name(dst));
	if (!dst->known) {
		/* the result has imm bits; a 64-bit to_le changes nothing */
		if (in->imm < 64)
			vf_set_range(dst, 0, ((uint64_t)1 << in->imm) - 1);
		else if (BPF_SRC(in->code) == BPF_TO_BE)
			vf_set_scalar(dst, false, 0);
		return 0;
	}
	if (in->imm < 64)
		x &= ((uint64_t)1 << in->imm) - 1;
	/* the device, like the host, is little-endian */
	if (BPF_SRC(in->code) == BPF_TO_BE)
		x = bswap(x, in->imm);
	vf_set_scalar(dst, true, x);
	return 0;
}

static int do_alu(struct vf_env *v, struct vf_state *st,
		  const struct bpf_insn *in)
{
	bool is64 = BPF_CLASS(in->code) == BPF_ALU64;
	bool x = BPF_SRC(in->code) == BPF_X;
	unsigned op = BPF_OP(in->code);
	struct vf_reg *dst, src;
	int err;

	if (op == BPF_END)
		return do_end(v, st, in);
	if (op > BPF_ARSH)
		return vf_fail(v, -EINVAL, "invalid ALU opcode 0x%02x",
			       in->code);
	if (in->off)
		return vf_fail(v, -EINVAL, "signed div/mod and sign-extending "
			       "moves (cpu v4) are not supported");
	if (x ? in->imm != 0 : in->src_reg != 0)
		return vf_fail(v, -EINVAL, "reserved field set in ALU "
			       "instruction");
	if ((err = write_reg(v, in->dst_reg)))
		return err;
	dst = &st->regs[in->dst_reg];
	if (x) {
		if ((err = read_reg(v, st, in->src_reg)))
			return err;
		src = st->regs[in->src_reg];
	} else {
		vf_set_scalar(&src, true, is64 ? (uint64_t)(int64_t)in->imm :
					      (uint32_t)in->imm);
	}
	if (op == BPF_MOV) {
		if (is64) {
			*dst = src;
			return 0;
		}
		if (src.type != VT_SCALAR)
			return vf_fail(v, -EACCES, "32-bit move of a %s",
				       type_name(&src));
		if (src.known) {
			vf_set_scalar(dst, true, (uint32_t)src.val);
		} else {
			uint64_t lo, hi;

			operand(&src, 32, &lo, &hi);
			vf_set_range(dst, lo, hi);
		}
		return 0;
	}
	if ((err = read_reg(v, st, in->dst_reg)))
		return err;
	if (op == BPF_NEG) {
		if (x)
			return vf_fail(v, -EINVAL, "invalid neg encoding");
		if (dst->type != VT_SCALAR)
			return vf_fail(v, -EACCES, "negation of a %s",
				       type_name(dst));
		if (dst->known)
			vf_set_scalar(dst, true, is64 ? -dst->val :
						  (uint32_t)-dst->val);
		else if (!is64)
			vf_set_range(dst, 0, UINT32_MAX);
		else
			vf_set_scalar(dst, false, 0);
		return 0;
	}
	if (vf_is_ptr(dst) || vf_is_ptr(&src))
		return ptr_alu(v, dst, &src, in, is64);
	return scalar_alu(v, dst, &src, op, is64, x, in->imm);
}

/* ---- memory ---- */

static int access_size(uint8_t code)
{
	switch (BPF_SIZE(code)) {
	case BPF_B: return 1;
	case BPF_H: return 2;
	case BPF_W: return 4;
	default: return 8;
	}
}

/*
 * Check SIZE bytes at REGNO + OFF.  On success *O is the offset of the
 * access from r10 (stack) or from the value's start (map value).  Every
 * access must be naturally aligned: a misaligned access faults on the GPU
 * and takes the traced kernel down with it.
 */
static int check_access(struct vf_env *v, struct vf_state *st, int regno,
			int16_t off, int size, int64_t *o)
{
	const struct vf_reg *r;
	uint32_t vs;
	int err;

	if ((err = read_reg(v, st, regno)))
		return err;
	r = &st->regs[regno];
	*o = r->off + off;
	switch (r->type) {
	case VT_STACK:
		if (*o < -VF_STACK_SIZE || *o + size > 0)
			return vf_fail(v, -EACCES, "invalid stack access fp%+"
				       PRId64 " size %d (stack is [-%d, 0))",
				       *o, size, VF_STACK_SIZE);
		if (*o % size)
			return vf_fail(v, -EACCES, "misaligned stack access fp%+"
				       PRId64 " size %d", *o, size);
		return 0;
	case VT_MAP_VALUE:
		vs = v->maps[r->map].value_size;
		if (*o < 0 || *o + size > vs)
			return vf_fail(v, -EACCES, "invalid map value access off %"
				       PRId64 " size %d (value_size %u)",
				       *o, size, vs);
		if (*o % size)
			return vf_fail(v, -EACCES, "misaligned map value access "
				       "off %" PRId64 " size %d", *o, size);
		return 0;
	default:
		return vf_fail(v, -EACCES, "R%d invalid memory access: %s%s",
			       regno, type_name(r),
			       r->type == VT_MAP_VALUE_OR_NULL ?
			       " (check it against 0 first)" : "");
	}
}

static int slot_of(int64_t o)
{
	return (int)(o + VF_STACK_SIZE) / 8;
}

static uint8_t *stack_byte(struct vf_state *st, int64_t o)
{
	return &st->stack[o + VF_STACK_SIZE];
}

/*
 * Break up the spill in SLOT before part of it is overwritten.  The rest of
 * a spilled pointer becomes unreadable, so pointer bits never turn into
 * data; the rest of a spilled scalar is plain data.
 */
static void unspill(struct vf_state *st, int slot)
{
	uint8_t *b = &st->stack[slot * 8];

	if (b[0] != VS_SPILL)
		return;
	memset(b, vf_is_ptr(&st->spill[slot]) ? VS_INVALID : VS_MISC, 8);
	memset(&st->spill[slot], 0, sizeof(st->spill[slot]));
}

static void stack_write(struct vf_state *st, int64_t o, int size,
			const struct vf_reg *val)
{
	int slot = slot_of(o);

	if (size == 8) {
		memset(stack_byte(st, o), VS_SPILL, 8);
		st->spill[slot] = *val;
		return;
	}
	unspill(st, slot);
	memset(stack_byte(st, o), VS_MISC, size);
}

/* Check that [O, O+SIZE) was written on this path. */
static int stack_init(struct vf_env *v, struct vf_state *st, int64_t o,
		      int size, const char *what)
{
	int i;

	for (i = 0; i < size; i++)
		if (*stack_byte(st, o + i) == VS_INVALID)
			return vf_fail(v, -EACCES, "%s uninitialised stack "
				       "fp%+" PRId64, what, o + i);
	return 0;
}

/* What a load of SIZE unknown bytes gives: zero-extended. */
static void load_bounds(struct vf_reg *r, int size)
{
	vf_set_range(r, 0, size == 8 ? UINT64_MAX :
			   ((uint64_t)1 << (8 * size)) - 1);
}

static int stack_read(struct vf_env *v, struct vf_state *st, int64_t o,
		      int size, struct vf_reg *out)
{
	int slot = slot_of(o);
	int err;

	if ((err = stack_init(v, st, o, size, "read of")))
		return err;
	load_bounds(out, size);
	if (*stack_byte(st, o) != VS_SPILL)
		return 0;
	if (size == 8)
		*out = st->spill[slot];
	else if (vf_is_ptr(&st->spill[slot]))
		return vf_fail(v, -EACCES, "partial read of a spilled %s at "
			       "fp%+" PRId64, type_name(&st->spill[slot]), o);
	return 0;
}

static int do_ldx(struct vf_env *v, struct vf_state *st,
		  const struct bpf_insn *in)
{
	int size = access_size(in->code);
	struct vf_reg val;
	int64_t o;
	int err;

	if (BPF_MODE(in->code) == BPF_MEMSX)
		return vf_fail(v, -EINVAL, "sign-extending loads (cpu v4) are "
			       "not supported");
	if (BPF_MODE(in->code) != BPF_MEM || in->imm)
		return vf_fail(v, -EINVAL, "invalid load encoding");
	if ((err = write_reg(v, in->dst_reg)) ||
	    (err = check_access(v, st, in->src_reg, in->off, size, &o)))
		return err;
	if (st->regs[in->src_reg].type == VT_STACK) {
		if ((err = stack_read(v, st, o, size, &val)))
			return err;
	} else {
		load_bounds(&val, size);
	}
	st->regs[in->dst_reg] = val;
	return 0;
}

static int do_store(struct vf_env *v, struct vf_state *st,
		    const struct bpf_insn *in, const struct vf_reg *val)
{
	int size = access_size(in->code);
	int64_t o;
	int err;

	if ((err = check_regno(v, in->dst_reg)) ||
	    (err = check_access(v, st, in->dst_reg, in->off, size, &o)))
		return err;
	if (st->regs[in->dst_reg].type == VT_MAP_VALUE) {
		/* a device address means nothing to the host reading maps */
		if (vf_is_ptr(val))
			return vf_fail(v, -EACCES, "storing a %s into a map "
				       "value", type_name(val));
		return 0;
	}
	if (vf_is_ptr(val) && size != 8)
		return vf_fail(v, -EACCES, "partial store of a %s to the "
			       "stack", type_name(val));
	stack_write(st, o, size, val);
	return 0;
}

static int do_atomic(struct vf_env *v, struct vf_state *st,
		     const struct bpf_insn *in)
{
	int size = access_size(in->code), op = in->imm & ~BPF_FETCH;
	bool fetch = in->imm & BPF_FETCH;
	struct vf_reg unknown;
	int64_t o;
	int err, slot;

	if (size != 4 && size != 8)
		return vf_fail(v, -EINVAL, "atomic ops are 32 or 64 bits");
	if (in->imm != BPF_XCHG && in->imm != BPF_CMPXCHG &&
	    op != BPF_ADD && op != BPF_OR && op != BPF_AND && op != BPF_XOR)
		return vf_fail(v, -EINVAL, "invalid atomic op 0x%x",
			       (uint32_t)in->imm);
	if ((err = read_reg(v, st, in->src_reg)))
		return err;
	if (st->regs[in->src_reg].type != VT_SCALAR)
		return vf_fail(v, -EACCES, "atomic operand R%d is a %s",
			       in->src_reg, type_name(&st->regs[in->src_reg]));
	if (in->imm == BPF_CMPXCHG) {
		if ((err = read_reg(v, st, BPF_REG_0)))
			return err;
		if (st->regs[0].type != VT_SCALAR)
			return vf_fail(v, -EACCES, "cmpxchg comparand R0 is "
				       "a %s", type_name(&st->regs[0]));
	}
	if ((err = check_regno(v, in->dst_reg)) ||
	    (err = check_access(v, st, in->dst_reg, in->off, size, &o)))
		return err;
	if (st->regs[in->dst_reg].type == VT_STACK) {
		if ((err = stack_init(v, st, o, size, "atomic op on")))
			return err;
		slot = slot_of(o);
		if (*stack_byte(st, o) == VS_SPILL &&
		    vf_is_ptr(&st->spill[slot]))
			return vf_fail(v, -EACCES, "atomic op on a spilled %s",
				       type_name(&st->spill[slot]));
		/* the memory now holds a value nobody knows */
		vf_set_scalar(&unknown, false, 0);
		stack_write(st, o, size, &unknown);
	}
	if (in->imm == BPF_CMPXCHG) {
		vf_set_scalar(&st->regs[0], false, 0);
	} else if (fetch) {
		if ((err = write_reg(v, in->src_reg)))
			return err;
		vf_set_scalar(&st->regs[in->src_reg], false, 0);
	}
	return 0;
}

static int do_stx_st(struct vf_env *v, struct vf_state *st,
		     const struct bpf_insn *in)
{
	struct vf_reg val;
	int err;

	if (BPF_CLASS(in->code) == BPF_STX) {
		if (BPF_MODE(in->code) == BPF_ATOMIC)
			return do_atomic(v, st, in);
		if (BPF_MODE(in->code) != BPF_MEM || in->imm)
			return vf_fail(v, -EINVAL, "invalid store encoding");
		if ((err = read_reg(v, st, in->src_reg)))
			return err;
		val = st->regs[in->src_reg];
	} else {
		if (BPF_MODE(in->code) != BPF_MEM || in->src_reg)
			return vf_fail(v, -EINVAL, "invalid store encoding");
		vf_set_scalar(&val, true, (uint64_t)(int64_t)in->imm);
	}
	return do_store(v, st, in, &val);
}

static int do_ld(struct vf_env *v, struct vf_state *st,
		 const struct bpf_insn *in)
{
	const struct bpf_insn *hi = in + 1;
	int err;

	if (BPF_MODE(in->code) == BPF_ABS || BPF_MODE(in->code) == BPF_IND)
		return vf_fail(v, -EACCES, "ld_abs/ld_ind (packet access) is "
			       "not allowed");
	if (in->code != (BPF_LD | BPF_IMM | BPF_DW))
		return vf_fail(v, -EINVAL, "invalid ld opcode 0x%02x",
			       in->code);
	if (in->src_reg)
		return vf_fail(v, -EACCES, "ld_imm64 with a map reference "
			       "(pseudo src %d) is not allowed on the device: "
			       "pass the device map id to the helper as a "
			       "constant", in->src_reg);
	if ((err = write_reg(v, in->dst_reg)))
		return err;
	/* the explorer checked that the second slot exists and is clean */
	vf_set_scalar(&st->regs[in->dst_reg], true,
		      (uint64_t)(uint32_t)in->imm |
		      (uint64_t)(uint32_t)hi->imm << 32);
	return 0;
}

/* ---- helper calls ---- */

/*
 * REGNO must point to SIZE initialised bytes of stack (8-byte aligned, so
 * that the runtime may read it by words) or of a map value.
 */
static int check_buf(struct vf_env *v, struct vf_state *st, int regno,
		     int64_t size, const char *what, const char *helper)
{
	const struct vf_reg *r = &st->regs[regno];
	int64_t o = r->off;
	uint32_t vs;
	int i;

	switch (r->type) {
	case VT_STACK:
		if (o < -VF_STACK_SIZE || o + size > 0)
			return vf_fail(v, -EACCES, "%s: R%d %s fp%+" PRId64
				       " size %" PRId64 " is outside the "
				       "stack", helper, regno, what, o, size);
		if (o % 8)
			return vf_fail(v, -EACCES, "%s: R%d %s fp%+" PRId64
				       " is not 8-byte aligned", helper,
				       regno, what, o);
		for (i = 0; i < size; i++) {
			uint8_t b = *stack_byte(st, o + i);

			if (b == VS_INVALID)
				return vf_fail(v, -EACCES, "%s: R%d %s reads "
					       "uninitialised stack fp%+"
					       PRId64, helper, regno, what,
					       o + i);
			if (b == VS_SPILL && vf_is_ptr(&st->spill[slot_of(o + i)]))
				return vf_fail(v, -EACCES, "%s: R%d %s holds "
					       "a spilled pointer at fp%+"
					       PRId64, helper, regno, what,
					       o + i);
		}
		return 0;
	case VT_MAP_VALUE:
		vs = v->maps[r->map].value_size;
		if (o < 0 || o + size > vs)
			return vf_fail(v, -EACCES, "%s: R%d %s off %" PRId64
				       " size %" PRId64 " is outside the map "
				       "value (value_size %u)", helper, regno,
				       what, o, size, vs);
		if (o % 8)
			return vf_fail(v, -EACCES, "%s: R%d %s off %" PRId64
				       " is not 8-byte aligned", helper,
				       regno, what, o);
		return 0;
	default:
		return vf_fail(v, -EACCES, "%s: R%d %s must point to the stack, "
			       "not be a %s", helper, regno, what,
			       type_name(r));
	}
}

static int check_arg(struct vf_env *v, struct vf_state *st,
		     const struct gt_dev_helper_desc *d, int i, int *map)
{
	int regno = i + 1;
	const struct vf_reg *r = &st->regs[regno];
	const struct gt_dev_map *m = *map >= 0 ? &v->maps[*map] : NULL;
	const char *h = d->name;
	const struct vf_reg *size;
	int j;

	if (r->type == VT_NOT_INIT)
		return vf_fail(v, -EACCES, "%s: R%d is not initialised", h,
			       regno);
	switch (d->args[i]) {
	case GT_DHA_NONE:
		return 0;
	case GT_DHA_CONST:
	case GT_DHA_MAP_ID:
		if (r->type != VT_SCALAR || !r->known)
			return vf_fail(v, -EACCES, "%s: R%d must be a known "
				       "constant, not a %s", h, regno,
				       r->type == VT_SCALAR ?
				       "scalar that is not known" :
				       type_name(r));
		if (d->args[i] == GT_DHA_CONST)
			return 0;
		for (j = 0; j < v->nmaps; j++)
			if ((uint64_t)(int64_t)v->maps[j].id == r->val)
				break;
		if (j == v->nmaps)
			return vf_fail(v, -EACCES, "%s: R%d = %" PRId64 " is "
				       "not a device map id", h, regno,
				       (int64_t)r->val);
		*map = j;
		return 0;
	case GT_DHA_KEY:
	case GT_DHA_VALUE_PTR:
		if (!m)
			return vf_fail(v, -EINVAL, "%s: helper table has a "
				       "key or value without a map", h);
		if (d->args[i] == GT_DHA_KEY &&
		    (m->key_size == 0 || m->per_kernel)) {
			/* nothing is read: NULL or any pointer will do */
			if (vf_is_null(r) || r->type == VT_STACK ||
			    r->type == VT_MAP_VALUE)
				return 0;
			return vf_fail(v, -EACCES, "%s: R%d key of a map "
				       "without key must be 0, not a %s", h,
				       regno, type_name(r));
		}
		if (d->args[i] == GT_DHA_KEY)
			return check_buf(v, st, regno, m->key_size, "key", h);
		return check_buf(v, st, regno, m->value_size, "value", h);
	case GT_DHA_SCALAR:
		if (r->type != VT_SCALAR)
			return vf_fail(v, -EACCES, "%s: R%d must be a scalar, "
				       "not a %s", h, regno, type_name(r));
		return 0;
	case GT_DHA_STACK_BUF:
		if (i + 1 >= 5 || d->args[i + 1] != GT_DHA_CONST)
			return vf_fail(v, -EINVAL, "%s: helper table has a "
				       "buffer without a size", h);
		size = &st->regs[regno + 1];
		if (size->type != VT_SCALAR || !size->known)
			return vf_fail(v, -EACCES, "%s: R%d buffer size must "
				       "be a known constant", h, regno + 1);
		if (size->val > VF_STACK_SIZE)
			return vf_fail(v, -EACCES, "%s: R%d buffer size %"
				       PRIu64 " is larger than the stack", h,
				       regno + 1, size->val);
		if (size->val == 0 && (vf_is_null(r) || vf_is_ptr(r)))
			return 0;
		return check_buf(v, st, regno, (int64_t)size->val, "buffer",
				 h);
	}
	return vf_fail(v, -EINVAL, "%s: bad argument kind in helper table", h);
}

static int do_call(struct vf_env *v, struct vf_state *st,
		   const struct bpf_insn *in)
{
	const struct gt_dev_helper_desc *d;
	const char *name;
	struct vf_reg *r0 = &st->regs[0];
	int i, err, map = -1;

	if (in->src_reg == BPF_PSEUDO_CALL)
		return vf_fail(v, -EACCES, "bpf-to-bpf calls are not supported");
	if (in->src_reg == BPF_PSEUDO_KFUNC_CALL)
		return vf_fail(v, -EACCES, "kfunc calls are not supported");
	if (in->src_reg || in->dst_reg || in->off)
		return vf_fail(v, -EINVAL, "reserved field set in call");
	if (in->imm == BPF_FUNC_tail_call)
		return vf_fail(v, -EACCES, "tail calls are not supported");
	d = gt_dev_helper(in->imm);
	if (!d) {
		name = bpf_helper_name(in->imm);
		if (name)
			return vf_fail(v, -EACCES, "kernel helper %s#%d is not "
				       "available in device probes", name,
				       in->imm);
		return vf_fail(v, -EACCES, "unknown helper id %d", in->imm);
	}
	for (i = 0; i < 5 && d->args[i] != GT_DHA_NONE; i++)
		if ((err = check_arg(v, st, d, i, &map)))
			return err;
	/* helpers that fill R1's buffer: what was spilled there is gone,
	 * a constant stored before must not fold a later comparison; a
	 * size of 0 fills nothing (and its pointer was not bounds-checked) */
	if ((d->id == GT_DH_READ || d->id == GT_DH_KERNEL_NAME) &&
	    st->regs[1].type == VT_STACK && st->regs[2].val > 0) {
		int64_t o = st->regs[1].off, n = (int64_t)st->regs[2].val;

		for (int64_t k = o; k < o + n; k += 8)
			unspill(st, slot_of(k));
		memset(stack_byte(st, o), VS_MISC, (size_t)n);
	}
	for (i = BPF_REG_1; i <= BPF_REG_5; i++)
		memset(&st->regs[i], 0, sizeof(st->regs[i]));
	switch (d->ret) {
	case GT_DHR_SCALAR:
		vf_set_scalar(r0, false, 0);
		break;
	case GT_DHR_VOID:
		memset(r0, 0, sizeof(*r0));
		break;
	case GT_DHR_MAP_VALUE_OR_NULL:
		*r0 = (struct vf_reg){ .type = VT_MAP_VALUE_OR_NULL,
				       .map = (int16_t)map, .id = st->pc + 1 };
		break;
	}
	return 0;
}

int vf_do_insn(struct vf_env *v, struct vf_state *st)
{
	const struct bpf_insn *in = &v->insns[st->pc];

	switch (BPF_CLASS(in->code)) {
	case BPF_ALU:
	case BPF_ALU64:
		return do_alu(v, st, in);
	case BPF_LDX:
		return do_ldx(v, st, in);
	case BPF_ST:
	case BPF_STX:
		return do_stx_st(v, st, in);
	case BPF_LD:
		return do_ld(v, st, in);
	case BPF_JMP:
		if (BPF_OP(in->code) == BPF_CALL)
			return do_call(v, st, in);
		break;
	}
	return vf_fail(v, -EINVAL, "invalid opcode 0x%02x", in->code);
}
