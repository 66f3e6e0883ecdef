// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: raw host eBPF through gpucode/hbpf.c as the agent
 * runs host clauses (docs/hostpath.md): hbpf_verify, then hbpf_run when
 * accepted, with five maps (keyed, wider key, two-word values, the
 * 72-byte kernel names value, the events ring) behind a small backend,
 * and a pt_regs-sized context.  A verified program must never touch
 * memory outside its stack, context and values (ASan), nor run forever.
 * Then the JIT (gpucode/hbpf_jit.c) against the interpreter from the
 * same state on one stack: the same error, r0, stack and maps, and no
 * byte written around the stack; a difference aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/hbpf.h"
#include "gpucode/hbpf_int.h"
#include "gpucode/hbpf_jit.h"

static const struct hbpf_map maps[] = {
	{ 8, 8, false }, { 16, 8, false }, { 8, 16, false }, { 8, 72, false },
	{ 0, 0, true },
};
#define NMAPS ((int)(sizeof(maps) / sizeof(maps[0])))
#define SLOTS 4

struct backend {
	uint8_t keys[NMAPS][SLOTS][16];
	uint8_t vals[NMAPS][SLOTS][72];
	int used[NMAPS];
	uint8_t out[256];
};

static int slot(struct backend *b, int map, const void *key, int insert)
{
	for (int i = 0; i < b->used[map]; i++)
		if (!memcmp(b->keys[map][i], key, maps[map].key_size))
			return i;
	if (!insert || b->used[map] == SLOTS)
		return -1;
	memcpy(b->keys[map][b->used[map]], key, maps[map].key_size);
	return b->used[map]++;
}

static void *f_lookup(void *arg, int map, const void *key)
{
	struct backend *b = arg;
	int i = slot(b, map, key, 0);

	return i < 0 ? NULL : b->vals[map][i];
}

static long f_update(void *arg, int map, const void *key, const void *val,
		     uint64_t flags)
{
	struct backend *b = arg;
	int i = slot(b, map, key, 1);

	if (i < 0)
		return -7;
	memcpy(b->vals[map][i], val, maps[map].value_size);
	return 0;
}

static long f_output(void *arg, int map, const void *data, uint64_t size)
{
	struct backend *b = arg;

	if (size > sizeof(b->out))
		return -28;
	memcpy(b->out, data, size);
	return 0;
}

static long f_read(void *arg, void *dst, uint32_t n, uint64_t src)
{
	memset(dst, (int)(src & 0xff), n);
	return 0;
}

static long f_read_str(void *arg, void *dst, uint32_t n, uint64_t src)
{
	if (!n)
		return 0;
	memset(dst, 'a', n - 1);
	((char *)dst)[n - 1] = 0;
	return n;
}

static long f_comm(void *arg, void *dst, uint32_t n)
{
	memset(dst, 'c', n);
	return 0;
}

static uint64_t f_num(void *arg)
{
	return 0x1234567800000042ull;
}

static const struct hbpf_ops ops = {
	.lookup = f_lookup, .update = f_update, .output = f_output,
	.read_user = f_read, .read_user_str = f_read_str, .ktime = f_num,
	.pid_tgid = f_num, .uid_gid = f_num, .cpu = f_num, .comm = f_comm,
};

/* The stack between guards, as both runs see it. */
struct arena {
	uint64_t below[16];
	uint64_t stack[HBPF_STACK / 8];
	uint64_t above[16];
};

static void arena_init(struct arena *a)
{
	memset(a, 0xa5, sizeof(*a));
	for (size_t i = 0; i < HBPF_STACK / 8; i++)
		a->stack[i] = 0x0123456789abcdefull * (i + 1);
}

static void differ(const struct hbpf_prog *hp, struct backend *b,
		   const uint64_t *ctx)
{
	static struct arena a, ai;
	static struct backend b0, bi;
	uint64_t ri = 0, rj = 0;
	struct hbpf_jit *j;
	char err[256];
	int ei, ej;

	j = hbpf_jit_compile(hp, &ops, err, sizeof(err));
	if (!j)
		abort();	/* every verified program compiles */
	memset(b, 0, sizeof(*b));
	b0 = *b;
	arena_init(&a);
	ei = hbpf_int_run_on(hp, &ops, b, ctx, a.stack, &ri);
	ai = a;
	bi = *b;
	*b = b0;
	arena_init(&a);
	ej = hbpf_jit_run_on(j, b, ctx, NULL, a.stack, &rj);
	hbpf_jit_free(j);
	if (ei != ej || (!ei && ri != rj) || memcmp(&a, &ai, sizeof(a)) ||
	    memcmp(b, &bi, sizeof(bi)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = size / sizeof(struct bpf_insn);
	uint64_t ctx[21], ret;
	struct backend *b;
	struct bpf_insn *p;
	struct hbpf_prog hp;
	char err[256];

	if (!n || n > 4096)
		return 0;
	p = malloc(n * sizeof(*p));
	b = calloc(1, sizeof(*b));
	if (!p || !b)
		abort();
	memcpy(p, data, n * sizeof(*p));
	for (int i = 0; i < 21; i++)
		ctx[i] = 0x100 * (uint64_t)i + 1;
	hp = (struct hbpf_prog){ p, n, maps, NMAPS, sizeof(ctx) };
	if (!hbpf_verify(&hp, NULL, err, sizeof(err))) {
		hbpf_run(&hp, &ops, b, ctx, &ret);
		differ(&hp, b, ctx);
	}
	free(b);
	free(p);
	return 0;
}
