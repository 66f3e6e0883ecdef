// SPDX-License-Identifier: MIT
/*
 * Inline hooks on the driver's entry points, for an agent injected into
 * a running process (-p, docs/attach.md).  The CUDA runtime already
 * holds the driver's function pointers, so the functions themselves are
 * patched: their first instructions become `jmp rel32` to a trampoline
 * page within 2 GiB, whose first stub jumps to our wrapper; the wrapper's
 * "real" pointer (agent_drv) is the second stub: the displaced
 * instructions, relocated (RIP-relative operands and rel32 branches fixed
 * up), then a jump back.  Instructions are decoded with Zydis, opened at
 * run time (next to the agent, else the system's), so the agent still
 * needs only libc for -c.
 *
 * The injector stops every thread around gputrace_arm() and moves one
 * stopped inside the displaced bytes into the trampoline.  The 5-byte
 * jump is written with one aligned 8-byte store where it fits in one
 * (function entries are 16-byte aligned in practice), and detach writes
 * the original 8 bytes back the same way while the program runs: a
 * thread sees the old or the new instruction, never half of one.  An
 * entry whose 5 bytes straddle 8 is written while stopped and never
 * restored: its wrapper passes straight through once detached (inert).
 * Trampolines are never freed (a thread may still be in one).
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

#ifndef GT_HAVE_ZYDIS
struct agent_patches agent_patches;

int agent_inline_prepare(char *err, size_t errlen)
{
	snprintf(err, errlen, "this agent was built without Zydis "
		 "(libzydis-dev): no inline hooks");
	return -ENOSYS;
}

int agent_inline_arm(void)
{
	return 0;
}

void agent_inline_disarm(void)
{
}
#else
#include <Zydis/Zydis.h>

#include "runtime/zydis_load.h"

/* Read by the injector (gputrace_arm returns its address). */
struct agent_patches agent_patches;

struct inl {
	bool atomic;			/* one aligned qword: restorable */
	uint64_t orig_q, jmp_q;		/* the aligned qword, before/after */
	uint8_t jmp5[5];
	void **real;			/* agent_drv slot */
	void *real_was;
};
static struct inl inl[AGENT_MAX_PATCHES];

static struct zydis zy;
static bool zy_ok;

static int zydis_open(char *err, size_t errlen)
{
	Dl_info di;
	int e;

	if (zy_ok)
		return 0;
	/* next to the agent first: a machine without libzydis4 gets the
	 * copy carried with the agent */
	e = zydis_load(&zy, dladdr((void *)zydis_open, &di) ? di.dli_fname :
		       NULL, "the agent", err, errlen);
	zy_ok = e == 0;
	return e;
}

/* The free page nearest to A in the gap [LO, HI), or 0 if none is
 * within reach of a rel32 jump from A (a page's worth of slack). */
static uint64_t gap_pick(uint64_t lo, uint64_t hi, uint64_t a, uint64_t pg)
{
	const uint64_t reach = (1ull << 31) - 2 * pg;
	uint64_t c;

	if (lo < 1ull << 20)
		lo = 1ull << 20;	/* above vm.mmap_min_addr */
	lo = (lo + pg - 1) & ~(pg - 1);
	hi &= ~(pg - 1);
	if (hi < lo + pg)
		return 0;
	c = hi <= a ? hi - pg : lo;	/* the end nearest to A */
	if (lo <= a && a < hi)
		c = a & ~(pg - 1);
	if ((c < a && a - c > reach) || (c > a && c - a > reach))
		return 0;
	return c;
}

/*
 * An executable page within +-2 GiB of A.  The gaps come from
 * /proc/self/maps, nearest first: the CUDA runtime reserves large
 * address ranges, and the space right under libcuda can be taken, so a
 * blind walk downwards ran out of candidates.
 */
static uint8_t *near_page(uint64_t a)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t tried[64];
	int ntried = 0;

	for (int round = 0; round < 64; round++) {
		uint64_t prev_end = 0, lo, hi, best = 0, bestd = ~0ull, c, d;
		char line[512];
		FILE *f = fopen("/proc/self/maps", "re");
		void *p;
		bool seen;

		if (!f)
			return NULL;
		for (;;) {
			bool last = !fgets(line, sizeof(line), f);

			if (last) {
				lo = prev_end;
				hi = 1ull << 47;
			} else if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo,
					  &hi) == 2) {
				uint64_t end = hi;

				hi = lo;
				lo = prev_end;
				prev_end = end;
			} else {
				continue;
			}
			c = gap_pick(lo, hi, a, pg);
			d = c > a ? c - a : a - c;
			seen = false;
			for (int i = 0; i < ntried; i++)
				seen |= tried[i] == c;
			if (c && !seen && d < bestd) {
				best = c;
				bestd = d;
			}
			if (last)
				break;
		}
		fclose(f);
		if (!best)
			return NULL;
		p = mmap((void *)best, (size_t)pg,
			 PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
		if (p == (void *)best)
			return p;
		if (p != MAP_FAILED)	/* a kernel without NOREPLACE */
			munmap(p, (size_t)pg);
		tried[ntried++] = best;	/* another thread took it */
	}
	return NULL;
}

static bool fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static void put_absjmp(uint8_t *p, uint64_t to)
{
	p[0] = 0xff;		/* jmp *0(%rip) */
	p[1] = 0x25;
	memset(p + 2, 0, 4);
	memcpy(p + 6, &to, 8);
}

/*
 * Relocate the instructions covering the first 5 bytes of A into T (the
 * trampoline's second stub, at T_ADDR).  Fills P's lengths and offsets.
 * 0, or -EINVAL with the reason in ERR.
 */
static int relocate(uint64_t a, uint8_t *t, struct agent_patch *p,
		    char *err, size_t errlen)
{
	const uint8_t *src = (const uint8_t *)a;
	size_t at = 0, tat = 0;

	while (at < 5) {
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		uint64_t ip = a + at, tip = (uint64_t)(t + tat);

		if (p->n >= 8 ||
		    ZYAN_FAILED(zy.decode(&zy.dec, src + at, 15, &in, ops))) {
			snprintf(err, errlen, "cannot decode +%zu", at);
			return -EINVAL;
		}
		if (in.mnemonic == ZYDIS_MNEMONIC_RET ||
		    in.mnemonic == ZYDIS_MNEMONIC_INT3 ||
		    in.mnemonic == ZYDIS_MNEMONIC_UD2 ||
		    (in.mnemonic == ZYDIS_MNEMONIC_JMP && at + in.length < 5)) {
			snprintf(err, errlen, "shorter than a jump (ends at "
				 "+%zu)", at + in.length);
			return -EINVAL;
		}
		memcpy(t + tat, src + at, in.length);
		if (in.attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
			const struct ZydisDecodedInstructionRawImm_ *im = &in.raw.imm[0];
			int64_t tgt, nd;

			if (im->is_relative) {
				if (im->size != 32) {
					snprintf(err, errlen, "a short branch "
						 "at +%zu", at);
					return -EINVAL;
				}
				tgt = (int64_t)(ip + in.length) + im->value.s;
				nd = tgt - (int64_t)(tip + in.length);
				if (!fits32(nd))
					goto far;
				int32_t v = (int32_t)nd;
				memcpy(t + tat + im->offset, &v, 4);
			} else if (in.raw.disp.size == 32) {
				/* RIP-relative memory operand */
				tgt = (int64_t)(ip + in.length) +
				      in.raw.disp.value;
				nd = tgt - (int64_t)(tip + in.length);
				if (!fits32(nd))
					goto far;
				int32_t v = (int32_t)nd;
				memcpy(t + tat + in.raw.disp.offset, &v, 4);
			} else {
				snprintf(err, errlen, "a relative operand at "
					 "+%zu", at);
				return -EINVAL;
			}
		}
		p->off[p->n] = (uint8_t)at;
		p->toff[p->n] = (uint8_t)(t + tat - (uint8_t *)p->tramp);
		p->n++;
		at += in.length;
		tat += in.length;
	}
	p->len = (uint8_t)at;
	put_absjmp(t + tat, a + at);
	return 0;
far:
	snprintf(err, errlen, "a RIP-relative target out of reach at +%zu",
		 at);
	return -EINVAL;
}

/* Hook the function at A with WRAPPER; SLOT, if any, gets the trampoline. */
static int prepare_one(uint64_t a, void *wrapper, void **slot, char *err,
		       size_t errlen)
{
	struct agent_patches *ps = &agent_patches;
	struct agent_patch *p;
	uint8_t *page;
	uint64_t q, base = a & ~7ull;
	int32_t rel;
	int r;

	for (uint32_t i = 0; i < ps->n; i++)
		if (ps->v[i].addr == a)
			return 0;	/* an alias of one we hooked */
	if (ps->n >= AGENT_MAX_PATCHES) {
		snprintf(err, errlen, "too many entry points");
		return -ENOSPC;
	}
	page = near_page(a);
	if (!page) {
		snprintf(err, errlen, "no free page within 2 GiB");
		return -ENOMEM;
	}
	p = &ps->v[ps->n];
	memset(p, 0, sizeof(*p));
	p->addr = a;
	p->tramp = (uint64_t)page;
	put_absjmp(page, (uint64_t)wrapper);	/* stub 1: the wrapper */
	r = relocate(a, page + 16, p, err, errlen);	/* stub 2: the real */
	if (r) {
		munmap(page, (size_t)sysconf(_SC_PAGESIZE));
		return r;
	}
	mprotect(page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC);
	rel = (int32_t)((int64_t)(uint64_t)page - (int64_t)(a + 5));
	inl[ps->n].jmp5[0] = 0xe9;
	memcpy(inl[ps->n].jmp5 + 1, &rel, 4);
	inl[ps->n].atomic = (a & 7) <= 3;
	if (inl[ps->n].atomic) {
		memcpy(&q, (void *)base, 8);
		inl[ps->n].orig_q = q;
		memcpy((uint8_t *)&q + (a - base), inl[ps->n].jmp5, 5);
		inl[ps->n].jmp_q = q;
	}
	inl[ps->n].real = slot;
	if (slot) {
		inl[ps->n].real_was = *slot;
		*slot = page + 16;
	}
	ps->n++;
	return 0;
}

/* The driver's address for hook H: what cuGetProcAddress hands the
 * runtime (its ABI version in the hook's range, the default-stream kind
 * of the hook), else 0. */
static uint64_t proc_addr(const struct agent_hook *h, int drv_ver)
{
	cuuint64_t fl = h->ptsz > 0 ?
		CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM :
		CU_GET_PROC_ADDRESS_LEGACY_STREAM;
	int ver = drv_ver < h->maxver ? drv_ver : h->maxver - 1;
	CUdriverProcAddressQueryResult st;
	void *p = NULL;

	if (ver < h->minver)
		return 0;
	if (agent_drv.get_proc_v2) {
		if (agent_drv.get_proc_v2(h->proc, &p, ver, fl, &st))
			return 0;
	} else if (agent_drv.get_proc &&
		   agent_drv.get_proc(h->proc, &p, ver, fl)) {
		return 0;
	}
	return (uint64_t)p;
}

static bool prepared(void **slot)
{
	for (uint32_t i = 0; i < agent_patches.n; i++)
		if (inl[i].real == slot)
			return true;
	return false;
}

int agent_inline_prepare(char *err, size_t errlen)
{
	int drv_ver = 12000, nlaunch = 0;
	char why[160], first[200] = "";

	if (agent_drv_init()) {
		snprintf(err, errlen, "libcuda.so.1 is not loaded");
		return -ENOENT;
	}
	if (zydis_open(err, errlen))
		return -ENOENT;
	if (agent_drv.driver_get_version)
		agent_drv.driver_get_version(&drv_ver);
	for (int i = 0; i < agent_nhooks; i++) {
		const struct agent_hook *h = &agent_hooks[i];
		uint64_t a, exp;
		bool launch;

		/* the runtime's pointers all come from libcuda's code */
		if (h->real == (void **)&agent_drv.get_proc ||
		    h->real == (void **)&agent_drv.get_proc_v2 || !*h->real)
			continue;
		/* an earlier attach made its trampoline: nothing to do */
		if (prepared(h->real)) {
			nlaunch += !strncmp(h->sym, "cuLaunch", 8);
			continue;
		}
		/* what cuGetProcAddress hands out (the runtime's pointers),
		 * else the export; its trampoline is the real one */
		launch = !strncmp(h->sym, "cuLaunch", 8);
		exp = (uint64_t)*h->real;
		a = proc_addr(h, drv_ver);
		if (!a)
			a = exp;
		if (a == (uint64_t)h->wrapper)
			continue;
		if (prepare_one(a, h->wrapper, h->real, why, sizeof(why))) {
			agent_report("cannot hook %s: %s", h->sym, why);
			if (!first[0])
				snprintf(first, sizeof(first), " (%s: %s)",
					 h->sym, why);
			continue;
		}
		nlaunch += launch;
		/* a different export of a launch (what -lcuda programs call)
		 * too; agent_launch keeps a launch from being seen twice when
		 * one calls the other */
		if (launch && exp != a &&
		    prepare_one(exp, h->wrapper, NULL, why, sizeof(why)))
			agent_report("cannot hook %s (export): %s", h->sym, why);
	}
	if (!nlaunch) {
		snprintf(err, errlen, "no kernel launch entry point of the "
			 "driver could be hooked%s", first);
		return -ENOSYS;
	}
	return 0;
}

/* Write the jump (ON) or the original bytes of patch I. */
static int store(uint32_t i, bool on)
{
	uint64_t a = agent_patches.v[i].addr, pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t lo = a & ~(pg - 1), hi = (a + 8 + pg - 1) & ~(pg - 1);

	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -errno;
	if (inl[i].atomic)
		__atomic_store_n((uint64_t *)(a & ~7ull),
				 on ? inl[i].jmp_q : inl[i].orig_q,
				 __ATOMIC_SEQ_CST);
	else
		memcpy((void *)a, inl[i].jmp5, 5);	/* all stopped */
	mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
	return 0;
}

/* No lock, no allocation: every other thread may be stopped anywhere. */
int agent_inline_arm(void)
{
	struct agent_patches *ps = &agent_patches;
	int n = 0;

	for (uint32_t i = 0; i < ps->n; i++) {
		if (ps->v[i].armed)
			continue;
		if (store(i, true))
			continue;
		ps->v[i].armed = 1;
		n++;
	}
	return n;
}

void agent_inline_disarm(void)
{
	struct agent_patches *ps = &agent_patches;

	/* the others stay, inert: their wrappers pass through */
	for (uint32_t i = 0; i < ps->n; i++)
		if (ps->v[i].armed && inl[i].atomic && !store(i, false))
			ps->v[i].armed = 0;
}
#endif /* GT_HAVE_ZYDIS */
#endif /* GT_AGENT_SO */
