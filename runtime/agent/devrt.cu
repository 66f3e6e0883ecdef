// SPDX-License-Identifier: MIT
/*
 * The device runtime: what lowered probes call for maps, aggregations and
 * printf.  Built with `nvcc -ptx -rdc=true` at build time and embedded as
 * text (runtime/agent/devrt_embed.sh); the agent splices it into every
 * instrumented module ahead of the probe functions.  Layout and protocol:
 * gpucode/devrt.h and docs/device-runtime.md.
 *
 * Only sm_70+ instructions (match.any.sync, fns, shfl.sync, 64-bit
 * atomics): the text must assemble for every target sm_75 .. sm_90a.
 * Entry points take u64 arguments only, so the lowering can call them
 * with .b64 parameters:
 *
 *	__gt_rt_agg0(ctx, map, val, op)		aggregation, map without key
 *	__gt_rt_agg8(ctx, map, key, val, op)	key of 1..8 bytes
 *	__gt_rt_agg(ctx, map, key, val, op)	any key (op: enum devrt_op)
 *	__gt_rt_lookup(ctx, map, key) -> value address or 0
 *	__gt_rt_update(ctx, map, key, value address)
 *	__gt_rt_delete(ctx, map, key)
 *	__gt_rt_printf(ctx, fmt, args address, size)
 *	__gt_rt_read(ctx, dst address, size, device address)
 *	__gt_rt_update_u, __gt_rt_printf_u, __gt_rt_read_u: the same, called
 *	by every lane of a group with the same arguments (a gpu:mem
 *	clause, which its lanes run together: docs/device-runtime.md)
 *
 * ctx is the generic address of the struct devrt_ctx; keys and values are
 * generic addresses of 8-byte aligned buffers (the probe's stack).
 */
#include "gpucode/devrt.h"

typedef unsigned long long u64;
typedef long long s64;
typedef unsigned int u32;

#define RT extern "C" __device__ __noinline__
#define IN static __device__ __forceinline__

IN u32 rd_smid(void)
{
	u32 r;

	asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
	return r;
}

IN u32 rd_laneid(void)
{
	u32 r;

	asm("mov.u32 %0, %%laneid;" : "=r"(r));
	return r;
}

IN u64 vload(const u64 *p)
{
	return *(const volatile u64 *)p;
}

IN void vstore(u64 *p, u64 v)
{
	*(volatile u64 *)p = v;
}

/*
 * Warp-uniform calls (DEVRT_OP_F_UNI, the _u entry points): every lane
 * of the group runs the same code on the same values, so no lane waits
 * for another.  Reads are the same for all; a write of the same value
 * by all is harmless; atomics are made by the lowest lane alone,
 * predicated rather than branched to (a branch would let the lanes part),
 * and what they return is handed to every lane by a shuffle.
 */
IN bool uni_me(void)
{
	return rd_laneid() == (u32)__ffs(__activemask()) - 1;
}

/* "OP [P], V" (a red) in the lanes where ME is set: no branch. */
#define RED_IF(op, me, p, v)						\
	asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %0, 0;\n\t"	\
		     "@q " op " [%1], %2;\n\t}"				\
		     :: "r"((u32)(me)), "l"(p), "l"(v) : "memory")

/* *P += V: under UNI by the lowest lane only. */
IN void add_once(bool uni, u64 *p, u64 v)
{
	if (uni)
		RED_IF("red.add.u64", uni_me(), p, v);
	else
		atomicAdd(p, v);
}

/* *P = V for a publish: under UNI by the lowest lane only. */
IN void exch_once(bool uni, u64 *p, u64 v)
{
	if (!uni) {
		atomicExch(p, v);
		return;
	}
	asm volatile("{\n\t.reg .pred q;\n\t.reg .b64 o;\n\t"
		     "setp.ne.u32 q, %0, 0;\n\t"
		     "@q atom.exch.b64 o, [%1], %2;\n\t}"
		     :: "r"((u32)uni_me()), "l"(p), "l"(v) : "memory");
}

/* min or max of *P and V: under UNI by the lowest lane only. */
IN void minmax_once(bool uni, u64 *p, u64 v, bool max, bool sgn)
{
	if (!uni && max)
		sgn ? (void)atomicMax((s64 *)p, (s64)v) : (void)atomicMax(p, v);
	else if (!uni)
		sgn ? (void)atomicMin((s64 *)p, (s64)v) : (void)atomicMin(p, v);
	else if (max && sgn)
		RED_IF("red.max.s64", uni_me(), p, v);
	else if (max)
		RED_IF("red.max.u64", uni_me(), p, v);
	else if (sgn)
		RED_IF("red.min.s64", uni_me(), p, v);
	else
		RED_IF("red.min.u64", uni_me(), p, v);
}

IN u64 shfl64(u64 v, u32 src, u32 mask)
{
	u32 lo = __shfl_sync(mask, (u32)v, src);
	u32 hi = __shfl_sync(mask, (u32)(v >> 32), src);

	return (u64)hi << 32 | lo;
}

/* atomicCAS, or under UNI the lowest lane's, its result for all. */
IN u64 cas(bool uni, u64 *p, u64 cmp, u64 v)
{
	u32 act, lead;
	u64 r = cmp;

	if (!uni)
		return atomicCAS(p, cmp, v);
	act = __activemask();
	lead = __ffs(act) - 1;
	asm volatile("{\n\t.reg .pred q;\n\tsetp.eq.u32 q, %1, %2;\n\t"
		     "@q atom.cas.b64 %0, [%3], %4, %5;\n\t}"
		     : "+l"(r) : "r"(rd_laneid()), "r"(lead), "l"(p), "l"(cmp),
		       "l"(v) : "memory");
	return shfl64(r, lead, act);
}

/*
 * Reads of the context and the descriptors, which stay fixed while
 * kernels run: read-only path, kept in L1 (evict_last).  Every warp of
 * every instrumented kernel reads the same few lines; a streaming kernel
 * would otherwise evict them and send each warp to one L2 line.
 */
IN u32 cld32(const void *p)
{
	u32 v;

	asm("ld.global.nc.L1::evict_last.u32 %0, [%1];"
	    : "=r"(v) : "l"((u64)__cvta_generic_to_global(p)));
	return v;
}

IN const struct devrt_map_desc *desc_of(u64 ctx, u64 map)
{
	const struct devrt_ctx *c = (const struct devrt_ctx *)ctx;

	if (!ctx || map >= cld32(&c->nmaps))
		return 0;
	return (const struct devrt_map_desc *)(ctx + DEVRT_CTX_SIZE +
					       map * DEVRT_DESC_SIZE);
}

/* Word I of a KS-byte key, bytes past the end zeroed. */
IN u64 key_word(const u64 *key, u32 i, u32 ks)
{
	u64 w = key[i];
	u32 rest = ks - i * 8;

	if (rest < 8)
		w &= (1ull << (rest * 8)) - 1;
	return w;
}

IN u64 mix64(u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

IN u64 key_hash(const u64 *key, u32 ks)
{
	u64 h = 0xcbf29ce484222325ull;

	for (u32 i = 0; i * 8 < ks; i++)
		h = (h ^ key_word(key, i, ks)) * 0x100000001b3ull;
	return mix64(h);
}

/* The identity of a min/max: where a fresh value starts. */
IN u64 minmax_init(const struct devrt_map_desc *d)
{
	bool sgn = d->flags & DEVRT_F_SIGNED;

	if (d->kind == DEVRT_K_MIN)
		return sgn ? 0x7fffffffffffffffull : ~0ull;
	return sgn ? 0x8000000000000000ull : 0;
}

/* A fresh slot's value is zero (the host's image): min/max start at
 * their identity instead. */
IN void value_init(const struct devrt_map_desc *d, u64 *v)
{
	if (d->kind == DEVRT_K_MIN || d->kind == DEVRT_K_MAX)
		v[0] = minmax_init(d);
}

IN void value_reset(const struct devrt_map_desc *d, u64 *v)
{
	for (u32 i = 0; i < d->nwords; i++)
		v[i] = 0;
	if (d->kind == DEVRT_K_MIN || d->kind == DEVRT_K_MAX)
		v[0] = minmax_init(d);
}

IN u64 shard_base(const struct devrt_map_desc *d)
{
	return d->base + (u64)(rd_smid() % d->nshards) * d->shard_bytes;
}

/*
 * The slot holding KEY (hash H) in the shard at SB, inserted when INSERT
 * and missing; NULL when missing (or the table is full).  A new slot is
 * claimed by a CAS from empty to busy, filled, then published with its
 * hash; readers that meet a busy slot wait for it.  UNI: a warp-uniform
 * call (above).
 */
extern "C" __device__ __noinline__ u64 *
__gt_rt_table_slot(const struct devrt_map_desc *d, u64 sb, const u64 *key,
		   u64 h, bool insert, bool uni)
{
	u32 cap = d->capacity, ks = d->key_size, kw = (ks + 7) / 8;
	u64 want = h | DEVRT_SLOT_FULL;
	u64 slots = sb + DEVRT_LINE;

	for (u32 i = 0; i < cap; i++) {
		u64 *s = (u64 *)(slots + (u64)((u32)(h + i) & (cap - 1)) *
				 d->slot_bytes);
		u64 st = vload(s);

		if (st == DEVRT_SLOT_EMPTY) {
			if (!insert)
				return 0;
			st = cas(uni, s, DEVRT_SLOT_EMPTY, DEVRT_SLOT_BUSY);
			if (st == DEVRT_SLOT_EMPTY) {
				for (u32 k = 0; k < kw; k++)
					s[2 + k] = key_word(key, k, ks);
				value_init(d, s + 2 + kw);
				__threadfence();
				exch_once(uni, s, want);
				return s;
			}
		}
		while (st == DEVRT_SLOT_BUSY)
			st = vload(s);
		if (st != want)
			continue;
		__threadfence();
		u32 k = 0;
		while (k < kw && vload(s + 2 + k) == key_word(key, k, ks))
			k++;
		if (k == kw)
			return s;
	}
	return 0;
}

/* The slot for KEY in this SM's shard (INSERT: create it), or NULL. */
IN u64 *find_slot(const struct devrt_map_desc *d, u64 key, bool insert,
		  bool uni)
{
	u64 sb = shard_base(d);
	u64 *s;

	if (!d->key_size)
		return (u64 *)(sb + DEVRT_LINE);
	s = __gt_rt_table_slot(d, sb, (const u64 *)key, key_hash((const u64 *)key,
							 d->key_size), insert, uni);
	if (!s && insert)
		add_once(uni, (u64 *)sb, 1ull);
	return s;
}

/*
 * Mark a slot live.  A cached (L1) read, not a volatile one: every warp
 * leader passes here, and an uncached read would put one L2 round trip
 * on the counter's own line before each atomic.  A stale 0 only costs a
 * store, which evicts the line from this SM's L1, so each SM stores at
 * most about once.
 */
IN void set_live(u64 *slot)
{
	if (!*(const u64 *)(slot + 1))
		slot[1] = 1;
}

IN u32 hist_index(s64 n)
{
	if (n < 0)
		return 0;
	if (n == 0)
		return 1;
	if (n >= (1ll << 31))
		return 33;
	return 2 + (63 - __clzll(n));
}

IN u32 lhist_index(s64 n, const struct devrt_map_desc *d)
{
	u32 last = d->nwords - 2;	/* the sum is the last word */
	u64 i;

	if (n < d->lmin)
		return 0;
	if (n >= d->lmax)
		return last;
	i = 1 + (u64)(n - d->lmin) / (u64)d->lstep;
	return i > last ? last : (u32)i;
}

IN u64 combine(u64 op, bool sgn, u64 a, u64 b)
{
	switch (op) {
	case DEVRT_OP_MIN:
		if (sgn)
			return (s64)b < (s64)a ? b : a;
		return b < a ? b : a;
	case DEVRT_OP_MAX:
		if (sgn)
			return (s64)b > (s64)a ? b : a;
		return b > a ? b : a;
	default:
		return a + b;
	}
}

/*
 * Reduce V over the lanes of GRP (which all run this with the same GRP):
 * a scan over the lanes' ranks in GRP, each step taking the value of the
 * lane S ranks up, so the lowest lane ends with the whole group's.
 */
IN u64 group_reduce(u32 grp, u32 lane, u64 op, bool sgn, u64 v)
{
	for (u32 s = 1; s < 32; s <<= 1) {
		u32 src = __fns(grp, lane, s + 1);
		u64 o = shfl64(v, src < 32 ? src : lane, grp);

		if (src < 32)
			v = combine(op, sgn, v, o);
	}
	return v;
}

/*
 * The leader's update of value V for a group of N lanes.  N 0: a
 * warp-uniform call (DEVRT_OP_F_UNI), whose every lane comes here and
 * whose lowest makes one update.
 */
extern "C" __device__ __noinline__ void
__gt_rt_apply(const struct devrt_map_desc *d, u64 *s, u64 op, u32 w, u32 n,
	      u64 acc)
{
	bool sgn = d->flags & DEVRT_F_SIGNED, uni = !n;
	u64 *v = s + 2 + (d->key_size + 7) / 8;

	if (uni)
		n = 1;
	set_live(s);
	switch (op) {
	case DEVRT_OP_COUNT:
		add_once(uni, v, (u64)n);
		break;
	case DEVRT_OP_SUM:
		add_once(uni, v, acc);
		break;
	case DEVRT_OP_MIN:
	case DEVRT_OP_MAX:
		minmax_once(uni, v, acc, op == DEVRT_OP_MAX, sgn);
		set_live(v);
		break;
	case DEVRT_OP_AVG:
	case DEVRT_OP_STATS:
		add_once(uni, v, (u64)n);
		add_once(uni, v + 1, acc);
		break;
	case DEVRT_OP_HIST:
	case DEVRT_OP_LHIST:
		add_once(uni, v + w, (u64)n);
		break;
	case DEVRT_OP_SMLOAD:
		add_once(uni, v + w, acc);
		break;
	}
}

/* The value word an aggregation adds to (buckets, SMs), or ~0: none. */
IN u32 agg_word(const struct devrt_map_desc *d, u64 op, u64 val)
{
	u32 w = 0;

	u32 kind = d ? cld32(&d->kind) : DEVRT_K_NONE;

	if (kind == DEVRT_K_NONE || kind == DEVRT_K_PLAIN)
		return ~0u;
	if (op == DEVRT_OP_HIST)
		w = hist_index((s64)val);
	else if (op == DEVRT_OP_LHIST)
		w = lhist_index((s64)val, d);
	else if (op == DEVRT_OP_SMLOAD)
		w = rd_smid();
	return w < cld32(&d->nwords) ? w : ~0u;
}

IN bool counts_only(u64 op)
{
	return op == DEVRT_OP_COUNT || op == DEVRT_OP_HIST ||
	       op == DEVRT_OP_LHIST;
}

/*
 * The active lanes holding the same V as this one.  Most calls have one
 * value across the warp (a count, a sum, smload's SM): a shuffle and a
 * vote say so, cheaper than match.any, which is left for the rest.
 */
IN u32 uniform_group(u64 v)
{
	u32 act = __activemask();
	u64 first = __shfl_sync(act, v, __ffs(act) - 1);

	if (__all_sync(act, v == first))
		return act;
	return __match_any_sync(act, v);
}

/* The lanes adding to the same V as this one: itself alone on a lone
 * lane's path (DEVRT_OP_F_ONE) and in a warp-uniform call (each lane its
 * own group, __gt_rt_apply lets the lowest update), else those match.any
 * finds. */
IN u32 same_group(u64 op, u64 v)
{
	if (op & (DEVRT_OP_F_ONE | DEVRT_OP_F_UNI))
		return 1u << rd_laneid();
	return __match_any_sync(__activemask(), v);
}

/*
 * The lanes of GRP update the same word: the lowest applies their
 * combined update to slot S (the shard's slot when S is 0: found only by
 * the lane that applies).  OP is the call's, its flags included.
 */
IN void group_apply(const struct devrt_map_desc *d, u64 *s, u64 op, u32 w,
		    u32 grp, u64 val)
{
	u32 lane = rd_laneid(), n = __popc(grp);
	u64 acc = val;

	if (n > 1 && !counts_only(op & DEVRT_OP_KIND))
		acc = group_reduce(grp, lane, op & DEVRT_OP_KIND,
				   d->flags & DEVRT_F_SIGNED, val);
	/* warp-uniform: every lane comes, n 0 says so */
	if (op & DEVRT_OP_F_UNI)
		n = 0;
	if (lane == __ffs(grp) - 1)
		__gt_rt_apply(d, s ? s : (u64 *)(shard_base(d) + DEVRT_LINE),
			      op & DEVRT_OP_KIND, w, n, acc);
}

/*
 * hist, lhist with DEVRT_OP_F_SUM (--metrics): VAL adds to the sum word
 * after the buckets too (devrt.h), on slot S (0: this SM's shard's).
 * Each lane adds its own: a reduction over the lanes of a slot took two
 * more registers in every kernel instrumented with a keyed hist
 * (tests/unit/test_lower.c's budget), and a red the lane does not wait
 * for is cheap next to the slot's lookup.  Callers compute the bucket
 * again after the slot's lookup and this add, and clear the flag on
 * every path: the budget's saxpy with a keyed hist takes 15 registers
 * more so, with the sum or without; keeping the bucket across the
 * lookup (as before the sum) took 16, clearing the flag only where it
 * was set 18.
 */
IN void hist_sum(const struct devrt_map_desc *d, u64 *s, u64 val, u64 op)
{
	if (!s)
		s = (u64 *)(shard_base(d) + DEVRT_LINE);
	add_once(op & DEVRT_OP_F_UNI,
		 s + 2 + (d->key_size + 7) / 8 + cld32(&d->nwords) - 1, val);
}

/*
 * Aggregation on a map without key: lanes adding to the same (map, word)
 * combine, the lowest of them updates the shard.
 */
RT void __gt_rt_agg0(u64 ctx, u64 map, u64 val, u64 op)
{
	const struct devrt_map_desc *d = desc_of(ctx, map);
	u32 w, grp;

	if (agg_word(d, op & DEVRT_OP_KIND, val) == ~0u)
		return;
	if (op & DEVRT_OP_F_SUM)
		hist_sum(d, 0, val, op);
	w = agg_word(d, op & DEVRT_OP_KIND, val);
	grp = op & (DEVRT_OP_F_ONE | DEVRT_OP_F_UNI) ? 1u << rd_laneid() :
	      uniform_group((u64)map << 32 | w);
	group_apply(d, 0, op, w, grp, val);
}

/*
 * Aggregation on a keyed map: every lane finds (or inserts) its key's
 * slot, then lanes adding to the same counter (same slot and word: the
 * address is exact, no hash collisions) combine and the lowest of them
 * updates it.  Finding the slot is reads of lines the warp shares; the
 * atomics are what is worth saving.
 */
RT void __gt_rt_agg(u64 ctx, u64 map, u64 key, u64 val, u64 op)
{
	const struct devrt_map_desc *d = desc_of(ctx, map);
	u32 w, grp;
	u64 *s;

	if (agg_word(d, op & DEVRT_OP_KIND, val) == ~0u)
		return;
	if (!d->key_size) {
		__gt_rt_agg0(ctx, map, val, op);
		return;
	}
	s = find_slot(d, key, true, op & DEVRT_OP_F_UNI);
	if (!s)
		return;
	if (op & DEVRT_OP_F_SUM)
		hist_sum(d, s, val, op);
	w = agg_word(d, op & DEVRT_OP_KIND, val);
	grp = same_group(op, (u64)s + w);
	group_apply(d, s, op, w, grp, val);
}

/*
 * The table of a map whose key is one word (key_size <= 8): the key's
 * hash is a bijection of it, so a published state nearly names the key
 * and the probe loop stays small.  Without a fence on the hit path a
 * stale key read can only miss and insert the key twice; the host merges
 * equal keys (devrt_map_foreach).
 */
IN u64 *table8(const struct devrt_map_desc *d, u64 sb, u64 k, bool uni)
{
	u32 cap = d->capacity;
	u64 h = mix64(k ^ 0x5bd1e9955bd1e995ull), want = h | DEVRT_SLOT_FULL;

	for (u32 i = 0; i < cap; i++) {
		u64 *s = (u64 *)(sb + DEVRT_LINE + (u64)(((u32)h + i) &
				 (cap - 1)) * d->slot_bytes);
		u64 st = vload(s);

		if (st == DEVRT_SLOT_EMPTY) {
			st = cas(uni, s, DEVRT_SLOT_EMPTY, DEVRT_SLOT_BUSY);
			if (st == DEVRT_SLOT_EMPTY) {
				s[2] = k;
				value_init(d, s + 3);
				__threadfence();
				exch_once(uni, s, want);
				return s;
			}
		}
		while (st == DEVRT_SLOT_BUSY)
			st = vload(s);
		if (st == want && vload(s + 2) == k)
			return s;
	}
	add_once(uni, (u64 *)sb, 1ull);
	return 0;
}

/* Aggregation on a map with a key of at most 8 bytes. */
RT void __gt_rt_agg8(u64 ctx, u64 map, u64 key, u64 val, u64 op)
{
	const struct devrt_map_desc *d = desc_of(ctx, map);
	u32 w, grp;
	u64 *s, k;

	if (agg_word(d, op & DEVRT_OP_KIND, val) == ~0u || !d->key_size ||
	    d->key_size > 8)
		return;
	k = key_word((const u64 *)key, 0, d->key_size);
	/* two copies, each with its CAS: fewer registers than a choice */
	if (op & DEVRT_OP_F_UNI)
		s = table8(d, shard_base(d), k, true);
	else
		s = table8(d, shard_base(d), k, false);
	if (!s)
		return;
	if (op & DEVRT_OP_F_SUM)
		hist_sum(d, s, val, op);
	w = agg_word(d, op & DEVRT_OP_KIND, val);
	grp = same_group(op, (u64)s + w);
	group_apply(d, s, op, w, grp, val);
}

RT u64 __gt_rt_lookup(u64 ctx, u64 map, u64 key)
{
	const struct devrt_map_desc *d = desc_of(ctx, map);
	u64 *s;

	if (!d || d->kind == DEVRT_K_NONE)
		return 0;
	s = find_slot(d, key, false, false);
	if (!s || !vload(s + 1))
		return 0;
	return (u64)(s + 2 + (d->key_size + 7) / 8);
}

IN void update(u64 ctx, u64 map, u64 key, u64 val, bool uni)
{
	const struct devrt_map_desc *d = desc_of(ctx, map);
	const u64 *src = (const u64 *)val;
	u32 vs, i;
	u64 *s, *v;

	if (!d || d->kind == DEVRT_K_NONE)
		return;
	s = find_slot(d, key, true, uni);
	if (!s)
		return;
	v = s + 2 + (d->key_size + 7) / 8;
	vs = d->value_size;
	for (i = 0; i < d->nwords; i++)
		vstore(v + i, i * 8 < vs ? key_word(src, i, vs) : 0);
	__threadfence();
	set_live(s);
}

RT void __gt_rt_update(u64 ctx, u64 map, u64 key, u64 val)
{
	update(ctx, map, key, val, false);
}

RT void __gt_rt_update_u(u64 ctx, u64 map, u64 key, u64 val)
{
	update(ctx, map, key, val, true);
}

RT void __gt_rt_delete(u64 ctx, u64 map, u64 key)
{
	const struct devrt_map_desc *d = desc_of(ctx, map);
	u64 *s;

	if (!d || d->kind == DEVRT_K_NONE)
		return;
	s = find_slot(d, key, false, false);
	if (!s)
		return;
	vstore(s + 1, 0);
	value_reset(d, s + 2 + (d->key_size + 7) / 8);
}

/*
 * SIZE bytes at device address SRC into DST (zeroed by the caller) when
 * they lie inside one allocation of the current table and are aligned
 * (a misaligned or unmapped load would fault the program's context);
 * else counted in the context and left 0.
 */
IN void dev_read(u64 ctx, u64 dst, u64 size, u64 src, bool uni)
{
	struct devrt_ctx *c = (struct devrt_ctx *)ctx;
	const u64 *t;
	u64 at, n, lo = 0, hi;

	if (!ctx)
		return;
	at = vload((const u64 *)&c->allocs);
	if (!at || (size != 1 && size != 2 && size != 4 && size != 8) ||
	    (src & (size - 1)))
		goto bad;
	t = (const u64 *)(at + DEVRT_LINE +
			  (u64)(*(const volatile u32 *)at & 1) * DEVRT_ALLOC_TABLE);
	n = vload(t);
	hi = n < DEVRT_ALLOC_CAP ? n : DEVRT_ALLOC_CAP;
	/* the last allocation starting at or below src */
	while (lo < hi) {
		u64 mid = (lo + hi) / 2;

		if (vload(t + 2 + 2 * mid) <= src)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || src + size > vload(t + 3 + 2 * (lo - 1)))
		goto bad;
	switch (size) {
	case 1:
		*(unsigned char *)dst = *(const volatile unsigned char *)src;
		break;
	case 2:
		*(unsigned short *)dst = *(const volatile unsigned short *)src;
		break;
	case 4:
		*(u32 *)dst = *(const volatile u32 *)src;
		break;
	default:
		*(u64 *)dst = *(const volatile u64 *)src;
	}
	return;
bad:
	add_once(uni, (u64 *)&c->bad_reads, 1ull);
}

RT void __gt_rt_read(u64 ctx, u64 dst, u64 size, u64 src)
{
	dev_read(ctx, dst, size, src, false);
}

RT void __gt_rt_read_u(u64 ctx, u64 dst, u64 size, u64 src)
{
	dev_read(ctx, dst, size, src, true);
}

IN void dev_printf(u64 ctx, u64 fmt, u64 args, u64 size, bool uni)
{
	const struct devrt_ctx *c = (const struct devrt_ctx *)ctx;
	u64 *r, *data, h, t, old, len, cap, m;
	const u64 *src = (const u64 *)args;

	if (!ctx || !c->nrings)
		return;
	cap = c->ring_bytes;
	m = cap - 1;
	/* header words: head, tail, drops (struct devrt_ring_hdr) */
	r = (u64 *)(c->rings + (u64)(rd_smid() % c->nrings) *
		    (DEVRT_LINE + cap));
	data = (u64 *)((u64)r + DEVRT_LINE);
	len = DEVRT_REC_HDR + ((size + 7) & ~7ull);
	h = vload(&r[0]);
	for (;;) {
		t = vload(&r[1]);
		if (len > cap || h + len - t > cap) {
			add_once(uni, &r[2], 1ull);
			return;
		}
		old = cas(uni, &r[0], h, h + len);
		if (old == h)
			break;
		h = old;
	}
	data[((h + 8) & m) / 8] = fmt | size << 32;
	for (u64 i = 0; i * 8 < size; i++)
		data[((h + DEVRT_REC_HDR + i * 8) & m) / 8] =
			key_word(src, (u32)i, (u32)size);
	__threadfence();
	vstore(&data[(h & m) / 8], h ^ DEVRT_SEQ_KEY);
}

RT void __gt_rt_printf(u64 ctx, u64 fmt, u64 args, u64 size)
{
	dev_printf(ctx, fmt, args, size, false);
}

RT void __gt_rt_printf_u(u64 ctx, u64 fmt, u64 args, u64 size)
{
	dev_printf(ctx, fmt, args, size, true);
}
