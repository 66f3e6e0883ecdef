// SPDX-License-Identifier: MIT
/*
 * eBPF code generation for host clauses.
 *
 * Frame: r10-relative, grown downwards by a bump allocator; scratch
 * variables get fixed slots, expression temporaries are freed in LIFO
 * order.  r6 keeps the context pointer; helpers clobber r1-r5.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen.h"
#include "compiler/dev_helpers.h"
#include "compiler/emit.h"
#include "compiler/verifier.h"
#include "gpucode/devrt.h"
#include "gpucode/kname.h"
#include "probes/provider.h"

#define STACK_MAX 512
#define GT_JOIN_ARGS 16	/* bpftrace 0.17's join_argnum */
#define MAP_MAX_ENTRIES 4096

enum {
	H_MAP_LOOKUP = 1, H_MAP_UPDATE = 2, H_MAP_DELETE = 3,
	H_KTIME = 5, H_RAND = 7, H_CPU = 8, H_PID_TGID = 14, H_UID_GID = 15,
	H_COMM = 16, H_CURTASK = 35, H_NUMAID = 42, H_CGROUP = 80,
	H_SEND_SIGNAL = 109, H_PROBE_READ_USER = 112,
	H_PROBE_READ_USER_STR = 114, H_RINGBUF_OUTPUT = 130,
	H_RINGBUF_RESERVE = 131, H_RINGBUF_SUBMIT = 132,
	H_PROBE_READ_KERNEL = 113, H_PROBE_READ_KERNEL_STR = 115, H_GET_STACKID = 27,
	H_FOR_EACH_MAP_ELEM = 164,
};

struct cg {
	struct unit *u;
	struct gt_object *obj;	/* stack maps are added as they are met */
	const struct cg_opts *opts;
	struct probe *probe;
	struct bpf_insn *code;
	size_t n, cap;
	int sp, max_sp;
	int *rets;		/* jumps to the epilogue */
	int nrets, caprets;
	bool failed;
	bool device;		/* a gpu: clause: device helpers, no kernel ones */
	struct loc loc;		/* of the clause, for errors */
	struct loc stmt_loc;	/* of the statement being generated */
	bool too_far;		/* a jump past 16 bits was reported */
	struct loop *loop;	/* the innermost while loop */
	struct gt_src_loop *loops;	/* every while loop of the program */
	int nloops, caploops;
	struct map_layout *layouts;	/* the object's, by map index */
	/* callbacks (len(), for over a map): each its own code, laid out
	 * after the program; refs are the loads of their addresses */
	struct cg_sub *subs;
	int nsubs, capsubs;
	struct cg_ref *refs;
	int nrefs, caprefs;
	int cur;		/* the code being written: -1 main, else a sub */
	int len_sub;		/* len()'s callback, -1 until needed */
	int ended;		/* for over a map: the clause's flag set by
				 * return/exit() in a body (0: no such loop) */
	int vreg;		/* the frame of the variables: r10, or r9 in
				 * a for body (the clause's frame) */
	int flt_slot;		/* the provider filter's map value pointer,
				 * kept for a builtin that reads the same
				 * entry (cuda:launch's kernel); 0: none */
	int flt_map, flt_off;	/* that map, the context word of its key */
};

struct cg_sub {
	struct bpf_insn *code;
	size_t n;
	int max_sp;		/* a for body's frame, for the stack check */
	struct loc loc;
};

struct cg_ref {
	int buf;		/* -1: the main code, else a sub */
	size_t at;		/* the ld_imm64 */
	int target;		/* the sub it loads */
};

/* A while loop being generated: where continue goes, what break patches */
struct loop {
	size_t top;
	int *breaks;
	int nbreaks;
	struct loop *outer;
	bool fwd;		/* a for body: continue jumps forward, to conts */
	int *conts;
	int nconts;
};

#define NO_KEY 1	/* gen_key's answer for a device map without key */

static void emit(struct cg *g, struct bpf_insn in)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		struct bpf_insn *c = realloc(g->code, cap * sizeof(*c));

		if (!c) {
			fputs("gputrace: out of memory\n", stderr);
			abort();
		}
		g->code = c;
		g->cap = cap;
	}
	g->code[g->n++] = in;
}

static void emit_ld64(struct cg *g, int reg, uint64_t v)
{
	if ((int64_t)v == (int32_t)v) {
		emit(g, I_MOV64_IMM(reg, (int32_t)v));
		return;
	}
	emit(g, I_LD64_LO(reg, 0, v));
	emit(g, I_LD64_HI(v));
}

static void emit_map_ref(struct cg *g, int reg, int map)
{
	emit(g, I_LD64_LO(reg, BPF_PSEUDO_MAP_FD, map));
	emit(g, I_LD64_HI(0));
}

/* Forward jump to be patched: returns its index. */
static int jmp_fwd(struct cg *g, struct bpf_insn in)
{
	emit(g, in);
	return g->n - 1;
}

/*
 * eBPF jump offsets are 16 bits; the 32-bit "gotol" needs kernel 6.4 and the
 * lowering does not know it, so a longer jump is refused where it starts.
 */
static void patch(struct cg *g, int at)
{
	size_t off = g->n - at - 1;

	if (off > INT16_MAX) {
		if (!g->too_far)
			diag_error(g->stmt_loc, "code too long: a jump over %zu instructions, more than the %d eBPF allows",
				   off, INT16_MAX);
		g->too_far = true;
		g->failed = true;
		off = 0;
	}
	g->code[at].off = off;
}

/* A forward jump to the program's epilogue (return, failed predicate). */
static void jmp_to_end(struct cg *g, struct bpf_insn in)
{
	if (g->nrets == g->caprets) {
		g->caprets = g->caprets ? g->caprets * 2 : 16;
		g->rets = realloc(g->rets, g->caprets * sizeof(int));
		if (!g->rets)
			abort();
	}
	g->rets[g->nrets++] = jmp_fwd(g, in);
}

static int stack_alloc(struct cg *g, int size)
{
	g->sp += (size + 7) & ~7;
	if (g->sp > g->max_sp)
		g->max_sp = g->sp;
	return -g->sp;
}

static void stack_ptr(struct cg *g, int reg, int off)
{
	emit(g, I_MOV64_REG(reg, BPF_REG_10));
	emit(g, I_ALU64_IMM(BPF_ADD, reg, off));
}

/*
 * r0 = lookup of SRC's map by the u64 context field at src.off (KEY: an
 * 8-byte stack slot for the key).  Returns the jump to patch where the
 * entry is absent (r0 == 0).
 */
static int lookup_by_ctx(struct cg *g, const struct builtin_src *src, int key)
{
	emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_6, src->off));
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, key));
	emit_map_ref(g, BPF_REG_1, src->map);
	stack_ptr(g, BPF_REG_2, key);
	emit(g, I_CALL(H_MAP_LOOKUP));
	return jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
}

static void zero_mem(struct cg *g, int off, int size)
{
	for (int i = 0; i < size; i += 8)
		emit(g, I_ST(BPF_DW, BPF_REG_10, off + i, 0));
}

/* Copy SIZE bytes from [SRC+soff] to [r10+doff] through r1. */
static void copy_mem(struct cg *g, int src, int soff, int doff, int size)
{
	for (int i = 0; i < size; i += 8) {
		emit(g, I_LDX(BPF_DW, BPF_REG_1, src, soff + i));
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, doff + i));
	}
}

static void store_bytes(struct cg *g, int off, const char *s, size_t len, int size)
{
	for (int i = 0; i < size; i += 4) {
		uint32_t w = 0;

		for (int b = 0; b < 4; b++)
			if ((size_t)(i + b) < len)
				w |= (uint32_t)(uint8_t)s[i + b] << (8 * b);
		emit(g, I_ST(BPF_W, BPF_REG_10, off + i, (int32_t)w));
	}
}

static const struct map_layout *layout(struct cg *g, struct map_sym *m);
static void gen_int(struct cg *g, struct node *n);

/* A value held in 8 bytes and computed into r0, like an integer. */
static bool is_scalar(const struct type *t)
{
	return t->kind == T_INT || t->kind == T_STACK ||
	       (t->kind == T_SYM && !t->user);
}

/* The stack-trace map for stacks of LIMIT frames (".stackN"), made once. */
static int stack_map(struct cg *g, int limit)
{
	struct gt_map_def d = {
		.type = GT_MT_STACK_TRACE, .key_size = 4,
		.value_size = 8 * limit, .max_entries = MAP_MAX_ENTRIES,
		.fd = -1,
	};
	int idx;

	snprintf(d.name, sizeof(d.name), ".stack%d", limit);
	for (int i = 0; i < g->obj->nmaps; i++)
		if (!strcmp(g->obj->maps[i].name, d.name))
			return i;
	idx = gt_object_add_map(g->obj, &d);
	if (idx < 0) {
		fputs("gputrace: out of memory\n", stderr);
		abort();
	}
	return idx;
}

/*
 * r0 = the stack id (negative errno when there is no stack), for a user
 * stack with the pid in the upper half: addresses are per process.
 * bpftrace 0.17 puts the thread id there; see docs/stacks.md.
 */
static void gen_stack(struct cg *g, const struct type *t)
{
	int save = g->sp, id;

	emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_6));
	emit_map_ref(g, BPF_REG_2, stack_map(g, t->limit));
	emit(g, I_MOV64_IMM(BPF_REG_3, t->user ? BPF_F_USER_STACK : 0));
	emit(g, I_CALL(H_GET_STACKID));
	if (!t->user)
		return;
	id = stack_alloc(g, 8);
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, id));
	emit(g, I_CALL(H_PID_TGID));
	emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
	emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_0, 32));
	emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, id));
	emit(g, I_MOV32_REG(BPF_REG_1, BPF_REG_1));
	emit(g, I_ALU64_REG(BPF_OR, BPF_REG_0, BPF_REG_1));
	g->sp = save;
}
static void gen_to(struct cg *g, struct node *n, int dst);
static void gen_stmts(struct cg *g, struct node *s);

static const struct map_layout *layout(struct cg *g, struct map_sym *m)
{
	return &g->layouts[m->index];
}

/* Key of map access N (its key expressions) into a new stack buffer. */
static int gen_key(struct cg *g, struct node *n, struct map_sym *m)
{
	const struct map_layout *ml = layout(g, m);
	int off;
	struct node *k = n->args;

	if (g->device) {
		/* the device runtime buckets itself; no key means key 0 */
		if (!m->key)
			return NO_KEY;
		off = stack_alloc(g, m->key->size);
		for (int i = 0; k; k = k->next, i++)
			gen_to(g, k, off + m->key->offsets[i]);
		return off;
	}
	off = stack_alloc(g, ml->key_size);
	if (!m->key) {
		zero_mem(g, off, 8);
	} else {
		for (int i = 0; k; k = k->next, i++)
			gen_to(g, k, off + m->key->offsets[i]);
	}
	if (ml->has_bucket)
		zero_mem(g, off + ml->key_size - 8, 8);
	return off;
}

static void key_ptr(struct cg *g, int reg, int key)
{
	if (key == NO_KEY)
		emit(g, I_MOV64_IMM(reg, 0));
	else
		stack_ptr(g, reg, key);
}

/* r1 = the map: a map fd reference on the host, the map id on the GPU. */
static void map_arg(struct cg *g, struct map_sym *m)
{
	if (g->device)
		emit(g, I_MOV64_IMM(BPF_REG_1, m->index));
	else
		emit_map_ref(g, BPF_REG_1, m->index);
}

static void call_lookup(struct cg *g, struct map_sym *m, int key)
{
	map_arg(g, m);
	key_ptr(g, BPF_REG_2, key);
	emit(g, I_CALL(g->device ? GT_DH_MAP_LOOKUP : H_MAP_LOOKUP));
}

static void call_update(struct cg *g, struct map_sym *m, int key, int val)
{
	map_arg(g, m);
	key_ptr(g, BPF_REG_2, key);
	if (g->device) {
		stack_ptr(g, BPF_REG_3, val);
		emit(g, I_CALL(GT_DH_MAP_UPDATE));
		return;
	}
	stack_ptr(g, BPF_REG_3, val);
	emit(g, I_MOV64_IMM(BPF_REG_4, BPF_ANY));
	emit(g, I_CALL(H_MAP_UPDATE));
}

static void send_event(struct cg *g, int buf, int size);

/*
 * -k (bpftrace's): when helper HELPER has failed (r0 < 0; a lookup: r0
 * NULL), a record { event, r0 } tells the tracer, which warns at LOC as
 * bpftrace does.  r0 is kept.
 */
static void check_helper(struct cg *g, const char *helper, struct loc loc,
			 bool lookup)
{
	struct event_desc ev = { .kind = EV_HELPER_ERR, .fmt = helper,
				 .loc = loc };
	int buf, ok, save = g->sp;

	if (g->device || !g->opts || g->opts->helper_check < (lookup ? 2 : 1))
		return;
	ok = jmp_fwd(g, lookup ? I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0) :
			  I_JMP_IMM(BPF_JSGE, BPF_REG_0, 0, 0));
	buf = stack_alloc(g, 16);
	emit(g, I_ST(BPF_DW, BPF_REG_10, buf, unit_add_event(g->u, ev)));
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, buf + 8));
	send_event(g, buf, 16);
	emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, buf + 8));
	g->sp = save;
	patch(g, ok);
}

/* Read map element N: integers into r0, others into [r10+dst]. */
static void gen_map_read(struct cg *g, struct node *n, int dst)
{
	struct map_sym *m = n->sym;
	int save = g->sp, key = gen_key(g, n, m), j, j2;

	call_lookup(g, m, key);
	check_helper(g, "map_lookup_elem", n->loc, true);
	if (is_scalar(m->val)) {
		j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_0, 0));
		patch(g, j);
	} else {
		j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
		copy_mem(g, BPF_REG_0, 0, dst, m->val->size);
		j2 = jmp_fwd(g, I_JA(0));
		patch(g, j);
		zero_mem(g, dst, m->val->size);
		patch(g, j2);
	}
	g->sp = save;
}

static int ldx_size(int size)
{
	return size == 1 ? BPF_B : size == 2 ? BPF_H : size == 4 ? BPF_W : BPF_DW;
}

/* r0 holds SRC->size bytes zero-extended: extend the sign if asked. */
static void sign_extend(struct cg *g, const struct builtin_src *src)
{
	int sh = 64 - 8 * src->size;

	if (!src->sign || sh <= 0)
		return;
	emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_0, sh));
	emit(g, I_ALU64_IMM(BPF_ARSH, BPF_REG_0, sh));
}

/* A provider-specific builtin: 0 when SRC was filled. */
static int provider_src(struct cg *g, const char *name, struct builtin_src *src)
{
	const struct provider *prov = g->probe->prov;

	if (!prov->builtin_src)
		return -ENOENT;
	return prov->builtin_src(g->probe, name, src);
}

static const struct { const char *name; int helper; } dev_builtins[] = {
	{ "smid", GT_DH_SMID }, { "nsmid", GT_DH_NSMID },
	{ "warpid", GT_DH_WARPID }, { "laneid", GT_DH_LANEID },
	{ "lanes", GT_DH_LANES },
	{ "blockIdx.x", GT_DH_CTAID_X }, { "blockIdx.y", GT_DH_CTAID_Y },
	{ "blockIdx.z", GT_DH_CTAID_Z },
	{ "threadIdx.x", GT_DH_TID_X }, { "threadIdx.y", GT_DH_TID_Y },
	{ "threadIdx.z", GT_DH_TID_Z },
	{ "blockDim.x", GT_DH_NTID_X }, { "blockDim.y", GT_DH_NTID_Y },
	{ "blockDim.z", GT_DH_NTID_Z },
	{ "gridDim.x", GT_DH_NCTAID_X }, { "gridDim.y", GT_DH_NCTAID_Y },
	{ "gridDim.z", GT_DH_NCTAID_Z },
	{ "gtime", GT_DH_GTIME }, { "clock", GT_DH_CLOCK },
	{ "duration", GT_DH_DURATION }, { "launch", GT_DH_LAUNCH },
	{ "launch_ns", GT_DH_LAUNCH_NS }, { "gpu", GT_DH_GPU },
	{ "pid", GT_DH_PID },
	{ "addr", GT_DH_MEM_ADDR }, { "size", GT_DH_MEM_SIZE },
	{ "store", GT_DH_MEM_STORE }, { "sectors", GT_DH_MEM_SECTORS },
	{ "insn", GT_DH_MEM_INSN }, { "line", GT_DH_MEM_LINE },
	{ "conflicts", GT_DH_MEM_CONFLICTS },
};

/* `probe`: the probe's number in the tracer's table of names */
static void gen_probe_id(struct cg *g, struct node *n)
{
	int id = probe_name_id(g->probe->name);

	if (id < 0) {
		diag_error(n->loc, "out of memory");
		g->failed = true;
	}
	emit(g, I_MOV64_IMM(BPF_REG_0, id < 0 ? 0 : id));
}

static void gen_dev_builtin(struct cg *g, struct node *n)
{
	const char *b = n->str;

	if (!strcmp(b, "probe")) {
		gen_probe_id(g, n);
		return;
	}

	if (!strncmp(b, "arg", 3)) {
		emit(g, I_MOV64_IMM(BPF_REG_1, atoi(b + 3)));
		emit(g, I_CALL(GT_DH_ARG));
		return;
	}
	for (size_t i = 0; i < sizeof(dev_builtins) / sizeof(dev_builtins[0]); i++)
		if (!strcmp(dev_builtins[i].name, b)) {
			emit(g, I_CALL(dev_builtins[i].helper));
			return;
		}
	diag_error(n->loc, "builtin '%s' is not available on the GPU", b);
	g->failed = true;
	emit(g, I_MOV64_IMM(BPF_REG_0, 0));
}

static void gen_builtin_int(struct cg *g, struct node *n)
{
	const char *b = n->str;
	struct builtin_src src;

	if (g->device) {
		gen_dev_builtin(g, n);
	} else if (n->type->kind == T_STACK) {
		gen_stack(g, n->type);
	} else if (!provider_src(g, b, &src) &&
		   (src.kind == BSRC_PTR_U32 || src.kind == BSRC_PTR_U64)) {
		int save = g->sp, t = stack_alloc(g, 8);

		emit(g, I_ST(BPF_DW, BPF_REG_10, t, 0));
		emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_6, src.off));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, src.ptr_off));
		stack_ptr(g, BPF_REG_1, t);
		emit(g, I_MOV64_IMM(BPF_REG_2, src.kind == BSRC_PTR_U64 ? 8 : 4));
		emit(g, I_CALL(H_PROBE_READ_USER));
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, t));
		g->sp = save;
	} else if (!provider_src(g, b, &src) && src.kind == BSRC_MAP_U64) {
		/* u64 at ptr_off of map[ctx field], 0 when absent; since: age */
		int save = g->sp, key = stack_alloc(g, 8), j1, j2;

		j1 = lookup_by_ctx(g, &src, key);
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_0, src.ptr_off));
		if (src.since) {
			emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, key));
			emit(g, I_CALL(H_KTIME));
			emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, key));
			emit(g, I_ALU64_REG(BPF_SUB, BPF_REG_0, BPF_REG_1));
		}
		j2 = jmp_fwd(g, I_JA(0));
		patch(g, j1);
		emit(g, I_MOV64_IMM(BPF_REG_0, 0));
		patch(g, j2);
		g->sp = save;
	} else if (!provider_src(g, b, &src) && src.kind == BSRC_CTX_U64) {
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_6, src.off));
	} else if (!provider_src(g, b, &src) && src.kind == BSRC_CTX_INT) {
		emit(g, I_LDX(ldx_size(src.size), BPF_REG_0, BPF_REG_6, src.off));
		sign_extend(g, &src);
	} else if (!provider_src(g, b, &src) && src.kind == BSRC_PTR_INT) {
		int save = g->sp, t = stack_alloc(g, 8);

		emit(g, I_ST(BPF_DW, BPF_REG_10, t, 0));
		emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_6, src.off));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, src.ptr_off));
		stack_ptr(g, BPF_REG_1, t);
		emit(g, I_MOV64_IMM(BPF_REG_2, src.size));
		emit(g, I_CALL(H_PROBE_READ_USER));
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, t));
		sign_extend(g, &src);
		g->sp = save;
	} else if (!provider_src(g, b, &src) && src.kind == BSRC_IMM) {
		emit_ld64(g, BPF_REG_0, (uint64_t)src.imm);
	} else if (!provider_src(g, b, &src) && src.kind == BSRC_USTACK_U64) {
		int save = g->sp, t = stack_alloc(g, 8);

		emit(g, I_ST(BPF_DW, BPF_REG_10, t, 0));
		emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_6, src.sp_off));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, src.off));
		stack_ptr(g, BPF_REG_1, t);
		emit(g, I_MOV64_IMM(BPF_REG_2, 8));
		emit(g, I_CALL(H_PROBE_READ_USER));
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, t));
		g->sp = save;
	} else if (!strcmp(b, "pid") || !strcmp(b, "tid")) {
		emit(g, I_CALL(H_PID_TGID));
		if (b[0] == 'p')
			emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
		else
			emit(g, I_MOV32_REG(BPF_REG_0, BPF_REG_0));
	} else if (!strcmp(b, "uid") || !strcmp(b, "gid") ||
		   !strcmp(b, "username")) {
		emit(g, I_CALL(H_UID_GID));
		if (b[0] == 'g')
			emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
		else
			emit(g, I_MOV32_REG(BPF_REG_0, BPF_REG_0));
	} else if (!strcmp(b, "probe")) {
		gen_probe_id(g, n);
	} else if (!strcmp(b, "nsecs")) {
		emit(g, I_CALL(H_KTIME));
	} else if (!strcmp(b, "elapsed")) {
		emit(g, I_CALL(H_KTIME));
		emit_ld64(g, BPF_REG_1, g->opts->start_ns);
		emit(g, I_ALU64_REG(BPF_SUB, BPF_REG_0, BPF_REG_1));
	} else if (!strcmp(b, "cpu")) {
		emit(g, I_CALL(H_CPU));
	} else if (!strcmp(b, "rand")) {
		emit(g, I_CALL(H_RAND));
	} else if (!strcmp(b, "curtask")) {
		emit(g, I_CALL(H_CURTASK));
	} else if (!strcmp(b, "cgroup")) {
		emit(g, I_CALL(H_CGROUP));
	} else if (!strcmp(b, "numaid")) {
		emit(g, I_CALL(H_NUMAID));
	} else if (!strcmp(b, "ctx")) {
		emit(g, I_MOV64_REG(BPF_REG_0, BPF_REG_6));
	} else if (!strcmp(b, "cpid")) {
		emit_ld64(g, BPF_REG_0, g->opts->cpid);
	} else {
		diag_error(n->loc, "builtin '%s' is not supported here yet", b);
		g->failed = true;
		emit(g, I_MOV64_IMM(BPF_REG_0, 0));
	}
	if (!g->device && !provider_src(g, b, &src) && src.u32)
		emit(g, I_MOV32_REG(BPF_REG_0, BPF_REG_0));
}

static const char *posarg(struct cg *g, struct node *n)
{
	return n->ival >= 1 && g->u->argc > 0 &&
	       n->ival <= (uint64_t)g->u->argc ?
	       g->u->argv[n->ival - 1] : "";
}

/* Compare the two 64-byte strings at A and B: r0 = 1 when equal. */
static void gen_streq(struct cg *g, int a, int b)
{
	int fails[GT_STRLEN / 8], j;

	for (int i = 0; i < GT_STRLEN; i += 8) {
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, a + i));
		emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, b + i));
		fails[i / 8] = jmp_fwd(g, I_JMP_REG(BPF_JNE, BPF_REG_1, BPF_REG_2, 0));
	}
	emit(g, I_MOV64_IMM(BPF_REG_0, 1));
	j = jmp_fwd(g, I_JA(0));
	for (int i = 0; i < GT_STRLEN / 8; i++)
		patch(g, fails[i]);
	emit(g, I_MOV64_IMM(BPF_REG_0, 0));
	patch(g, j);
}

static int elem_bytes(const struct type *ptr)
{
	return ptr->elem->bytes > 0 ? ptr->elem->bytes : 1;
}

/* r0 OP r1 where one or both are pointers: C's scaling by the element */
static void gen_ptr_arith(struct cg *g, struct node *n)
{
	const struct type *a = n->a->type, *b = n->b->type;
	int op = n->op == B_ADD ? BPF_ADD : BPF_SUB;

	if (a->kind == T_PTR && b->kind == T_PTR) {
		emit(g, I_ALU64_REG(BPF_SUB, BPF_REG_0, BPF_REG_1));
		emit(g, I_ALU64_IMM(BPF_DIV, BPF_REG_0, elem_bytes(a)));
		return;
	}
	if (a->kind == T_PTR)
		emit(g, I_ALU64_IMM(BPF_MUL, BPF_REG_1, elem_bytes(a)));
	else
		emit(g, I_ALU64_IMM(BPF_MUL, BPF_REG_0, elem_bytes(b)));
	emit(g, I_ALU64_REG(op, BPF_REG_0, BPF_REG_1));
}

/* Keep the low BYTES of r0, sign-extended when SGN. */
static void narrow(struct cg *g, int bytes, bool sgn)
{
	if (bytes >= 8)
		return;
	if (sgn) {
		emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_0, 64 - 8 * bytes));
		emit(g, I_ALU64_IMM(BPF_ARSH, BPF_REG_0, 64 - 8 * bytes));
	} else if (bytes == 4) {
		emit(g, I_MOV32_REG(BPF_REG_0, BPF_REG_0));
	} else {
		emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_0, (1 << (8 * bytes)) - 1));
	}
}

/* r0 = the user-memory address of N (*p, p->f, s.f, a[i]) */
static void gen_addr(struct cg *g, struct node *n)
{
	int save = g->sp, t;

	switch (n->kind) {
	case N_DEREF:
		gen_int(g, n->a);
		break;
	case N_FIELD:
		/* a pointer, or a struct, which is its address */
		gen_int(g, n->a);
		if (n->ival)
			emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_0, (int32_t)n->ival));
		break;
	case N_INDEX:
		t = stack_alloc(g, 8);
		gen_int(g, n->a);
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, t));
		gen_int(g, n->b);
		emit(g, I_ALU64_IMM(BPF_MUL, BPF_REG_0,
				    n->a->type->kind == T_PTR ? elem_bytes(n->a->type) :
				    n->a->type->elem->bytes));
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, t));
		emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_1));
		break;
	default:
		diag_error(n->loc, "internal: no address for this expression");
		g->failed = true;
	}
	g->sp = save;
}

/* r0 = the integer or pointer of type T at user address r0 (0 on a fault) */
static void read_int(struct cg *g, const struct type *t)
{
	int save = g->sp, tmp = stack_alloc(g, 8);
	int bytes = t->kind == T_PTR ? 8 : t->bytes;

	emit(g, I_ST(BPF_DW, BPF_REG_10, tmp, 0));
	emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_0));
	stack_ptr(g, BPF_REG_1, tmp);
	emit(g, I_MOV64_IMM(BPF_REG_2, bytes));
	/* device memory: checked against the agent's allocations */
	emit(g, I_CALL(g->device ? GT_DH_READ : H_PROBE_READ_USER));
	emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, tmp));
	if (t->kind == T_INT)
		narrow(g, bytes, t->is_signed);
	g->sp = save;
}

static bool is_mem(const struct node *n)
{
	return n->kind == N_DEREF || n->kind == N_FIELD || n->kind == N_INDEX;
}

/* r2 = min(r0 + PLUS, MAX), as the verifier wants a bounded size */
static void clamp_len(struct cg *g, int plus, int max)
{
	emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_0, plus));
	emit(g, I_JMP_IMM(BPF_JLE, BPF_REG_0, max, 1));
	emit(g, I_MOV64_IMM(BPF_REG_0, max));
	emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_0));
}

/* str(p[, n]) and buf(p, n) into [r10+dst] */
static void gen_read_call(struct cg *g, struct node *n, int dst)
{
	struct node *p = n->args, *len = p->next;
	bool is_str = n->str[0] == 's';
	int save = g->sp, t = stack_alloc(g, 8), data = is_str ? dst : dst + 8;
	int64_t k;

	if (is_str && p->type->kind == T_STR) {
		/* str($1, n): the string, cut after n characters */
		gen_to(g, p, dst);
		if (len && len->kind == N_INT && len->ival < GT_STRLEN)
			for (k = len->ival; k < GT_STRLEN; k++)
				emit(g, I_ST(BPF_B, BPF_REG_10, dst + k, 0));
		g->sp = save;
		return;
	}
	zero_mem(g, dst, n->type->size);
	/* str reads n characters and the NUL, bpftrace 0.17's +1 */
	if (len)
		gen_int(g, len);
	else
		emit(g, I_MOV64_IMM(BPF_REG_0, GT_STRLEN - 1));
	clamp_len(g, is_str ? 1 : 0, is_str ? GT_STRLEN : GT_BUFLEN);
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_2, t));
	gen_int(g, p);
	emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_0));
	emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, t));
	stack_ptr(g, BPF_REG_1, data);
	emit(g, I_CALL(is_str ? H_PROBE_READ_USER_STR : H_PROBE_READ_USER));
	if (!is_str) {
		/* the length, then the bytes: 0 when the read failed */
		int ok = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));

		emit(g, I_ST(BPF_DW, BPF_REG_10, t, 0));
		patch(g, ok);
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, t));
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, dst));
	}
	g->sp = save;
}

/* strncmp(a, b, n): r0 = 0 when the first n characters are equal */
static void gen_strncmp(struct cg *g, struct node *n)
{
	int save = g->sp, a = stack_alloc(g, GT_STRLEN), b = stack_alloc(g, GT_STRLEN);
	uint64_t len = n->args->next->next->ival;
	int differ[GT_STRLEN], same[GT_STRLEN], nd = 0, ns = 0, j;

	if (len > GT_STRLEN)
		len = GT_STRLEN;
	gen_to(g, n->args, a);
	gen_to(g, n->args->next, b);
	for (uint64_t i = 0; i < len; i++) {
		emit(g, I_LDX(BPF_B, BPF_REG_1, BPF_REG_10, a + i));
		emit(g, I_LDX(BPF_B, BPF_REG_2, BPF_REG_10, b + i));
		differ[nd++] = jmp_fwd(g, I_JMP_REG(BPF_JNE, BPF_REG_1, BPF_REG_2, 0));
		same[ns++] = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_1, 0, 0));
	}
	for (int i = 0; i < ns; i++)
		patch(g, same[i]);
	emit(g, I_MOV64_IMM(BPF_REG_0, 0));
	if (!nd) {	/* strncmp(a, b, 0): nothing to differ */
		g->sp = save;
		return;
	}
	j = jmp_fwd(g, I_JA(0));
	for (int i = 0; i < nd; i++)
		patch(g, differ[i]);
	emit(g, I_MOV64_IMM(BPF_REG_0, 1));
	patch(g, j);
	g->sp = save;
}

/*
 * N: an element of a tuple variable ($kv.0, $kv.0.1): its offset from
 * g->vreg into *OFF, and true; else false.
 */
static bool var_elem(const struct node *n, int *off)
{
	int o = 0;

	for (; n->kind == N_TUPLE_IDX; n = n->a)
		o += n->a->type->offsets[n->ival];
	if (n->kind != N_VAR)
		return false;
	*off = ((struct var_sym *)n->sym)->slot + o;
	return true;
}

/*
 * len(@m): bpf_for_each_map_elem with a callback that goes on (returns
 * 0) counts the elements; the callback follows the program, its address
 * is patched in then (gen_prog).
 */
static void *grow(void *p, int n, int *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : 4;
	p = realloc(p, *cap * size);
	if (!p) {
		fputs("gputrace: out of memory\n", stderr);
		abort();
	}
	return p;
}

/* A new, empty callback: its index. */
static int sub_new(struct cg *g)
{
	g->subs = grow(g->subs, g->nsubs, &g->capsubs, sizeof(*g->subs));
	g->subs[g->nsubs] = (struct cg_sub){ 0 };
	return g->nsubs++;
}

/* REG = the address of callback SUB (patched when the code is laid out) */
static void emit_sub_ref(struct cg *g, int reg, int sub)
{
	g->refs = grow(g->refs, g->nrefs, &g->caprefs, sizeof(*g->refs));
	g->refs[g->nrefs++] = (struct cg_ref){ g->cur, g->n, sub };
	emit(g, (struct bpf_insn){ .code = BPF_LD | BPF_DW | BPF_IMM,
				   .dst_reg = reg, .src_reg = BPF_PSEUDO_FUNC });
	emit(g, (struct bpf_insn){ 0 });
}

static void gen_map_len(struct cg *g, struct node *n)
{
	if (g->len_sub < 0) {
		/* count this element, go on */
		static const struct bpf_insn cb[] = {
			I_MOV64_IMM(BPF_REG_0, 0), I_EXIT(),
		};

		g->len_sub = sub_new(g);
		g->subs[g->len_sub].code = malloc(sizeof(cb));
		if (!g->subs[g->len_sub].code) {
			fputs("gputrace: out of memory\n", stderr);
			abort();
		}
		memcpy(g->subs[g->len_sub].code, cb, sizeof(cb));
		g->subs[g->len_sub].n = 2;
	}
	map_arg(g, n->args->sym);
	emit_sub_ref(g, BPF_REG_2, g->len_sub);
	emit(g, I_MOV64_IMM(BPF_REG_3, 0));
	emit(g, I_MOV64_IMM(BPF_REG_4, 0));
	emit(g, I_CALL(H_FOR_EACH_MAP_ELEM));
}

/* has_key(@m, key): whether the lookup finds the element */
static void gen_has_key(struct cg *g, struct node *n)
{
	struct map_sym *m = n->a->sym;
	int save = g->sp, key = gen_key(g, n->a, m);

	call_lookup(g, m, key);
	emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 1));
	emit(g, I_MOV64_IMM(BPF_REG_0, 1));
	g->sp = save;
}

static void gen_binop(struct cg *g, struct node *n)
{
	static const int alu[] = {
		[B_ADD] = BPF_ADD, [B_SUB] = BPF_SUB, [B_MUL] = BPF_MUL,
		[B_DIV] = BPF_DIV, [B_MOD] = BPF_MOD, [B_AND] = BPF_AND,
		[B_OR] = BPF_OR, [B_XOR] = BPF_XOR, [B_SHL] = BPF_LSH,
		[B_SHR] = BPF_RSH,
	};
	bool sgn = n->a->type->is_signed && n->b->type->is_signed;
	int save = g->sp, t, j;

	if (n->op == B_LAND || n->op == B_LOR) {
		int j1, j2;

		gen_int(g, n->a);
		j1 = jmp_fwd(g, I_JMP_IMM(n->op == B_LAND ? BPF_JEQ : BPF_JNE,
					  BPF_REG_0, 0, 0));
		gen_int(g, n->b);
		j2 = jmp_fwd(g, I_JMP_IMM(n->op == B_LAND ? BPF_JEQ : BPF_JNE,
					  BPF_REG_0, 0, 0));
		emit(g, I_MOV64_IMM(BPF_REG_0, n->op == B_LAND));
		j = jmp_fwd(g, I_JA(0));
		patch(g, j1);
		patch(g, j2);
		emit(g, I_MOV64_IMM(BPF_REG_0, n->op != B_LAND));
		patch(g, j);
		return;
	}
	if (n->a->type->kind == T_STR) {
		int a = stack_alloc(g, GT_STRLEN), b = stack_alloc(g, GT_STRLEN);

		gen_to(g, n->a, a);
		gen_to(g, n->b, b);
		gen_streq(g, a, b);
		if (n->op == B_NE)
			emit(g, I_ALU64_IMM(BPF_XOR, BPF_REG_0, 1));
		g->sp = save;
		return;
	}
	t = stack_alloc(g, 8);
	gen_int(g, n->a);
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, t));
	gen_int(g, n->b);
	emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_0));
	emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, t));
	g->sp = save;
	if (n->op < B_EQ && (n->a->type->kind == T_PTR || n->b->type->kind == T_PTR)) {
		gen_ptr_arith(g, n);
		return;
	}
	if (n->op < B_EQ) {
		int op = alu[n->op];

		/* bpftrace 0.17 shifts right logically, signed or not */
		emit(g, I_ALU64_REG(op, BPF_REG_0, BPF_REG_1));
		return;
	}
	int jop;

	switch (n->op) {
	case B_EQ: jop = BPF_JEQ; break;
	case B_NE: jop = BPF_JNE; break;
	case B_LT: jop = sgn ? BPF_JSLT : BPF_JLT; break;
	case B_LE: jop = sgn ? BPF_JSLE : BPF_JLE; break;
	case B_GT: jop = sgn ? BPF_JSGT : BPF_JGT; break;
	default:   jop = sgn ? BPF_JSGE : BPF_JGE; break;
	}
	emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_0));
	emit(g, I_MOV64_IMM(BPF_REG_0, 1));
	emit(g, I_JMP_REG(jop, BPF_REG_2, BPF_REG_1, 1));
	emit(g, I_MOV64_IMM(BPF_REG_0, 0));
}

/* Write integer r0 to lvalue LV (a variable or a map element). */
static void store_int(struct cg *g, struct node *lv)
{
	if (lv->kind == N_VAR) {
		struct var_sym *v = lv->sym;

		emit(g, I_STX(BPF_DW, g->vreg, BPF_REG_0, v->slot));
		return;
	}
	int save = g->sp, val = stack_alloc(g, 8), key;

	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, val));
	key = gen_key(g, lv, lv->sym);
	call_update(g, lv->sym, key, val);
	check_helper(g, "map_update_elem", lv->loc, false);
	emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, val));
	g->sp = save;
}

static struct node *synth_binop(struct node *lv, int op, struct node *rhs)
{
	struct node *b = ast_node(N_BINOP, lv->loc);

	b->op = op;
	b->a = lv;
	b->b = rhs;
	b->type = type_int(lv->type->is_signed && rhs->type->is_signed);
	return b;
}

static void gen_incdec(struct cg *g, struct node *n)
{
	struct node one = { .kind = N_INT, .ival = 1, .type = type_int(true) };
	int save = g->sp, old = stack_alloc(g, 8);

	gen_int(g, n->a);
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, old));
	gen_int(g, synth_binop(n->a, n->op, &one));
	store_int(g, n->a);
	if (n->post)
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, old));
	g->sp = save;
}

static void gen_int(struct cg *g, struct node *n)
{
	int save = g->sp, t, j, j2;

	switch (n->kind) {
	case N_INT:
		emit_ld64(g, BPF_REG_0, n->ival);
		break;
	case N_POSARG:
		emit_ld64(g, BPF_REG_0, strtoull(posarg(g, n), NULL, 0));
		break;
	case N_ARGC:
		emit_ld64(g, BPF_REG_0, g->u->argc);
		break;
	case N_BUILTIN:
		gen_builtin_int(g, n);
		break;
	case N_VAR:
		emit(g, I_LDX(BPF_DW, BPF_REG_0, g->vreg,
			      ((struct var_sym *)n->sym)->slot));
		break;
	case N_MAP:
		gen_map_read(g, n, 0);
		break;
	case N_BINOP:
		gen_binop(g, n);
		break;
	case N_UNOP:
		gen_int(g, n->a);
		if (n->op == U_NEG) {
			emit(g, I_ALU64_IMM(BPF_NEG, BPF_REG_0, 0));
		} else if (n->op == U_BNOT) {
			emit(g, I_ALU64_IMM(BPF_XOR, BPF_REG_0, -1));
		} else {
			emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_0));
			emit(g, I_MOV64_IMM(BPF_REG_0, 1));
			emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_1, 0, 1));
			emit(g, I_MOV64_IMM(BPF_REG_0, 0));
		}
		break;
	case N_TERNARY:
		gen_int(g, n->a);
		j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
		gen_int(g, n->b);
		j2 = jmp_fwd(g, I_JA(0));
		patch(g, j);
		gen_int(g, n->c);
		patch(g, j2);
		break;
	case N_TUPLE_IDX:
		if (var_elem(n, &t)) {		/* $kv.0: in place */
			emit(g, I_LDX(BPF_DW, BPF_REG_0, g->vreg, t));
			break;
		}
		t = stack_alloc(g, n->a->type->size);
		gen_to(g, n->a, t);
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10,
			      t + n->a->type->offsets[n->ival]));
		break;
	case N_INCDEC:
		gen_incdec(g, n);
		break;
	case N_CAST:
		gen_int(g, n->a);
		if (n->type->kind == T_INT)
			narrow(g, n->type->bytes, n->type->is_signed);
		break;
	case N_SIZEOF:
		emit_ld64(g, BPF_REG_0, n->slen);
		break;
	case N_DEREF:
	case N_FIELD:
	case N_INDEX:
		gen_addr(g, n);
		if (n->type->kind != T_STRUCT && n->type->kind != T_ARRAY)
			read_int(g, n->type);
		break;
	case N_CALL:
		if (!strcmp(n->str, "strncmp")) {
			gen_strncmp(g, n);
			break;
		}
		if (n->type->kind == T_STACK) {
			gen_stack(g, n->type);
			break;
		}
		if (n->type->kind == T_SYM) {	/* ksym: the address */
			gen_int(g, n->args);
			break;
		}
		if (!strcmp(n->str, "uaddr")) {	/* resolved by the checks */
			emit_ld64(g, BPF_REG_0, n->ival);
			break;
		}
		if (!strcmp(n->str, "len")) {
			gen_map_len(g, n);
			break;
		}
		if (!strcmp(n->str, "has_key")) {
			gen_has_key(g, n);
			break;
		}
		/* fall through */
	default:
		diag_error(n->loc, "internal: no integer code for this expression");
		g->failed = true;
	}
	g->sp = save;
}

/* Evaluate N into [r10+dst] (integers as 8 bytes). */
static void gen_to(struct cg *g, struct node *n, int dst)
{
	int save = g->sp, t, j, j2;

	if (is_scalar(n->type) || n->type->kind == T_PTR ||
	    ((n->type->kind == T_USER || n->type->kind == T_PROBE) &&
	     n->kind == N_BUILTIN)) {
		gen_int(g, n);
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, dst));
		return;
	}
	if (is_mem(n) && n->type->kind == T_STR) {
		/* char x[N]: N bytes (63 at most: a string ends in NUL) */
		zero_mem(g, dst, GT_STRLEN);
		gen_addr(g, n);
		emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_0));
		stack_ptr(g, BPF_REG_1, dst);
		emit(g, I_MOV64_IMM(BPF_REG_2, n->type->bytes < GT_STRLEN ?
				    n->type->bytes : GT_STRLEN - 1));
		emit(g, I_CALL(H_PROBE_READ_USER));
		return;
	}
	switch (n->kind) {
	case N_CALL:
		if (!strcmp(n->str, "strftime")) {
			/* the format's id and the time: formatted by the tracer */
			emit(g, I_ST(BPF_DW, BPF_REG_10, dst, (int32_t)n->ival));
			gen_int(g, n->args->next);
			emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, dst + 8));
		} else if (!strcmp(n->str, "str") || !strcmp(n->str, "buf")) {
			gen_read_call(g, n, dst);
		} else if (!strcmp(n->str, "kname")) {
			gen_to(g, n->args, dst);	/* the key; printed short */
		} else if (!strcmp(n->str, "usym")) {
			/* the address, then the pid */
			gen_int(g, n->args);
			emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, dst));
			emit(g, I_CALL(H_PID_TGID));
			emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
			emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, dst + 8));
		} else {
			diag_error(n->loc, "internal: no code for %s()", n->str);
			g->failed = true;
		}
		break;
	case N_STR:
		store_bytes(g, dst, n->str, n->slen, GT_STRLEN);
		break;
	case N_POSARG: {
		const char *s = posarg(g, n);

		store_bytes(g, dst, s, strnlen(s, GT_STRLEN - 1), GT_STRLEN);
		break;
	}
	case N_BUILTIN: {
		struct builtin_src src;

		if (!provider_src(g, n->str, &src) && src.kind == BSRC_STR) {
			store_bytes(g, dst, src.str, strnlen(src.str, GT_STRLEN - 1),
				    GT_STRLEN);
		} else if (!provider_src(g, n->str, &src) && src.kind == BSRC_MAP_STR) {
			int save2 = g->sp, j1, j2;

			if (g->flt_slot && g->cur < 0 && src.map == g->flt_map &&
			    src.off == g->flt_off) {
				/* the entry the filter looked up already */
				emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10,
					      g->flt_slot));
				j1 = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
			} else {
				j1 = lookup_by_ctx(g, &src, stack_alloc(g, 8));
			}
			copy_mem(g, BPF_REG_0, 0, dst, GT_STRLEN);
			j2 = jmp_fwd(g, I_JA(0));
			patch(g, j1);
			store_bytes(g, dst, src.str, strnlen(src.str, GT_STRLEN - 1),
				    GT_STRLEN);
			patch(g, j2);
			g->sp = save2;
		} else if (!provider_src(g, n->str, &src) && src.kind == BSRC_PTR_KEY) {
			/* the tag, then the hash from user memory */
			zero_mem(g, dst, GT_STRLEN);
			emit(g, I_ST(BPF_B, BPF_REG_10, dst, KNAME_TAG));
			stack_ptr(g, BPF_REG_1, dst + KNAME_HASH_OFF);
			emit(g, I_MOV64_IMM(BPF_REG_2, 8));
			emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_6, src.off));
			emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, src.ptr_off));
			emit(g, I_CALL(H_PROBE_READ_USER));
		} else if (!provider_src(g, n->str, &src) &&
			   (src.kind == BSRC_CTX_CHARS || src.kind == BSRC_CTX_DATALOC)) {
			/* kernel memory in the record: the read stops at NUL */
			zero_mem(g, dst, GT_STRLEN);
			stack_ptr(g, BPF_REG_1, dst);
			emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_6));
			if (src.kind == BSRC_CTX_DATALOC) {
				emit(g, I_LDX(BPF_W, BPF_REG_2, BPF_REG_6, src.off));
				emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_2, 0xffff));
				emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_2));
				emit(g, I_MOV64_IMM(BPF_REG_2, GT_STRLEN));
			} else {
				emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, src.off));
				emit(g, I_MOV64_IMM(BPF_REG_2, src.size < GT_STRLEN ?
						    src.size : GT_STRLEN));
			}
			emit(g, I_CALL(H_PROBE_READ_KERNEL_STR));
		} else if (!provider_src(g, n->str, &src) && src.kind == BSRC_CTX_STR) {
			zero_mem(g, dst, GT_STRLEN);
			stack_ptr(g, BPF_REG_1, dst);
			emit(g, I_MOV64_IMM(BPF_REG_2, GT_STRLEN));
			emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_6, src.off));
			emit(g, I_CALL(H_PROBE_READ_USER_STR));
		} else if (g->device && !strcmp(n->str, "kernel")) {
			zero_mem(g, dst, GT_STRLEN);
			stack_ptr(g, BPF_REG_1, dst);
			emit(g, I_MOV64_IMM(BPF_REG_2, GT_STRLEN));
			emit(g, I_CALL(GT_DH_KERNEL_NAME));
		} else if (!strcmp(n->str, "comm")) {
			zero_mem(g, dst, GT_STRLEN);
			stack_ptr(g, BPF_REG_1, dst);
			emit(g, I_MOV64_IMM(BPF_REG_2, 16));
			emit(g, I_CALL(H_COMM));
		} else {
			diag_error(n->loc, "builtin '%s' is not supported here yet", n->str);
			g->failed = true;
		}
		break;
	}
	case N_VAR:
		copy_mem(g, g->vreg, ((struct var_sym *)n->sym)->slot, dst,
			 n->type->size);
		break;
	case N_MAP:
		gen_map_read(g, n, dst);
		break;
	case N_TERNARY:
		gen_int(g, n->a);
		j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
		gen_to(g, n->b, dst);
		j2 = jmp_fwd(g, I_JA(0));
		patch(g, j);
		gen_to(g, n->c, dst);
		patch(g, j2);
		break;
	case N_TUPLE: {
		int i = 0;

		for (struct node *e = n->args; e; e = e->next, i++)
			gen_to(g, e, dst + n->type->offsets[i]);
		break;
	}
	case N_TUPLE_IDX:
		if (var_elem(n, &t)) {
			copy_mem(g, g->vreg, t, dst, n->type->size);
			break;
		}
		t = stack_alloc(g, n->a->type->size);
		gen_to(g, n->a, t);
		copy_mem(g, BPF_REG_10, t + n->a->type->offsets[n->ival], dst,
			 n->type->size);
		break;
	default:
		diag_error(n->loc, "internal: no code for this expression");
		g->failed = true;
	}
	g->sp = save;
}

/* Bump the per-CPU count of lost events; SCRATCH: 8 bytes of stack */
static void count_lost(struct cg *g, int scratch)
{
	emit(g, I_ST(BPF_W, BPF_REG_10, scratch, 0));
	emit_map_ref(g, BPF_REG_1, cg_lost_map(g->u));
	stack_ptr(g, BPF_REG_2, scratch);
	emit(g, I_CALL(H_MAP_LOOKUP));
	emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 3));
	emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
	emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
	emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
}

/* Send the SIZE-byte event at [r10+buf] to the tracer; count drops. */
static void send_event(struct cg *g, int buf, int size)
{
	int j;

	emit_map_ref(g, BPF_REG_1, cg_events_map(g->u));
	stack_ptr(g, BPF_REG_2, buf);
	emit(g, I_MOV64_IMM(BPF_REG_3, size));
	emit(g, I_MOV64_IMM(BPF_REG_4, 0));
	emit(g, I_CALL(H_RINGBUF_OUTPUT));
	j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	count_lost(g, buf);	/* dropped: its buffer is scratch now */
	patch(g, j);
}

/*
 * join(argv): up to GT_JOIN_ARGS strings of a NULL-ended array of char *,
 * read straight into a ring buffer record (too big for the stack):
 * { event id, count, GT_JOIN_ARGS x GT_STRLEN bytes }.  r7 holds the
 * record; it survives the helper calls.
 */
static void gen_join(struct cg *g, struct node *n)
{
	int save = g->sp, arr = stack_alloc(g, 8), ptr = stack_alloc(g, 8);
	int size = 16 + GT_JOIN_ARGS * GT_STRLEN, ends[GT_JOIN_ARGS], j;

	gen_int(g, n->args);
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, arr));
	emit_map_ref(g, BPF_REG_1, cg_events_map(g->u));
	emit(g, I_MOV64_IMM(BPF_REG_2, size));
	emit(g, I_MOV64_IMM(BPF_REG_3, 0));
	emit(g, I_CALL(H_RINGBUF_RESERVE));
	j = jmp_fwd(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
	count_lost(g, ptr);
	int done = jmp_fwd(g, I_JA(0));

	patch(g, j);
	emit(g, I_MOV64_REG(BPF_REG_7, BPF_REG_0));
	emit(g, I_ST(BPF_DW, BPF_REG_7, 0, (int32_t)n->ival));
	emit(g, I_ST(BPF_DW, BPF_REG_7, 8, 0));
	for (int i = 0; i < GT_JOIN_ARGS; i++) {
		emit(g, I_ST(BPF_DW, BPF_REG_10, ptr, 0));
		stack_ptr(g, BPF_REG_1, ptr);
		emit(g, I_MOV64_IMM(BPF_REG_2, 8));
		emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_10, arr));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, 8 * i));
		emit(g, I_CALL(H_PROBE_READ_USER));
		emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_10, ptr));
		ends[i] = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_3, 0, 0));
		emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_7));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 16 + i * GT_STRLEN));
		emit(g, I_MOV64_IMM(BPF_REG_2, GT_STRLEN));
		emit(g, I_CALL(H_PROBE_READ_USER_STR));
		emit(g, I_ST(BPF_DW, BPF_REG_7, 8, i + 1));
	}
	for (int i = 0; i < GT_JOIN_ARGS; i++)
		patch(g, ends[i]);
	emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_7));
	emit(g, I_MOV64_IMM(BPF_REG_2, 0));
	emit(g, I_CALL(H_RINGBUF_SUBMIT));
	patch(g, done);
	g->sp = save;
}

static void gen_call(struct cg *g, struct node *n)
{
	const char *f = n->str;
	int save = g->sp;

	if (!strcmp(f, "delete")) {
		struct map_sym *m = n->args->sym;
		int key = gen_key(g, n->args, m);

		map_arg(g, m);
		key_ptr(g, BPF_REG_2, key);
		emit(g, I_CALL(g->device ? GT_DH_MAP_DELETE : H_MAP_DELETE));
		check_helper(g, "map_delete_elem", n->loc, false);
		g->sp = save;
		return;
	}
	if (!strcmp(f, "signal")) {
		gen_int(g, n->args);
		emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_0));
		emit(g, I_CALL(H_SEND_SIGNAL));
		return;
	}
	if (!strcmp(f, "join")) {
		gen_join(g, n);
		return;
	}
	/* every other call is an event for the tracer */
	/* a copy: -k's checks in the arguments add events (realloc) */
	const struct event_desc evd = g->u->events[n->ival], *ev = &evd;
	struct node *a = n->args;
	int psize = ev->args ? ev->args->size : 0, buf;

	if (ev->kind == EV_EXIT)
		psize = 8;
	buf = stack_alloc(g, 8 + psize);
	emit(g, I_ST(BPF_DW, BPF_REG_10, buf, (int32_t)n->ival));
	if (ev->kind == EV_PRINTF || ev->kind == EV_CAT || ev->kind == EV_SYSTEM)
		a = a->next;
	if (ev->kind == EV_EXIT) {
		if (a)
			gen_to(g, a, buf + 8);
		else
			emit(g, I_ST(BPF_DW, BPF_REG_10, buf + 8, 0));
	} else if (ev->kind == EV_PRINTF || ev->kind == EV_PRINT_VAL ||
		   ev->kind == EV_CAT || ev->kind == EV_SYSTEM) {
		for (int i = 0; a; a = a->next, i++)
			gen_to(g, a, buf + 8 + ev->args->offsets[i]);
	}
	if (g->device) {
		/* the format id travels beside the arguments */
		emit(g, I_MOV64_IMM(BPF_REG_1, (int32_t)n->ival));
		stack_ptr(g, BPF_REG_2, buf + 8);
		emit(g, I_MOV64_IMM(BPF_REG_3, psize));
		emit(g, I_CALL(GT_DH_PRINTF));
	} else {
		send_event(g, buf, 8 + psize);
	}
	g->sp = save;
}

/* Bucket index of r1 as bpftrace 0.17's log2 computes it, into r0. */
static void gen_log2(struct cg *g)
{
	emit(g, I_MOV64_IMM(BPF_REG_0, 0));
	emit(g, I_JMP_IMM(BPF_JSLT, BPF_REG_1, 0, 18));
	emit(g, I_MOV64_IMM(BPF_REG_0, 1));
	emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_1, 0, 16));
	emit(g, I_MOV64_IMM(BPF_REG_0, 2));
	for (int i = 4; i >= 0; i--) {
		int k = 1 << i;

		/* three instructions per step */
		emit(g, I_JMP_IMM(BPF_JLT, BPF_REG_1, 1 << k, 2));
		emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_1, k));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_0, k));
	}
}

static void gen_lhist_index(struct cg *g, const struct map_sym *m)
{
	int64_t nb = (m->lmax - m->lmin) / m->lstep + 2;

	/* r1 = value -> r0 = bucket */
	emit(g, I_MOV64_IMM(BPF_REG_0, 0));
	emit_ld64(g, BPF_REG_2, m->lmin);
	emit(g, I_JMP_REG(BPF_JSLT, BPF_REG_1, BPF_REG_2, 0));
	int jlow = g->n - 1;

	emit_ld64(g, BPF_REG_0, nb - 1);
	emit_ld64(g, BPF_REG_2, m->lmax);
	emit(g, I_JMP_REG(BPF_JSGE, BPF_REG_1, BPF_REG_2, 0));
	int jhigh = g->n - 1;

	emit(g, I_MOV64_REG(BPF_REG_0, BPF_REG_1));
	emit_ld64(g, BPF_REG_2, m->lmin);
	emit(g, I_ALU64_REG(BPF_SUB, BPF_REG_0, BPF_REG_2));
	emit_ld64(g, BPF_REG_2, m->lstep);
	emit(g, I_ALU64_REG(BPF_DIV, BPF_REG_0, BPF_REG_2));
	emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_0, 1));
	patch(g, jlow);
	patch(g, jhigh);
}

/*
 * hist()/lhist(): the value X also adds to the entry of KEY whose bucket
 * index is the bucket count, one past the last bucket: the sum of the
 * values (Prometheus' _sum, docs/fleet.md).  The device runtime keeps it
 * as the word after the buckets, where the agent's host path puts it too
 * (gpucode/devrt.h); maps_read() takes it out of the buckets.  Only
 * with cg_opts.hist_sum (--metrics, the one reader): a second map
 * operation per update otherwise paid for nothing.
 */
static void gen_hist_sum(struct cg *g, struct map_sym *m,
			 const struct map_layout *ml, int key, int x)
{
	int64_t nb = m->val->agg == AGG_HIST ? DEVRT_HIST_BUCKETS :
		     (m->lmax - m->lmin) / m->lstep + 2;
	int val = stack_alloc(g, 8), j, jdone;

	emit(g, I_ST(BPF_DW, BPF_REG_10, key + ml->key_size - 8, (int32_t)nb));
	call_lookup(g, m, key);
	j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
	emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, x));
	emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, BPF_REG_2));
	emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
	jdone = jmp_fwd(g, I_JA(0));
	patch(g, j);
	emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, x));
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, val));
	call_update(g, m, key, val);
	patch(g, jdone);
}

/* @m[k] = agg(x) on a per-CPU hash map. */
static void gen_agg(struct cg *g, struct node *assign)
{
	struct node *lv = assign->a, *call = assign->b;
	struct map_sym *m = lv->sym;
	const struct map_layout *ml = layout(g, m);
	enum agg_kind agg = m->val->agg;
	bool sgn = m->val->is_signed;
	int save = g->sp, x = stack_alloc(g, 8), key, val, j, jdone;

	if (agg == AGG_COUNT)
		emit(g, I_MOV64_IMM(BPF_REG_0, 1));
	else
		gen_int(g, call->args);
	emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, x));
	/* per kernel: the launch says where its slot is (kmaps.c) */
	key = g->device && m->per_kernel ? NO_KEY : gen_key(g, lv, m);
	if (g->device) {
		map_arg(g, m);
		key_ptr(g, BPF_REG_2, key);
		emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_10, x));
		emit(g, I_CALL(GT_DH_AGG_COUNT + agg));
		g->sp = save;
		return;
	}
	if (ml->has_bucket) {
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, x));
		if (agg == AGG_HIST)
			gen_log2(g);
		else
			gen_lhist_index(g, m);
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, key + ml->key_size - 8));
	}
	call_lookup(g, m, key);
	j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	switch (agg) {
	case AGG_COUNT:
	case AGG_HIST:
	case AGG_LHIST:
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
		emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
		break;
	case AGG_SUM:
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
		emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, x));
		emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, BPF_REG_2));
		emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
		break;
	case AGG_MIN:
	case AGG_MAX: {
		int keep = agg == AGG_MIN ? (sgn ? BPF_JSLE : BPF_JLE) :
					    (sgn ? BPF_JSGE : BPF_JGE);

		/* value = { v, set }: keep v when set and v is still better */
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
		emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, x));
		emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_1, 0, 2));
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
		emit(g, I_JMP_REG(keep, BPF_REG_1, BPF_REG_2, 2));
		emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_2, 0));
		emit(g, I_ST(BPF_DW, BPF_REG_0, 8, 1));
		break;
	}
	case AGG_AVG:
	case AGG_STATS:
		/* value = { count, total } */
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
		emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
		emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, x));
		emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, BPF_REG_2));
		emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 8));
		break;
	case AGG_SMLOAD:
		break;
	}
	jdone = jmp_fwd(g, I_JA(0));
	patch(g, j);
	/* first update on this CPU: insert the initial value */
	val = stack_alloc(g, ml->value_size);
	emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, x));
	switch (agg) {
	case AGG_MIN:
	case AGG_MAX:
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, val));
		emit(g, I_ST(BPF_DW, BPF_REG_10, val + 8, 1));
		break;
	case AGG_AVG:
	case AGG_STATS:
		emit(g, I_ST(BPF_DW, BPF_REG_10, val, 1));
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, val + 8));
		break;
	case AGG_SUM:
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, val));
		break;
	default:
		emit(g, I_ST(BPF_DW, BPF_REG_10, val, 1));
	}
	call_update(g, m, key, val);
	patch(g, jdone);
	if (ml->has_bucket && g->opts->hist_sum)
		gen_hist_sum(g, m, ml, key, x);
	g->sp = save;
}

static void gen_assign(struct cg *g, struct node *n)
{
	struct node *lv = n->a, *rhs = n->b;
	int save = g->sp;

	if (rhs->kind == N_CALL && rhs->type && rhs->type->kind == T_AGG) {
		gen_agg(g, n);
		return;
	}
	if (n->op >= 0)
		rhs = synth_binop(lv, n->op, rhs);
	if (lv->kind == N_VAR && g->vreg != BPF_REG_10) {
		/* a for body: built here, then into the clause's frame */
		int size = lv->type->size, tmp = stack_alloc(g, size);

		gen_to(g, rhs, tmp);
		for (int i = 0; i < size; i += 8) {
			emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, tmp + i));
			emit(g, I_STX(BPF_DW, g->vreg, BPF_REG_1,
				      ((struct var_sym *)lv->sym)->slot + i));
		}
		g->sp = save;
		return;
	}
	if (lv->kind == N_VAR) {
		gen_to(g, rhs, ((struct var_sym *)lv->sym)->slot);
		return;
	}
	struct map_sym *m = lv->sym;
	int val = stack_alloc(g, layout(g, m)->value_size), key;

	gen_to(g, rhs, val);
	key = gen_key(g, lv, m);
	call_update(g, m, key, val);
	check_helper(g, "map_update_elem", lv->loc, false);
	g->sp = save;
}

static bool is_exit(const struct node *n)
{
	return n->kind == N_CALL && !strcmp(n->str, "exit");
}

/*
 * Whether statement S never falls through (return, exit(), an if whose
 * branches both end): what follows it is left out, as the kernel
 * rejects unreachable code, and exit() ends the clause as in bpftrace.
 */
static bool stmt_ends(const struct node *s)
{
	const struct node *t;

	switch (s->kind) {
	case N_RETURN:
	case N_BREAK:
	case N_CONTINUE:
		return true;
	case N_EXPR_STMT:
		return is_exit(s->a);
	case N_IF:
		if (!s->c)
			return false;
		for (t = s->b->args; t && !stmt_ends(t); t = t->next)
			;
		if (!t)
			return false;
		if (s->c->kind == N_IF)
			return stmt_ends(s->c);
		for (t = s->c->args; t && !stmt_ends(t); t = t->next)
			;
		return t != NULL;
	case N_UNROLL:
		for (t = s->b->args; t && !stmt_ends(t); t = t->next)
			;
		return t != NULL;
	default:
		return false;
	}
}

/* An expression statement: a call, a ternary of calls, or an integer. */
static void gen_void(struct cg *g, struct node *n)
{
	int j, j2;

	if (n->kind == N_CALL) {
		gen_call(g, n);
		if (is_exit(n))
			jmp_to_end(g, I_JA(0));
	} else if (n->kind == N_TERNARY && n->type && n->type->kind == T_VOID) {
		gen_int(g, n->a);
		j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
		gen_void(g, n->b);
		j2 = jmp_fwd(g, I_JA(0));
		patch(g, j);
		gen_void(g, n->c);
		patch(g, j2);
	} else {
		gen_int(g, n);
	}
}

/* Instructions in one clause: the kernel's limit for root, the verifier's. */
#define HOST_MAX_INSNS	1000000
static size_t max_insns(const struct cg *g)
{
	return g->device ? VF_MAX_INSNS : HOST_MAX_INSNS;
}

/* A jump back to instruction TOP (a loop's start) */
static void jmp_back(struct cg *g, size_t top)
{
	long off = (long)top - (long)g->n - 1;

	if (off < INT16_MIN) {
		if (!g->too_far)
			diag_error(g->stmt_loc, "code too long: a loop of %ld instructions, more than the %d eBPF jumps over",
				   -off, -INT16_MIN);
		g->too_far = true;
		g->failed = true;
		off = -1;
	}
	emit(g, I_JA((int16_t)off));
}

static void add_jump(int **list, int *n, int at)
{
	int *b = realloc(*list, (*n + 1) * sizeof(*b));

	if (!b) {
		fputs("gputrace: out of memory\n", stderr);
		abort();
	}
	*list = b;
	b[(*n)++] = at;
}

static void loop_break(struct cg *g)
{
	add_jump(&g->loop->breaks, &g->loop->nbreaks, jmp_fwd(g, I_JA(0)));
}

/* Remember where the loop [HEAD, here) is, for the device verifier. */
static void note_loop(struct cg *g, size_t head, struct loc loc)
{
	struct gt_src_loop *l = g->loops;

	if (g->nloops == g->caploops) {
		g->caploops = g->caploops ? 2 * g->caploops : 8;
		l = realloc(g->loops, g->caploops * sizeof(*l));
		if (!l) {
			fputs("gputrace: out of memory\n", stderr);
			abort();
		}
		g->loops = l;
	}
	l[g->nloops++] = (struct gt_src_loop){ .head = (uint32_t)head,
		.end = (uint32_t)g->n, .line = loc.line, .col = loc.col };
}

/*
 * while (c) { ... }: a real loop, as bpftrace 0.17 emits it; the kernel's
 * verifier walks it and refuses one it cannot see end (kernel 5.3+).
 */
static void gen_while(struct cg *g, struct node *s)
{
	struct loop l = { .top = g->n, .outer = g->loop };
	const struct node *t;
	int out;

	gen_int(g, s->a);
	out = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	g->loop = &l;
	gen_stmts(g, s->b->args);
	g->loop = l.outer;
	for (t = s->b->args; t && !stmt_ends(t); t = t->next)
		;
	if (!t)		/* the body falls through: round again */
		jmp_back(g, l.top);
	patch(g, out);
	for (int i = 0; i < l.nbreaks; i++)
		patch(g, l.breaks[i]);
	free(l.breaks);
	note_loop(g, l.top, s->loc);
}

/* Whether statement list S holds a for over a map, at any depth. */
static bool has_for(const struct node *s)
{
	for (; s; s = s->next) {
		if (s->kind == N_FOR)
			return true;
		if ((s->kind == N_IF || s->kind == N_WHILE ||
		     s->kind == N_UNROLL) && has_for(s->b->args))
			return true;
		if (s->kind == N_IF && s->c &&
		    (s->c->kind == N_IF ? has_for(s->c) : has_for(s->c->args)))
			return true;
	}
	return false;
}

/*
 * for ($kv : @m) BODY: bpf_for_each_map_elem with BODY as the callback.
 * BODY reaches the clause's variables in the clause's frame, through r9
 * (the callback's context is that frame), and keeps its temporaries in
 * its own.  The probe context is spilled at -8 and reloaded into r6;
 * return or exit() in BODY set the flag at g->ended and stop the walk,
 * and the clause then ends too.
 */
static void gen_for(struct cg *g, struct node *s)
{
	struct map_sym *m = s->c->sym;
	const struct type *kv = s->a->type;
	int slot = ((struct var_sym *)s->a->sym)->slot, sub = sub_new(g);
	struct cg saved = *g;
	struct loop l = { .fwd = true };
	const struct node *t;
	int *stubs = NULL, nstubs = 0;

	g->code = NULL;
	g->n = g->cap = 0;
	g->rets = NULL;
	g->nrets = g->caprets = 0;
	g->cur = sub;
	g->sp = g->max_sp = 0;
	g->loop = &l;
	g->vreg = BPF_REG_9;
	emit(g, I_MOV64_REG(BPF_REG_9, BPF_REG_4));
	emit(g, I_LDX(BPF_DW, BPF_REG_6, BPF_REG_9, -8));
	for (int e = 0; e < 2; e++)		/* key (r2), value (r3) */
		for (int i = 0; i < kv->elems[e]->size; i += 8) {
			emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_2 + e, i));
			emit(g, I_STX(BPF_DW, BPF_REG_9, BPF_REG_1,
				      slot + kv->offsets[e] + i));
		}
	gen_stmts(g, s->b->args);
	for (t = s->b->args; t && !stmt_ends(t); t = t->next)
		;
	if (!t || l.nconts) {		/* next element */
		for (int i = 0; i < l.nconts; i++)
			patch(g, l.conts[i]);
		emit(g, I_MOV64_IMM(BPF_REG_0, 0));
		add_jump(&stubs, &nstubs, jmp_fwd(g, I_JA(0)));
	}
	if (l.nbreaks) {		/* stop the walk */
		for (int i = 0; i < l.nbreaks; i++)
			patch(g, l.breaks[i]);
		emit(g, I_MOV64_IMM(BPF_REG_0, 1));
		add_jump(&stubs, &nstubs, jmp_fwd(g, I_JA(0)));
	}
	if (g->nrets) {			/* return, exit(): the clause ends */
		for (int i = 0; i < g->nrets; i++)
			patch(g, g->rets[i]);
		emit(g, I_ST(BPF_DW, BPF_REG_9, g->ended, 1));
		emit(g, I_MOV64_IMM(BPF_REG_0, 1));
	}
	for (int i = 0; i < nstubs; i++)
		patch(g, stubs[i]);
	emit(g, I_EXIT());
	/* the body's code becomes the callback; back to the clause */
	g->subs[sub].code = g->code;
	g->subs[sub].n = g->n;
	g->subs[sub].max_sp = g->max_sp;
	g->subs[sub].loc = s->loc;
	bool ends = g->nrets > 0, failed = g->failed, too_far = g->too_far;

	free(g->rets);
	free(l.breaks);
	free(l.conts);
	free(stubs);
	g->code = saved.code;
	g->n = saved.n;
	g->cap = saved.cap;
	g->rets = saved.rets;
	g->nrets = saved.nrets;
	g->caprets = saved.caprets;
	g->cur = saved.cur;
	g->sp = saved.sp;
	g->max_sp = saved.max_sp;
	g->loop = saved.loop;
	g->vreg = BPF_REG_10;
	g->failed = failed;
	g->too_far = too_far;
	map_arg(g, m);
	emit_sub_ref(g, BPF_REG_2, sub);
	emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
	emit(g, I_MOV64_IMM(BPF_REG_4, 0));
	emit(g, I_CALL(H_FOR_EACH_MAP_ELEM));
	if (ends) {
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, g->ended));
		jmp_to_end(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
	}
}

static void gen_stmt(struct cg *g, struct node *s)
{
	struct loc outer = g->stmt_loc;
	int j, j2;

	g->stmt_loc = s->loc;
	switch (s->kind) {
	case N_EXPR_STMT:
		gen_void(g, s->a);
		break;
	case N_ASSIGN:
		gen_assign(g, s);
		break;
	case N_IF:
		gen_int(g, s->a);
		j = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
		gen_stmts(g, s->b->args);
		if (s->c) {
			j2 = jmp_fwd(g, I_JA(0));
			patch(g, j);
			if (s->c->kind == N_IF)
				gen_stmt(g, s->c);
			else
				gen_stmts(g, s->c->args);
			patch(g, j2);
		} else {
			patch(g, j);
		}
		break;
	case N_UNROLL:
		/* bound the growth as it happens: nested unrolls multiply */
		for (uint64_t i = 0; i < s->ival && !g->failed; i++) {
			gen_stmts(g, s->b->args);
			if (!g->failed && g->n > max_insns(g)) {
				diag_error(s->loc, "unroll makes the clause longer than %zu instructions",
					   max_insns(g));
				g->failed = true;
			}
			if (stmt_ends(s))
				break;
		}
		break;
	case N_RETURN:
		jmp_to_end(g, I_JA(0));
		break;
	case N_WHILE:
		gen_while(g, s);
		break;
	case N_BREAK:
		loop_break(g);
		break;
	case N_CONTINUE:
		if (g->loop->fwd)
			add_jump(&g->loop->conts, &g->loop->nconts,
				 jmp_fwd(g, I_JA(0)));
		else
			jmp_back(g, g->loop->top);
		break;
	case N_FOR:
		gen_for(g, s);
		break;
	default:
		break;
	}
	g->stmt_loc = outer;
}

static void gen_stmts(struct cg *g, struct node *s)
{
	for (; s; s = s->next) {
		gen_stmt(g, s);
		if (stmt_ends(s))
			break;
	}
}

static void subs_drop(struct cg *g)
{
	for (int i = 0; i < g->nsubs; i++)
		free(g->subs[i].code);
	g->nsubs = 0;
}

/* The callbacks after the program, their addresses patched in. */
static int layout_subs(struct cg *g, struct gt_bpf_prog *out)
{
	size_t *start = calloc(g->nsubs, sizeof(*start));

	out->sub_offs = calloc(g->nsubs, sizeof(*out->sub_offs));
	if (!start || !out->sub_offs) {
		free(start);
		return -ENOMEM;
	}
	for (int i = 0; i < g->nsubs; i++) {
		start[i] = g->n;
		out->sub_offs[i] = g->n;
		for (size_t j = 0; j < g->subs[i].n; j++)
			emit(g, g->subs[i].code[j]);
	}
	out->nsubs = g->nsubs;
	for (int i = 0; i < g->nrefs; i++) {
		const struct cg_ref *r = &g->refs[i];
		size_t at = (r->buf < 0 ? 0 : start[r->buf]) + r->at;

		g->code[at].imm = (int32_t)(start[r->target] - (at + 1));
	}
	free(start);
	return 0;
}

static int gen_prog(struct cg *g, struct clause *cl, struct clause_info *ci,
		    struct gt_bpf_prog *out)
{
	g->n = 0;
	g->sp = g->max_sp = 0;
	g->nrets = 0;
	g->nloops = 0;
	subs_drop(g);
	g->nrefs = 0;
	g->cur = g->len_sub = -1;
	g->ended = 0;
	g->flt_slot = 0;
	g->vreg = BPF_REG_10;
	g->loc = cl->loc;
	g->stmt_loc = cl->loc;
	g->too_far = false;
	g->device = ci->device;
	if (!g->device)
		emit(g, I_MOV64_REG(BPF_REG_6, BPF_REG_1));
	if (!g->device && has_for(cl->body->args)) {
		/* for over a map: the probe context at -8 and the flag, for
		 * the callbacks (gen_for) */
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_6, stack_alloc(g, 8)));
		g->ended = stack_alloc(g, 8);
		zero_mem(g, g->ended, 8);
	}
	for (struct var_sym *v = ci->vars; v; v = v->next) {
		v->slot = stack_alloc(g, v->type->size);
		zero_mem(g, v->slot, v->type->size);
	}
	struct probe_filter flt;
	bool has_flt;

	flt.bit = flt.skip = -1;
	flt.user = false;
	has_flt = !g->device && g->probe->prov->filter &&
		  g->probe->prov->filter(g->probe, &flt) == 1;
	if (has_flt && flt.user) {
		/* the bits in user memory: go on only when the bit is set */
		int bits = stack_alloc(g, 8), go;

		emit(g, I_ST(BPF_DW, BPF_REG_10, bits, 0));
		stack_ptr(g, BPF_REG_1, bits);
		emit(g, I_MOV64_IMM(BPF_REG_2, 8));
		emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_6, flt.off));
		emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, flt.val_off));
		emit(g, I_CALL(H_PROBE_READ_USER));
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, bits));
		go = jmp_fwd(g, I_JMP_IMM(BPF_JSET, BPF_REG_0, 1 << flt.bit, 0));
		emit(g, I_MOV64_IMM(BPF_REG_0, 0));
		emit(g, I_EXIT());
		patch(g, go);
	} else if (has_flt) {
		/* provider filter: go on only when map[key] has the bit (and
		 * not the skip bit) */
		int key = stack_alloc(g, 8), none, sk = -1, go;

		emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_6, flt.off));
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, key));
		emit_map_ref(g, BPF_REG_1, flt.map);
		stack_ptr(g, BPF_REG_2, key);
		emit(g, I_CALL(H_MAP_LOOKUP));
		/* kept: `kernel` reads the same entry (a lookup less a launch) */
		g->flt_slot = stack_alloc(g, 8);
		g->flt_map = flt.map;
		g->flt_off = flt.off;
		emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, g->flt_slot));
		none = jmp_fwd(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
		emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_0, flt.val_off));
		if (flt.skip >= 0)
			sk = jmp_fwd(g, I_JMP_IMM(BPF_JSET, BPF_REG_0,
						  1 << flt.skip, 0));
		go = jmp_fwd(g, flt.bit >= 0 ?
			     I_JMP_IMM(BPF_JSET, BPF_REG_0, 1 << flt.bit, 0) :
			     I_JA(0));
		if (sk >= 0)
			patch(g, sk);
		if (flt.bit >= 0)
			patch(g, none);
		emit(g, I_MOV64_IMM(BPF_REG_0, 0));
		emit(g, I_EXIT());
		patch(g, go);
		if (flt.bit < 0)
			patch(g, none);
	}
	if (!g->device && g->probe->target_pid && g->probe->prov->pid_filter) {
		/* -p PID: other processes leave at once */
		emit(g, I_CALL(H_PID_TGID));
		emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
		emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, g->probe->target_pid, 2));
		emit(g, I_MOV64_IMM(BPF_REG_0, 0));
		emit(g, I_EXIT());
	}
	if (cl->pred) {
		gen_int(g, cl->pred);
		jmp_to_end(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
	}
	gen_stmts(g, cl->body->args);
	for (int i = 0; i < g->nrets; i++)
		patch(g, g->rets[i]);
	emit(g, I_MOV64_IMM(BPF_REG_0, 0));
	emit(g, I_EXIT());
	for (int i = 0; i < g->nsubs; i++) {
		/* the kernel adds the frames of a call chain, each rounded
		 * up to 32 bytes */
		int both = ((g->max_sp + 31) & ~31) + ((g->subs[i].max_sp + 31) & ~31);

		if (g->subs[i].max_sp && both > STACK_MAX) {
			diag_error(g->subs[i].loc, "the for loop's body and its clause need %d bytes of stack together, more than the %d that eBPF allows",
				   both, STACK_MAX);
			return -EINVAL;
		}
	}
	if (g->nsubs && layout_subs(g, out))
		return -ENOMEM;
	if (g->max_sp > STACK_MAX) {
		diag_error(cl->loc, "clause needs %d bytes of stack, more than the %d that eBPF allows",
			   g->max_sp, STACK_MAX);
		return -EINVAL;
	}
	out->insns = malloc(g->n * sizeof(*out->insns));
	if (!out->insns)
		return -ENOMEM;
	memcpy(out->insns, g->code, g->n * sizeof(*out->insns));
	out->ninsns = g->n;
	out->fd = -1;
	if (g->nloops) {
		out->loops = malloc(g->nloops * sizeof(*out->loops));
		if (!out->loops)
			return -ENOMEM;
		memcpy(out->loops, g->loops, g->nloops * sizeof(*out->loops));
		out->nloops = g->nloops;
	}
	return g->failed ? -EINVAL : 0;
}

int cg_events_map(const struct unit *u)
{
	return u->nmaps;
}

int cg_lost_map(const struct unit *u)
{
	return u->nmaps + 1;
}

static void map_def(struct gt_map_def *d, struct map_layout *ml, struct map_sym *m)
{
	const struct type *v = m->val;

	memset(d, 0, sizeof(*d));
	ml->sym = m;
	ml->key_size = m->key ? m->key->size : 8;
	if (v->kind == T_AGG) {
		switch (v->agg) {
		case AGG_MIN: case AGG_MAX: case AGG_AVG: case AGG_STATS:
			ml->value_size = 16;
			break;
		case AGG_HIST: case AGG_LHIST:
			ml->has_bucket = true;
			ml->key_size += 8;
			ml->value_size = 8;
			break;
		default:
			ml->value_size = 8;
		}
		d->type = GT_MT_PERCPU_HASH;
	} else {
		ml->value_size = v->size;
		d->type = GT_MT_HASH;
	}
	snprintf(d->name, sizeof(d->name), "%s", m->name);
	d->key_size = ml->key_size;
	d->value_size = ml->value_size;
	d->max_entries = MAP_MAX_ENTRIES;
	d->fd = -1;
	d->meta = ml;
}

int cg_build(struct unit *u, const struct cg_opts *opts, struct gt_object *obj)
{
	struct cg g = { .u = u, .opts = opts, .obj = obj };
	struct gt_map_def events = {
		.name = ".events", .type = GT_MT_RINGBUF,
		.max_entries = GT_EVENTS_MAP_SIZE, .fd = -1,
	};
	struct gt_map_def lost = {
		.name = ".lost", .type = GT_MT_PERCPU_ARRAY, .key_size = 4,
		.value_size = 8, .max_entries = 1, .fd = -1,
	};
	int err = 0;

	memset(obj, 0, sizeof(*obj));
	obj->hist_sum = opts->hist_sum;
	/* owned by OBJ: several objects live at once at the prompt */
	g.layouts = calloc(u->nmaps + 1, sizeof(*g.layouts));
	if (!g.layouts)
		return -ENOMEM;
	obj->cg_priv = g.layouts;
	for (struct map_sym *m = u->maps; m; m = m->next) {
		struct gt_map_def d;

		map_def(&d, &g.layouts[m->index], m);
		if (opts->map_keys_max)
			d.max_entries = opts->map_keys_max;
		if (gt_object_add_map(obj, &d) < 0)
			return -ENOMEM;
	}
	if (gt_object_add_map(obj, &events) < 0 || gt_object_add_map(obj, &lost) < 0)
		return -ENOMEM;
	for (struct clause *cl = u->prog->clauses; cl; cl = cl->next) {
		struct clause_info *ci = &u->clauses[cl->index];

		for (int i = 0; i < ci->nprobes; i++) {
			struct gt_bpf_prog prog = { .fd = -1 };
			char msg[256] = "";

			g.probe = ci->probes[i];
			if (g.probe->prov->extras &&
			    (err = g.probe->prov->extras(g.probe, obj, msg, sizeof(msg)))) {
				diag_error(cl->aps->loc, "%s: %s", g.probe->name, msg);
				goto out;
			}
			prog.probe = g.probe;
			err = gen_prog(&g, cl, ci, &prog);
			if (!err && gt_object_add_prog(obj, &prog) < 0)
				err = -ENOMEM;
			if (err) {
				free(prog.insns);
				free(prog.loops);
				free(prog.sub_offs);
				goto out;
			}
		}
	}
out:
	subs_drop(&g);
	free(g.code);
	free(g.rets);
	free(g.loops);
	free(g.subs);
	free(g.refs);
	return err;
}

void cg_free(struct gt_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++) {
		free(obj->progs[i].insns);
		free(obj->progs[i].loops);
		free(obj->progs[i].sub_offs);
	}
	free(obj->progs);
	free(obj->maps);
	free(obj->cg_priv);
	memset(obj, 0, sizeof(*obj));
}
