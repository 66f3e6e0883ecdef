/* SPDX-License-Identifier: MIT */
/*
 * PTX reader and splicer: find the kernels of a PTX module (as nvcc writes
 * it) and splice probe PTX into the ones a probe matches.  Everything the
 * splice does not touch stays byte for byte.  docs/ptx-splice.md has the
 * design, the placeholders and the limits.
 */
#ifndef GT_PTX_H
#define GT_PTX_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Room for one more element in ARR (N used of CAP), which doubles when
 * full: 0 or -ENOMEM (the reader's and the gpu:mem scan's arrays).
 */
int ptx_grow(void **arr, int *cap, size_t elem);
#define PTX_GROW(arr, n, cap) ((n) < (cap) ? 0 :			\
	ptx_grow((void **)&(arr), &(cap), sizeof(*(arr))))

/* A character of a PTX identifier after its first ("%r1", "$L__BB0_2"). */
static inline bool ptx_ident_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* Name of the parameter appended to every instrumented .entry. */
#define PTX_CTX_PARAM "__gt_ctx"
/*
 * The added parameter: 160 bytes by value (struct agent_launch_param: the
 * context pointer, then launch number, launch time, kernel id, then the
 * maps' hot words), read as %gt_ctx, %gt_launch, %gt_launch_ns,
 * %gt_kernel and %gt_wN (word N, 1 <= N < PTX_CTX_WORDS).
 */
#define PTX_CTX_BYTES 160
#define PTX_CTX_WORDS (PTX_CTX_BYTES / 8)
#define PTX_CTX_DECL ".param .align 8 .b8 " PTX_CTX_PARAM "[160]"

/*
 * %gt_shard (.b64): the shard a thread's inline map updates use,
 * ctaid.x * 32 + the warp's row in its block (tid.x / 32 + tid.y), so
 * that warps side by side hit different lines.  This text sets register
 * DST (a string literal) from it, with scratch registers of its own.
 */
#define PTX_SHARD_TEXT(dst) \
	"\t{\n\t.reg .b32 \t%gt_s<2>;\n" \
	"\tmov.u32 \t%gt_s0, %ctaid.x;\n" \
	"\tmov.u32 \t%gt_s1, %tid.x;\n" \
	"\tshr.u32 \t%gt_s1, %gt_s1, 5;\n" \
	"\tshl.b32 \t%gt_s0, %gt_s0, 5;\n" \
	"\tadd.u32 \t%gt_s0, %gt_s0, %gt_s1;\n" \
	"\tmov.u32 \t%gt_s1, %tid.y;\n" \
	"\tadd.u32 \t%gt_s0, %gt_s0, %gt_s1;\n" \
	"\tcvt.u64.u32 \t" dst ", %gt_s0;\n\t}\n"

enum ptx_pkind {
	PTX_P_UNSIGNED,		/* .u8 .. .u64 */
	PTX_P_SIGNED,		/* .s8 .. .s64 */
	PTX_P_BITS,		/* .b8 .. .b64 scalar */
	PTX_P_FLOAT,		/* .f16 .bf16 .f32 .f64 ... */
	PTX_P_AGGREGATE,	/* an array: .align A .b8 name[S] */
	PTX_P_OTHER,		/* .texref, .pred, ... */
};

struct ptx_param {
	char *name;
	char type[12];		/* ".u32", ".b8", ... as written */
	enum ptx_pkind kind;
	unsigned elem;		/* bytes of one element */
	unsigned size;		/* bytes in all (elem * count); 0 if unsized */
	unsigned align;		/* .align, else elem */
	bool is_ptr;		/* had a .ptr attribute */
};

enum ptx_site_kind {
	PTX_SITE_RET,		/* ret / ret.uni */
	PTX_SITE_EXIT,		/* exit */
	PTX_SITE_FALLOFF,	/* the body's end is reachable: implicit exit */
};

/* A point where a thread leaves the kernel. */
struct ptx_site {
	enum ptx_site_kind kind;
	size_t stmt;		/* statement start (its guard, if any) */
	size_t op;		/* the opcode; for FALLOFF, the closing brace */
	size_t end;		/* just past the ';' */
	size_t guard;		/* guard register ("%p1"), 0 if unguarded */
	size_t guard_len;
	bool guard_neg;		/* "@!%p1" */
};

/* A .entry or .func, definition or declaration. */
struct ptx_func {
	char *name;		/* mangled */
	bool is_entry;
	bool is_def;		/* has a body */
	bool referenced;	/* its name occurs elsewhere in the module */
	size_t start, end;	/* the whole item, linkage words included */
	size_t name_end;	/* just past the name */
	size_t lparen, rparen;	/* the parameter list's parens; 0: none */
	size_t last_param_end;	/* just past the last parameter; 0: none */
	struct ptx_param *params;
	int nparams;
	size_t body_open, body_close;	/* '{' and '}' */
	size_t entry_at;	/* where entry code goes */
	size_t t0_at;		/* the end of the body's straight-line start:
				 * its first label, block or control flow */
	struct ptx_site *sites;
	int nsites;
};

struct ptx_module {
	char *text;		/* a private copy, NUL-terminated */
	size_t len;
	int ver_major, ver_minor;
	size_t ver_off, ver_len;	/* the "X.Y" after .version */
	char target[32];	/* first word after .target: "sm_90a" */
	size_t decls_at;	/* where module-scope probe text goes */
	bool has_sections;	/* .section (debug info) present */
	struct ptx_func *funcs;
	int nfuncs;
};

/*
 * Parse LEN bytes of PTX (up to the first NUL, if any).  0 and *OUT on success; else -EINVAL (-ENOMEM)
 * with a message in ERR that names the line.
 */
int ptx_parse(const char *text, size_t len, struct ptx_module **out,
	      char *err, size_t errlen);
void ptx_free(struct ptx_module *m);

/* The first .entry named NAME, or NULL. */
const struct ptx_func *ptx_find_entry(const struct ptx_module *m,
				      const char *name);

/*
 * Byte offset of the appended context parameter in F's parameter buffer
 * once F is instrumented (each parameter at its alignment, in order): what
 * a launch through CU_LAUNCH_PARAM_BUFFER_POINTER needs.
 */
size_t ptx_ctx_offset(const struct ptx_func *f);

/* gpu:mem: the memory instruction classes a clause runs at (ptx_mem.c) */
#define PTX_MEM_LOAD	1u	/* global or generic ld */
#define PTX_MEM_STORE	2u	/* global or generic st, atom, red */
#define PTX_MEM_SHARED	4u	/* ld/st/atom/red .shared (load and store) */

/* An address operand: [base], [base+off] or [off]. */
struct ptx_mem_addr {
	char base[80];		/* "%rd4", "smem", or "" for an absolute address */
	bool is_reg;		/* base is a register */
	unsigned bits;		/* its declared width: 32 or 64 (0: unknown) */
	long long off;
};

/* A memory instruction of a kernel body (ptx_mem.c). */
struct ptx_mem_site {
	size_t stmt;		/* statement start (its guard, if any) */
	size_t op, op_len;	/* the opcode, "ld.global.nc.v4.f32" */
	size_t end;		/* just past the ';' */
	size_t guard, guard_len;	/* "%p1", 0 if unguarded */
	bool guard_neg;
	unsigned cls;		/* one PTX_MEM_* */
	bool store;		/* st, atom, red */
	bool global;		/* .global written (else generic or shared) */
	unsigned size;		/* bytes per lane: element size x vector width */
	int insn;		/* index among the body's instructions, from 0 */
	int line;		/* line of the last .loc before it, or 0 */
	struct ptx_mem_addr addr;
	const char *why;	/* NULL, or why its address cannot be taken */
};

/* gpu:mem sites a kernel may have: more and its clauses are left out */
#define PTX_MEM_MAX_SITES 1024

/*
 * Whether opcode OP (LEN bytes) is a memory instruction gpu:mem covers:
 * ld/ldu/st/atom/red in the global, shared or generic state space; 1 with
 * its class, whether it writes, and its bytes per lane (0: unknown type),
 * else 0 (.local, .param, .const, cp.async, TMA bulk copies, ...).
 */
int ptx_mem_classify(const char *op, size_t len, unsigned *cls, bool *store,
		     unsigned *size);
/* Parse the text between an address operand's brackets: 0 or -EINVAL. */
int ptx_mem_addr(const char *s, size_t len, struct ptx_mem_addr *a);
/*
 * Every memory instruction of F's body in order (malloc'd array in *OUT,
 * count in *NOUT): 0 or -ENOMEM.  Its instructions are numbered from 0
 * at the body's first, labels, directives and braces not counted.
 */
int ptx_mem_sites(const struct ptx_module *m, const struct ptx_func *f,
		  struct ptx_mem_site **out, int *nout);

/* A gpu:mem clause: its text runs before the instructions of CLASSES. */
struct ptx_mem_clause {
	const char *text;
	unsigned classes;	/* PTX_MEM_* */
};

enum {
	PTX_SPLICE_T0 = 1 << 0,		/* load %gt_t0 even if unused */
	PTX_SPLICE_ONLY_MATCHED = 1 << 1,	/* drop other kernels */
	PTX_SPLICE_STRICT_ARGS = 1 << 2,	/* %gt_argN past the end: error */
	PTX_SPLICE_PRUNE = 1 << 3,	/* only the decls entry/exit reach */
};

struct ptx_splice_req {
	/*
	 * Which kernels: MATCH(mangled name, ARG) != 0, else NAMES (NULL
	 * terminated), else every .entry.
	 */
	int (*match)(const char *name, void *arg);
	void *match_arg;
	const char *const *names;
	const char *decls;	/* module scope, once; may be NULL */
	const char *entry;	/* after each matched kernel's setup */
	const char *exit;	/* before each ret/exit of a matched kernel */
	unsigned flags;
	int min_major, min_minor;	/* raise .version to at least this */
	/*
	 * Nonzero: a matched kernel with no .maxnreg of its own gets
	 * `.maxnreg MAXNREG`.  The JIT's register cap (--maxrregcount,
	 * CU_JIT_MAX_REGISTERS) is ignored for kernels with launch bounds
	 * (.maxntid, .minnctapersm); the directive is not.
	 */
	unsigned maxnreg;
	/*
	 * gpu:mem clauses, each pasted once per warp before every memory
	 * instruction of its classes in a matched kernel, under the
	 * instruction's guard.  Placeholders: %gt_maddr, %gt_msect,
	 * %gt_mconf (.b64 registers computed at the site from the active
	 * lanes), %gt_msize, %gt_mstore, %gt_minsn, %gt_mline (constants).
	 */
	const struct ptx_mem_clause *mem;
	int nmem;
	/*
	 * NOTE (or NULL) hears of each kernel whose memory instructions are
	 * left out, or some of them, with the reason (for -v).
	 */
	void (*note)(void *arg, const char *kernel, const char *msg);
	void *note_arg;
};

/* The highest N of the %gt_argN that probe code TEXT (NULL: none)
 * reads, or -1: a kernel with fewer parameters reads 0 for it. */
int ptx_highest_arg(const char *text);

/*
 * Splice REQ into M.  Returns the number of kernels instrumented (>= 0)
 * with the new module text in *OUT_TEXT (malloc'd, NUL-terminated), or a
 * negative errno with a message in ERR.
 */
int ptx_splice(const struct ptx_module *m, const struct ptx_splice_req *req,
	       char **out_text, char *err, size_t errlen);

/*
 * The `.func` items of DECLS (module-scope text made of function
 * definitions and declarations only) that the NROOTS texts ROOTS (NULL
 * entries allowed) name, directly or through the functions they name, in
 * their order (ptx_prune.c).  0 and *OUT (malloc'd), or -EINVAL (DECLS
 * do not parse, message in ERR) or -ENOMEM.
 */
int ptx_prune_decls(const char *decls, const char *const *roots, int nroots,
		    char **out, char *err, size_t errlen);

#endif
