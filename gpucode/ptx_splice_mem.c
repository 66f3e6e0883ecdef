// SPDX-License-Identifier: MIT
/*
 * gpu:mem's part of the splicer: before each memory instruction that a
 * clause's classes cover (ptx_mem.c finds them), a block under the
 * instruction's guard computes the warp's figures (sectors, conflicts,
 * lowest address) from the active lanes and runs the clauses, their
 * constants filled in.  docs/ptx-splice.md, "Memory instructions".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"
#include "gpucode/ptx_splice_priv.h"

static void note(struct job *j, const struct ptx_func *f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(struct job *j, const struct ptx_func *f, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!j->req->note)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	j->req->note(j->req->note_arg, f->name, msg);
}

/* A gpu:mem clause's TEXT at site S: its constants and labels filled in. */
static void add_mem_text(struct sb *b, const char *text,
			 const struct ptx_mem_site *s, int uniq)
{
	static const char *const konst[] = { "%gt_msize", "%gt_mstore",
					     "%gt_minsn", "%gt_mline" };
	const char *p = text;

	sb_str(b, "\t{\n");
	while (*p) {
		const char *q = strstr(p, "%gt_");
		size_t k;

		if (!q) {
			sb_str(b, p);
			break;
		}
		sb_add(b, p, q - p);
		p = q;
		if (!strncmp(p, "%gt_uniq", 8)) {
			sb_printf(b, "$__gt%d", uniq);
			p += 8;
			continue;
		}
		for (k = 0; k < 4; k++)
			if (!strncmp(p, konst[k], strlen(konst[k])) &&
			    !ptx_ident_char((unsigned char)p[strlen(konst[k])]))
				break;
		if (k == 4) {
			sb_add(b, p, 4);
			p += 4;
			continue;
		}
		sb_printf(b, "%d", k == 0 ? (int)s->size : k == 1 ? s->store :
			  k == 2 ? s->insn : s->line);
		p += strlen(konst[k]);
	}
	if (text[0] && text[strlen(text) - 1] != '\n')
		sb_str(b, "\n");
	sb_str(b, "\t}\n");
}

/* This lane's address into %gt_ma (.b64). */
static void mem_own_addr(struct sb *b, const struct ptx_mem_site *s)
{
	const struct ptx_mem_addr *a = &s->addr;

	if (!a->base[0])
		sb_printf(b, "\tmov.u64 \t%%gt_ma, %lld;\n", a->off);
	else if (a->is_reg && a->bits == 32)
		sb_printf(b, "\tcvt.u64.u32 \t%%gt_ma, %s;\n", a->base);
	else
		sb_printf(b, "\tmov.u64 \t%%gt_ma, %s;\n", a->base);
	if (a->base[0] && a->off)
		sb_printf(b, "\tadd.s64 \t%%gt_ma, %%gt_ma, %lld;\n", a->off);
}

/*
 * The warp's figures, from every active lane (all of them run this):
 * %gt_msect the distinct 32-byte sectors (a lane's access lies in one:
 * PTX wants it aligned to its size, at most 32 bytes), %gt_mconf the
 * largest number of distinct words one bank serves, minus one, and
 * %gt_maddr the lowest address.
 */
static void mem_figures(struct job *j, struct sb *b, bool sect, bool conf,
			bool addr)
{
	if (sect) {
		/*
		 * Lanes in a row whose sectors never decrease (unit stride,
		 * strides, a transposed row; a guarded tail): one plus the
		 * lanes whose sector differs from the lane below, by two
		 * shuffles and a ballot.  Else match.any.sync on the sector,
		 * one leader per distinct sector (the lowest lane of its
		 * group).  All active lanes agree on the path.
		 */
		sb_str(b, "\tshr.u64 \t%gt_mt, %gt_ma, 5;\n"
		       "\tmov.u32 \t%gt_mj, %lanemask_lt;\n"
		       "\tand.b32 \t%gt_mj, %gt_mj, %gt_mm;\n"
		       "\tsetp.ne.u32 \t%gt_mp, %gt_mj, 0;\n"
		       "\tmov.b64 \t{%gt_mk, %gt_mn}, %gt_mt;\n"
		       "\tshfl.sync.up.b32 \t%gt_mk, %gt_mk, 1, 0, %gt_mm;\n"
		       "\tshfl.sync.up.b32 \t%gt_mn, %gt_mn, 1, 0, %gt_mm;\n"
		       "\tmov.b64 \t%gt_mu, {%gt_mk, %gt_mn};\n"
		       "\tsetp.lt.and.u64 \t%gt_mq, %gt_mt, %gt_mu, %gt_mp;\n"
		       "\tvote.sync.any.pred \t%gt_mq, %gt_mq, %gt_mm;\n"
		       "\tneg.s32 \t%gt_mk, %gt_mm;\n"
		       "\tand.b32 \t%gt_mk, %gt_mk, %gt_mm;\n"
		       "\tadd.u32 \t%gt_mk, %gt_mk, %gt_mm;\n"
		       "\tand.b32 \t%gt_mk, %gt_mk, %gt_mm;\n"
		       "\tsetp.ne.or.u32 \t%gt_mq, %gt_mk, 0, %gt_mq;\n"
		       "\t@%gt_mq bra \t%gt_uniq_ms;\n"
		       "\tsetp.ne.and.u64 \t%gt_mp, %gt_mt, %gt_mu, %gt_mp;\n"
		       "\tvote.sync.ballot.b32 \t%gt_mk, %gt_mp, %gt_mm;\n"
		       "\tpopc.b32 \t%gt_mk, %gt_mk;\n"
		       "\tadd.u32 \t%gt_mk, %gt_mk, 1;\n"
		       "\tbra.uni \t%gt_uniq_md;\n"
		       "%gt_uniq_ms:\n"
		       "\tmatch.any.sync.b64 \t%gt_mk, %gt_mt, %gt_mm;\n"
		       "\tand.b32 \t%gt_mk, %gt_mk, %gt_mj;\n"
		       "\tsetp.eq.u32 \t%gt_mq, %gt_mk, 0;\n"
		       "\tvote.sync.ballot.b32 \t%gt_mk, %gt_mq, %gt_mm;\n"
		       "\tpopc.b32 \t%gt_mk, %gt_mk;\n"
		       "%gt_uniq_md:\n"
		       "\tcvt.u64.u32 \t%gt_msect, %gt_mk;\n");
	}
	if (conf) {
		/* one lane per distinct word keys on its bank, the others
		 * on a key of their own; the largest group is the answer */
		sb_str(b, "\tcvt.u32.u64 \t%gt_mj, %gt_ma;\n"
		       "\tshr.u32 \t%gt_mj, %gt_mj, 2;\n"
		       "\tmatch.any.sync.b32 \t%gt_mk, %gt_mj, %gt_mm;\n"
		       "\tmov.u32 \t%gt_mn, %lanemask_lt;\n"
		       "\tand.b32 \t%gt_mk, %gt_mk, %gt_mn;\n"
		       "\tsetp.eq.u32 \t%gt_mq, %gt_mk, 0;\n"
		       "\tand.b32 \t%gt_mj, %gt_mj, 31;\n"
		       "\tmov.u32 \t%gt_mk, %laneid;\n"
		       "\tadd.u32 \t%gt_mk, %gt_mk, 32;\n"
		       "\tselp.b32 \t%gt_mj, %gt_mj, %gt_mk, %gt_mq;\n"
		       "\tmatch.any.sync.b32 \t%gt_mk, %gt_mj, %gt_mm;\n"
		       "\tpopc.b32 \t%gt_mk, %gt_mk;\n"
		       "\tmov.u32 \t%gt_mj, 0;\n");
		/* the warp's largest, a bit at a time: 1..32 */
		for (int bit = 5; bit >= 0; bit--)
			sb_printf(b, "\tor.b32 \t%%gt_mn, %%gt_mj, %d;\n"
				  "\tsetp.ge.u32 \t%%gt_mq, %%gt_mk, %%gt_mn;\n"
				  "\tvote.sync.any.pred \t%%gt_mq, %%gt_mq, %%gt_mm;\n"
				  "\tselp.b32 \t%%gt_mj, %%gt_mn, %%gt_mj, %%gt_mq;\n",
				  1 << bit);
		sb_str(b, "\tsub.u32 \t%gt_mj, %gt_mj, 1;\n"
		       "\tcvt.u64.u32 \t%gt_mconf, %gt_mj;\n");
	}
	if (addr && j->sm >= 80) {
		/* high words first, then the low words of the lowest high */
		sb_str(b, "\tmov.b64 \t{%gt_mj, %gt_mk}, %gt_ma;\n"
		       "\tredux.sync.min.u32 \t%gt_mn, %gt_mk, %gt_mm;\n"
		       "\tsetp.eq.u32 \t%gt_mq, %gt_mk, %gt_mn;\n"
		       "\tselp.b32 \t%gt_mj, %gt_mj, -1, %gt_mq;\n"
		       "\tredux.sync.min.u32 \t%gt_mj, %gt_mj, %gt_mm;\n"
		       "\tmov.b64 \t%gt_maddr, {%gt_mj, %gt_mn};\n");
	} else if (addr) {
		/* before sm_80: every active lane's address in turn */
		sb_str(b, "\tmov.b64 \t%gt_maddr, -1;\n"
		       "\tmov.b32 \t%gt_mn, %gt_mm;\n"
		       "%gt_uniq_ml:\n"
		       "\tbrev.b32 \t%gt_mj, %gt_mn;\n"
		       "\tbfind.shiftamt.u32 \t%gt_mj, %gt_mj;\n"
		       "\tmov.b64 \t{%gt_mk, %gt_ml}, %gt_ma;\n"
		       "\tshfl.sync.idx.b32 \t%gt_mk, %gt_mk, %gt_mj, 31, %gt_mm;\n"
		       "\tshfl.sync.idx.b32 \t%gt_ml, %gt_ml, %gt_mj, 31, %gt_mm;\n"
		       "\tmov.b64 \t%gt_mt, {%gt_mk, %gt_ml};\n"
		       "\tmin.u64 \t%gt_maddr, %gt_maddr, %gt_mt;\n"
		       "\tshl.b32 \t%gt_mk, 1, %gt_mj;\n"
		       "\tnot.b32 \t%gt_mk, %gt_mk;\n"
		       "\tand.b32 \t%gt_mn, %gt_mn, %gt_mk;\n"
		       "\tsetp.ne.u32 \t%gt_mq, %gt_mn, 0;\n"
		       "\t@%gt_mq bra \t%gt_uniq_ml;\n");
	}
}

/* The clauses of REQ that run at S, in one block before it. */
static int splice_mem_site(struct job *j, const struct ptx_mem_site *s)
{
	const struct ptx_splice_req *req = j->req;
	const char *text = j->m->text;
	bool sect = false, conf = false, addr = false, any = false;
	int uniq = j->uniq++, skip = j->uniq++;
	struct sb b = { 0 };
	size_t at;

	for (int i = 0; i < req->nmem; i++) {
		const char *t = req->mem[i].text;

		if (!(req->mem[i].classes & s->cls))
			continue;
		any = true;
		sect |= strstr(t, "%gt_msect") != NULL;
		conf |= strstr(t, "%gt_mconf") != NULL;
		addr |= strstr(t, "%gt_maddr") != NULL;
	}
	if (!any)
		return 0;
	conf &= s->cls == PTX_MEM_SHARED;
	/* at the statement's line start, after a label on its line */
	at = s->stmt;
	while (at > 0 && (text[at - 1] == ' ' || text[at - 1] == '\t'))
		at--;
	if (at > 0 && text[at - 1] != '\n') {
		at = s->stmt;
		sb_str(&b, "\n");
	}
	sb_printf(&b, "\t// gputrace mem: insn %d, line %d: %.*s\n", s->insn,
		  s->line, (int)s->op_len, text + s->op);
	if (s->guard)
		sb_printf(&b, "\t@%s%.*s bra \t$__gt%d;\n", s->guard_neg ? "" :
			  "!", (int)s->guard_len, text + s->guard, skip);
	/*
	 * %gt_mm: the lanes here, read once.  Every lane of it runs every
	 * clause (pl_opts.mem: warp-uniform), on the values of the lowest
	 * (%gt_mmask), whose updates alone count; none branches away, so
	 * nothing waits at the end.
	 */
	sb_str(&b, "\t{\n\t.reg .b64 \t%gt_maddr, %gt_msect, %gt_mconf, "
	       "%gt_mmask, %gt_ma, %gt_mt, %gt_mu;\n\t.reg .b32 \t%gt_mm, "
	       "%gt_mj, %gt_mk, %gt_mn, %gt_ml;\n\t.reg .pred \t%gt_mq, "
	       "%gt_mp;\n\tactivemask.b32 \t%gt_mm;\n"
	       "\tcvt.u64.u32 \t%gt_mmask, %gt_mm;\n");
	if (sect || conf || addr) {
		struct sb f = { 0 };

		mem_own_addr(&b, s);
		mem_figures(j, &f, sect, conf, addr);
		if (f.oom) {
			free(b.p);
			return -ENOMEM;
		}
		if (f.p)
			add_expanded(&b, f.p, uniq);
		free(f.p);
	}
	for (int i = 0; i < req->nmem; i++)
		if (req->mem[i].classes & s->cls)
			add_mem_text(&b, req->mem[i].text, s, uniq);
	sb_str(&b, "\t}\n");
	if (s->guard)
		sb_printf(&b, "$__gt%d:\n", skip);
	if (at == s->stmt && at > 0 && text[at - 1] != '\n')
		sb_str(&b, "\t");
	return add_edit(j, at, 0, &b);
}

int splice_mem(struct job *j, const struct ptx_func *f)
{
	struct ptx_mem_site *v;
	int n, rc, want = 0, bad = 0;
	const struct ptx_mem_site *first_bad = NULL;

	if (j->sm && j->sm < 70) {
		/* match.any.sync and the .sync votes came with sm_70 */
		note(j, f, "PTX for sm_%d, before sm_70's warp matches: its "
		     "gpu:mem clauses are left out", j->sm);
		return 0;
	}
	if ((rc = ptx_mem_sites(j->m, f, &v, &n)))
		return rc;
	for (int i = 0; i < n; i++) {
		bool match = false;

		for (int k = 0; k < j->req->nmem; k++)
			match |= (j->req->mem[k].classes & v[i].cls) != 0;
		if (!match)
			continue;
		want++;
		if (v[i].why && !bad++)
			first_bad = &v[i];
	}
	if (want > PTX_MEM_MAX_SITES) {
		note(j, f, "%d memory instructions, more than gpu:mem's %d: "
		     "its gpu:mem clauses are left out", want,
		     PTX_MEM_MAX_SITES);
		free(v);
		return 0;
	}
	if (bad)
		note(j, f, "%d of %d memory instructions left out of gpu:mem, "
		     "the first insn %d (%.*s): %s", bad, want, first_bad->insn,
		     (int)first_bad->op_len, j->m->text + first_bad->op,
		     first_bad->why);
	for (int i = 0; i < n && !rc; i++)
		if (!v[i].why)
			rc = splice_mem_site(j, &v[i]);
	free(v);
	return rc;
}
