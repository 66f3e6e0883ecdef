/* SPDX-License-Identifier: MIT */
/*
 * Lowering verified device eBPF to a PTX function: the frame around the
 * body (parameters, warp election, the stop flag, the stack), the public
 * API and the text helpers.  ptx_lower_an.c analyses, ptx_lower_insn.c
 * writes the instructions.
 */
#include "compiler/ptx_lower_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/devrt.h"

void pl_printf(struct pl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *s;

		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		s = realloc(b->s, cap);
		if (!s) {
			b->oom = true;
			return;
		}
		b->s = s;
		b->cap = cap;
		va_start(ap, fmt);
		vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

int pl_fail(struct pl_ctx *c, int e, size_t insn, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->bad_insn >= 0)
		return e;	/* report the first error only */
	c->bad_insn = (int)insn;
	n = snprintf(c->err, c->errlen, "probe %d: insn %zu: ",
		     c->opts->index, insn);
	if (n >= 0 && (size_t)n < c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return e;
}

static void prologue(struct pl_ctx *c)
{
	struct pl_buf *b = &c->out;
	int k = c->opts->index;
	bool warp = c->opts->mode == PL_WARP;

	if (warp && c->opts->mem)
		c->mem |= 1u << PL_MEM_MASK;
	pl_printf(b, ".func __gt_probe_%d(.param .u64 __gt_pctx, "
		  ".param .u64 __gt_pt0", k);
	for (int w = 1; w < DEVRT_PWORDS; w++)
		if (c->words & (1u << w))
			pl_printf(b, ", .param .u64 __gt_pw%d", w);
	for (int a = 0; a < c->nargs; a++)
		pl_printf(b, ", .param .u64 __gt_pa%d", a);
	if (c->words & PL_W_SHARD)
		pl_printf(b, ", .param .u64 __gt_psh");
	for (int m = 0; m < PL_MEM_N; m++)
		if (c->mem & (1u << m))
			pl_printf(b, ", .param .u64 __gt_pm%s", pl_mem_names[m]);
	pl_printf(b, ")\n{\n"
		  "\t.reg .pred %%p<2>;\n"
		  "\t.reg .b32 %%u<6>;\n"
		  "\t.reg .b64 %%r<10>;\n"
		  "\t.reg .b64 %%t<2>;\n"
		  "\t.reg .b64 %%fp, %%pctx, %%pg, %%pt0, %%pte, %%plan, %%psh;\n"
		  "\t.reg .pred %%pskip;\n"
		  "\t.reg .b64 %%pw<%d>;\n", DEVRT_PWORDS);
	if (c->nargs)
		pl_printf(b, "\t.reg .b64 %%pa<%d>;\n", c->nargs);
	if (c->uni)
		pl_printf(b, "\t.reg .b32 %%plead, %%pmsk;\n");
	for (int s = 0; s < PL_SLOTS; s++)
		if (pl_promoted(c, s * 8 - PL_FRAME))
			pl_printf(b, "\t.reg .b64 %%s%d;\n", s);
	if (c->frame)
		pl_printf(b, "\t.local .align 8 .b8 __gt_stk[%d];\n", c->frame);
	/* deferred updates: none unless the probe reaches them */
	for (int d = 0; d < c->ndefer; d++)
		pl_printf(b, "\tmov.pred %%gt_d%d_%dp, 0;\n", k, d);
	if (warp) {
		/* the lowest active lane runs the clause for the warp */
		if (c->opts->mem)
			pl_printf(b, "\tld.param.u64 %%r0, [__gt_pm%s];\n"
				  "\tcvt.u32.u64 %%u0, %%r0;\n",
				  pl_mem_names[PL_MEM_MASK]);
		else
			pl_printf(b, "\tactivemask.b32 %%u0;\n");
		pl_printf(b, "\tbrev.b32 %%u1, %%u0;\n"
			  "\tbfind.shiftamt.u32 %%u1, %%u1;\n"
			  "\tmov.u32 %%u2, %%laneid;\n"
			  "\tsetp.ne.u32 %s, %%u2, %%u1;\n",
			  c->straight || c->uni ? "%pskip" : "%p0");
		if (c->uni)
			pl_printf(b, "\tmov.u32 %%plead, %%u1;\n"
				  "\tmov.u32 %%pmsk, %%u0;\n");
		else if (!c->straight)
			pl_printf(b, "\t@%%p0 bra $Lret;\n");
		if (c->uses_lanes)
			pl_printf(b, "\tpopc.b32 %%u0, %%u0;\n"
				  "\tcvt.u64.u32 %%plan, %%u0;\n");
	}
	/* a launch with no context (0) runs the probes as no-ops: how the
	 * agent stops them; nothing is read from memory on this path */
	pl_printf(b, "\tld.param.u64 %%pctx, [__gt_pctx];\n");
	if (!c->straight)
		pl_printf(b, "\tsetp.eq.u64 %%p0, %%pctx, 0;\n"
			  "\t@%%p0 bra $Lret;\n");
	else if (warp)
		pl_printf(b, "\tsetp.eq.or.u64 %%pskip, %%pctx, 0, %%pskip;\n");
	else
		pl_printf(b, "\tsetp.eq.u64 %%pskip, %%pctx, 0;\n");
	pl_printf(b, "\tcvta.to.global.u64 %%pg, %%pctx;\n");
	if (c->uses_t0)
		/* one exit time per call: every `duration` in it agrees */
		pl_printf(b, "\tld.param.u64 %%pt0, [__gt_pt0];\n"
			  "\tmov.u64 %%pte, %%globaltimer;\n");
	/*
	 * Add to the exit time a 0 that ptxas cannot prove warp-uniform, so
	 * that it keeps the time in a regular register (CS2R) rather than a
	 * uniform one (S2UR), whose latency the thread's exit paid (vadd
	 * 2^24, H200, exit hist(duration): gpu:warp 1.058x -> 1.051x,
	 * gpu:kernel 1.116x -> 1.091x).  A warp clause: laneid - leader,
	 * 0 in the lane that runs it; a thread: (context & 7) * laneid, the
	 * context being a cuMemAlloc base (0.2% dearer than the first).
	 * Not in a gpu:mem clause: every lane runs it, all on one time.
	 */
	if (c->uses_t0 && !c->uni) {
		if (warp)
			pl_printf(b, "\tsub.u32 %%u3, %%u2, %%u1;\n");
		else
			pl_printf(b, "\tcvt.u32.u64 %%u3, %%pctx;\n"
				  "\tand.b32 %%u3, %%u3, 7;\n"
				  "\tmov.u32 %%u4, %%laneid;\n"
				  "\tmul.lo.u32 %%u3, %%u3, %%u4;\n");
		pl_printf(b, "\tcvt.u64.u32 %%t0, %%u3;\n"
			  "\tadd.s64 %%pte, %%pte, %%t0;\n");
	}
	for (int w = 1; w < DEVRT_PWORDS; w++)
		if (c->words & (1u << w))
			pl_printf(b, "\tld.param.u64 %%pw%d, [__gt_pw%d];\n", w, w);
	for (int a = 0; a < c->nargs; a++)
		pl_printf(b, "\tld.param.u64 %%pa%d, [__gt_pa%d];\n", a, a);
	if (c->words & PL_W_SHARD)
		pl_printf(b, "\tld.param.u64 %%psh, [__gt_psh];\n");
	if (c->need_fp && c->frame)
		pl_printf(b, "\tcvta.local.u64 %%fp, __gt_stk;\n"
			  "\tadd.s64 %%fp, %%fp, %d;\n", c->frame);
	else if (c->need_fp)
		pl_printf(b, "\tmov.b64 %%fp, 0;\n");
	/* r1 is the program's opaque context: give it the device one */
	pl_printf(b, "\tmov.b64 %%r1, %%pctx;\n");
}

/* one PTX instruction that only computes a register: safe to predicate */
static bool plain_line(const char *s, size_t len)
{
	static const char *const ops[] = {
		"mov.", "add.", "sub.", "and.", "or.", "xor.", "shl.", "shr.",
		"mul.", "neg.", "not.", "cvt.", "selp.",
	};

	if (len < 2 || s[0] != '\t' || s[len - 1] != '\n' ||
	    memchr(s, '\n', len - 1) || memchr(s, '@', len))
		return false;
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (!strncmp(s + 1, ops[k], strlen(ops[k])))
			return true;
	return false;
}

/*
 * eBPF has no set-on-condition: `r = a == b` is "r = 1; if (a == b)
 * goto +1; r = 0".  A branch over that one instruction becomes the
 * instruction predicated on the opposite condition, so the JIT sees no
 * branch: a filter like /threadIdx.x == 0 && threadIdx.y == 0/ diverged
 * every warp at the kernel's start (stencil smload(1) per block, H200:
 * 1.081x with the branches, 1.027x predicated).  Insn I jumped over
 * insn I + 1, whose text starts at AT: the jump's "@%p0 bra" line must
 * end there, and the skipped insn must not be a jump target itself.
 */
static void predicate_skip(struct pl_ctx *c, size_t i, size_t at)
{
	struct pl_buf *b = &c->out;
	char want[48];
	size_t blen, nlen, bra;

	snprintf(want, sizeof(want), "\t@%%p0 bra $L%zu;\n", i + 2);
	blen = strlen(want);
	if (b->oom || at < blen || strncmp(b->s + at - blen, want, blen))
		return;
	nlen = b->len - at;
	if (!plain_line(b->s + at, nlen))
		return;
	/* "\t@%p0 bra $Ln;\n\tINSN\n" -> "\t@!%p0 INSN\n" */
	bra = at - blen;
	memmove(b->s + bra + 7, b->s + at + 1, nlen - 1);
	memcpy(b->s + bra, "\t@!%p0 ", 7);
	b->len = bra + 7 + nlen - 1;
	b->s[b->len] = '\0';
}

static bool skips_one(const struct pl_ctx *c, size_t i)
{
	const struct bpf_insn *in = &c->insns[i];
	unsigned cls = BPF_CLASS(in->code);

	return (cls == BPF_JMP || cls == BPF_JMP32) &&
	       BPF_OP(in->code) != BPF_JA && BPF_OP(in->code) != BPF_CALL &&
	       BPF_OP(in->code) != BPF_EXIT && in->off == 1 && i + 2 < c->n &&
	       c->in[i + 1].reached && !c->target[i + 1];
}

static int emit_body(struct pl_ctx *c)
{
	int ret;

	free(c->out.s);
	memset(&c->out, 0, sizeof(c->out));
	c->ndefer = 0;
	c->guarded = false;
	for (size_t i = 0, at; i < c->n; i++) {
		if (!c->in[i].reached)
			continue;
		if (c->target[i])
			pl_printf(&c->out, "$L%zu:\n", i);
		at = c->out.len;
		if ((ret = pl_emit_insn(c, i)))
			return ret;
		if (i && c->in[i - 1].reached && skips_one(c, i - 1))
			predicate_skip(c, i - 1, at);
	}
	pl_printf(&c->out, "$Lret:\n\tret;\n}\n");
	return c->out.oom ? pl_fail(c, -ENOMEM, 0, "out of memory") : 0;
}

/* The exit text applying C's deferred updates (malloc'd). */
static char *flush_text(const struct pl_ctx *c)
{
	struct pl_buf b = { 0 };
	int k = c->opts->index;

	for (int d = 0; d < c->ndefer; d++)
		pl_printf(&b, "\t@%%gt_d%d_%dp red.global.add.u64 "
			  "[%%gt_d%d_%da], %%gt_d%d_%dv;\n", k, d, k, d, k, d);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

int pl_lower(const struct bpf_insn *insns, size_t n,
	     const struct gt_dev_map *maps, int nmaps,
	     const struct pl_opts *opts, struct pl_func *out,
	     char *err, size_t errlen)
{
	struct pl_ctx c = {
		.insns = insns, .n = n, .maps = maps, .nmaps = nmaps,
		.opts = opts, .err = err, .errlen = errlen, .bad_insn = -1,
	};
	struct pl_buf body = { 0 };
	int ret;

	memset(out, 0, sizeof(*out));
	if (errlen)
		err[0] = '\0';
	if (!n)
		return pl_fail(&c, -EINVAL, 0, "empty program");
	c.in = calloc(n, sizeof(*c.in));
	c.target = calloc(n, sizeof(*c.target));
	c.in_loop = calloc(n, sizeof(*c.in_loop));
	if (!c.in || !c.target || !c.in_loop) {
		ret = pl_fail(&c, -ENOMEM, 0, "out of memory");
		goto out;
	}
	if ((ret = pl_analyze(&c)))
		goto out;
	/* the body first: the prologue depends on what it finds; a loop
	 * branches, and its updates are not deferred (update()) */
	c.straight = opts->defer && !c.has_loop;
	c.uni = opts->mode == PL_WARP && opts->mem;
	if ((ret = emit_body(&c)))
		goto out;
	if (c.straight && (strstr(c.out.s, "call ") || strstr(c.out.s, "%pg"))) {
		/* other memory effects: they need the branches */
		c.straight = false;
		if ((ret = emit_body(&c)))
			goto out;
	}
	body = c.out;
	memset(&c.out, 0, sizeof(c.out));
	prologue(&c);
	pl_printf(&c.out, "%s", body.s ? body.s : "");
	if (c.out.oom || body.oom) {
		ret = pl_fail(&c, -ENOMEM, 0, "out of memory");
		goto out;
	}
	if (c.ndefer && !(out->flush = flush_text(&c))) {
		ret = pl_fail(&c, -ENOMEM, 0, "out of memory");
		goto out;
	}
	out->text = c.out.s;
	c.out.s = NULL;
	out->index = opts->index;
	out->nargs = c.nargs;
	out->words = c.words;
	out->mem = c.mem;
	out->frame = c.frame;
	for (int s = 0; s < PL_SLOTS; s++)
		out->promoted += pl_promoted(&c, s * 8 - PL_FRAME);
	ret = 0;
out:
	free(body.s);
	free(c.out.s);
	free(c.in);
	free(c.target);
	free(c.in_loop);
	return ret;
}

void pl_func_free(struct pl_func *f)
{
	free(f->text);
	free(f->flush);
	f->text = NULL;
	f->flush = NULL;
}

/* The splicer's placeholder for word W of the launch parameter. */
static const char *word_placeholder(int w, char *buf, size_t len)
{
	static const char *const named[4] = { "", "%gt_launch", "%gt_launch_ns",
					       "%gt_kernel" };

	if (w < 4)
		return named[w];
	snprintf(buf, len, "%%gt_w%d", w);
	return buf;
}

char *pl_call_text(const struct pl_func *f)
{
	struct pl_buf b = { 0 };
	char ph[16];

	pl_printf(&b, "call __gt_probe_%d, (%%gt_ctx, %%gt_t0", f->index);
	for (int w = 1; w < DEVRT_PWORDS; w++)
		if (f->words & (1u << w))
			pl_printf(&b, ", %s", word_placeholder(w, ph, sizeof(ph)));
	for (int a = 0; a < f->nargs; a++)
		pl_printf(&b, ", %%gt_arg%d", a);
	if (f->words & PL_W_SHARD)
		pl_printf(&b, ", %%gt_shard");
	for (int m = 0; m < PL_MEM_N; m++)
		if (f->mem & (1u << m))
			pl_printf(&b, ", %%gt_m%s", pl_mem_names[m]);
	pl_printf(&b, ");\n");
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

const char *const pl_mem_names[PL_MEM_N] = {
	"addr", "size", "store", "sect", "insn", "line", "conf", "mask",
};

bool pl_runtime_available(void)
{
	return devrt_ptx[0] != '\0';
}

char *pl_decls(const struct pl_func *funcs, int n)
{
	struct pl_buf b = { 0 };

	pl_printf(&b, "// gputrace device runtime\n%s", devrt_ptx);
	for (int i = 0; i < n; i++)
		pl_printf(&b, "// gputrace probe %d\n%s", funcs[i].index,
			  funcs[i].text);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* Is the register name at P (after '%') one of the probe function's own? */
static size_t own_reg(const char *p)
{
	static const char *const named[] = { "fp", "pctx", "pg", "pt0", "pte",
					     "plan", "pskip", "psh", "plead",
					     "pmsk" };
	size_t n = 0;

	while (isalnum((unsigned char)p[n]) || p[n] == '_')
		n++;
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (n == strlen(named[i]) && !strncmp(p, named[i], n))
			return n;
	/* %r3 %p0 %u1 %t0 %s12 %pw2 %pa0, and their <N> declarations */
	if (strchr("rputs", p[0]) && (isdigit((unsigned char)p[1]) || p[1] == '<'))
		return n;
	if ((!strncmp(p, "pw", 2) || !strncmp(p, "pa", 2)) &&
	    (isdigit((unsigned char)p[2]) || p[2] == '<'))
		return n;
	return 0;
}

/* The placeholder for a parameter load "[__gt_NAME]", or NULL. */
static const char *param_placeholder(const char *name, size_t n, char *buf,
				     size_t len)
{
	if (n == 4 && !strncmp(name, "pctx", 4))
		return "%gt_ctx";
	if (n == 3 && !strncmp(name, "pt0", 3))
		return "%gt_t0";
	if (n == 3 && !strncmp(name, "psh", 3))
		return "%gt_shard";
	if (n > 2 && !strncmp(name, "pm", 2)) {
		snprintf(buf, len, "%%gt_m%.*s", (int)(n - 2), name + 2);
		return buf;
	}
	if (n > 2 && !strncmp(name, "pw", 2) && isdigit((unsigned char)name[2]))
		return word_placeholder(atoi(name + 2), buf, len);
	if (n > 2 && !strncmp(name, "pa", 2)) {
		snprintf(buf, len, "%%gt_arg%.*s", (int)(n - 2), name + 2);
		return buf;
	}
	return NULL;
}

char *pl_inline_text(const struct pl_func *f)
{
	const char *s = strchr(f->text, '\n'), *end;
	struct pl_buf b = { 0 };
	char ph[32];

	if (!s)
		return NULL;
	/* the body, without the .func line and the final "ret;" */
	end = strstr(s, "$Lret:\n\tret;\n}");
	if (!end)
		return NULL;
	for (const char *p = s + 1; p < end;) {
		const char *q;
		size_t n;

		if (!strncmp(p, "ld.param.u64 ", 13) && (q = strstr(p, "[__gt_")) &&
		    q < strchr(p, '\n')) {
			/* ld.param.u64 %x, [__gt_NAME]; -> mov.u64 %gq_x, PH; */
			const char *name = q + 6, *ph_s;

			n = strcspn(name, "]");
			ph_s = param_placeholder(name, n, ph, sizeof(ph));
			if (ph_s) {
				const char *reg = p + 13;
				size_t rl = strcspn(reg, ",");

				/* t0: only its low 32 bits, read once at entry */
				if (!strcmp(ph_s, "%gt_t0"))
					pl_printf(&b, "cvt.u64.u32 %%gq_%.*s, %%gt_t0lo;",
						  (int)rl - 1, reg + 1);
				else
					pl_printf(&b, "mov.u64 %%gq_%.*s, %s;",
						  (int)rl - 1, reg + 1, ph_s);
				p = strchr(p, ';') + 1;
				continue;
			}
		}
		if (*p == '%' && (n = own_reg(p + 1))) {
			pl_printf(&b, "%%gq_%.*s", (int)n, p + 1);
			p += 1 + n;
		} else if (p[0] == '$' && p[1] == 'L') {
			/* labels unique per insertion site and probe */
			pl_printf(&b, "%%gt_uniq_%d", f->index);
			p += 1;
		} else if (!strncmp(p, "__gt_stk", 8)) {
			pl_printf(&b, "%%gt_uniq_%dstk", f->index);
			p += 8;
		} else {
			pl_printf(&b, "%c", *p);
			p++;
		}
	}
	/* a label needs an instruction after it: the block's last is a no-op */
	pl_printf(&b, "%%gt_uniq_%dLret:\n\tmov.b32 %%gq_u0, %%gq_u0;\n}\n", f->index);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
