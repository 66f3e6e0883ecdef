// SPDX-License-Identifier: MIT
/*
 * Host clauses in the agent (docs/hostpath.md): the tracer's eBPF for a
 * cuda:launch probe, verified again here and run by gpucode/hbpf.c in
 * the application's thread, at the launch hook, instead of as a kernel
 * uprobe.  The context is a struct pt_regs as the uprobe would see it
 * (arguments in their registers, the stack ones on a small fake stack at
 * rsp), so the program is the kernel path's own.
 *
 * Maps: each thread has its own image (devrt layout, one shard) of every
 * aggregation a host program writes, so its updates need no atomics; a
 * snapshot writes every thread's images into the segment next to the
 * device images, and the tracer merges them as it merges device maps,
 * with the kernel's part (docs/agent-protocol.md).
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <asm/ptrace.h>
#include <errno.h>
#include <fnmatch.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gpucode/hbpf.h"
#include "gpucode/hbpf_jit.h"
#include "gpucode/kname.h"
#include "runtime/agent/agent_hostcall.h"
#include "runtime/agent/agent_priv.h"

#define NAMES_VALUE	72	/* .cuda_names: key[64], bits */
#define RING_BYTES	(256u << 10)	/* events per thread, drained every 20 ms */
#define SEND_BYTES	(60u << 10)	/* events per message */
#define NAMES_CACHE	64	/* per thread, direct mapped */
#define BIT_AGENT	30	/* probes/cuda_priv.h's CUDA_BIT_AGENT */

struct himg {
	struct devrt_map_desc d;	/* nshards 1 */
	uint8_t *data;
	uint32_t last;			/* the slot found last: a launch loop
					 * hits one key again and again */
};

struct hthread {
	struct hthread *next;
	struct himg *imgs;		/* per host map; data NULL: not AGG */
	struct agent_hmap *hm;		/* the maps, as configured then */
	struct hbpf_memo *memo;		/* HBPF_MAX_MAPS, the JIT's (hbpf.h) */
	int nimgs;
	uint64_t pid_tgid;
	uint64_t lost;			/* .lost's value for this thread */
	/* events: agent_printf_rec records, 8-aligned; the thread writes
	 * head, the agent's thread tail */
	uint8_t *ring;
	uint64_t head, tail;
	char comm[16];
	bool have_comm;
	struct hname {
		uint64_t handle;
		bool unknown;		/* a record without a name */
		uint8_t val[NAMES_VALUE];
	} names[NAMES_CACHE];
};

/* What a launch's program may read of the target's memory directly. */
struct hrun {
	struct hthread *t;
	const void *stack;	/* the fake stack */
	size_t stack_len;
	const void *cfg;	/* cuLaunchKernelEx's config */
	uint64_t call[2];	/* .cuda_calls' value: entry value, present */
};

/* One session's programs: replaced whole (-p re-attach), never freed,
 * since a thread may be running one. */
struct hset {
	struct hbpf_map *hmaps;
	struct hbpf_prog *progs;	/* verified ones only */
	struct hbpf_jit **jits;		/* each one's code; NULL: interpreted */
	int *next;			/* the entry's next one, -1: last */
	int nprogs;
	/* each entry point's programs in clause order: a launch runs its
	 * own, not a walk over every program (the launch entries first:
	 * with the pointers above, one line) */
	int first[AGENT_HE_END_];	/* -1: none */
	char **globs;			/* cuda:launch:GLOBs, bit i each */
	int nglobs;
};

/* the session's programs and number, read at every call: one line */
static struct {
	struct hset *cur;
	int gen;		/* sessions (-p re-attach) */
} hot __attribute__((aligned(64)));
static struct hthread *threads;
static int nthreads;
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
/* kernels whose names were sent (KNAME), by hash: insert only */
static uint64_t *told;
static size_t ntold;

static AGENT_HOT uint8_t *slot_at(const struct himg *h, uint32_t i)
{
	return h->data + DEVRT_LINE + (uint64_t)i * h->d.slot_bytes;
}

/* Keys are 8-aligned words on the program's stack: hashed a word at a
 * time (any hash will do: the tracer reads every slot). */
static AGENT_HOT uint64_t hash_key(const void *k, size_t n)
{
	const uint8_t *p = k;
	uint64_t h = KNAME_FNV_OFF, w;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 32;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * KNAME_FNV_PRIME;
	return h ^ (h >> 29);
}

/* The value words of KEY's slot in H; INSERT: claim one.  NULL: full. */
static AGENT_HOT uint64_t *find(struct himg *h, const void *key, bool insert)
{
	uint32_t ks = h->d.key_size, cap = h->d.capacity, i;
	size_t klen = devrt_key_bytes(&h->d);

	if (!ks) {
		/* live: the tracer shows it (min, max, avg... have no
		 * count word that says so) */
		*(uint64_t *)(slot_at(h, 0) + 8) = 1;
		return (uint64_t *)(slot_at(h, 0) + 16);
	}
	/* slots are only ever claimed: the last one still holds its key
	 * (only this thread writes its image) */
	i = h->last;
	if ((*(uint64_t *)slot_at(h, i) & DEVRT_SLOT_FULL) &&
	    hbpf_key_eq(slot_at(h, i) + 16, key, ks))
		return (uint64_t *)(slot_at(h, i) + 16 + klen);
	i = (uint32_t)hash_key(key, ks) & (cap - 1);
	for (uint32_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
		uint8_t *p = slot_at(h, i);
		uint64_t st = __atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE);

		if (st & DEVRT_SLOT_FULL) {
			if (hbpf_key_eq(p + 16, key, ks)) {
				h->last = i;
				return (uint64_t *)(p + 16 + klen);
			}
			continue;
		}
		if (!insert)
			return NULL;
		memcpy(p + 16, key, ks);
		*(uint64_t *)(p + 8) = 1;	/* live */
		__atomic_store_n((uint64_t *)p, DEVRT_SLOT_FULL, __ATOMIC_RELEASE);
		h->last = i;
		return (uint64_t *)(p + 16 + klen);
	}
	if (insert)	/* drops: the shard's first word */
		__atomic_fetch_add((uint64_t *)h->data, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* a thread's first run (or a new session's): out of the hot path */
static AGENT_COLD struct hthread *thread_new(void)
{
	struct hthread *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->imgs = calloc(agent.cfg.nhmaps + 1, sizeof(*t->imgs));
	t->hm = calloc(agent.cfg.nhmaps + 1, sizeof(*t->hm));
	/* every index a program may use: one from before a re-attach
	 * may run on this state (run_entry) */
	t->memo = calloc(HBPF_MAX_MAPS, sizeof(*t->memo));
	if (!t->imgs || !t->hm || !t->memo)
		goto fail;
	t->nimgs = agent.cfg.nhmaps;
	memcpy(t->hm, agent.cfg.hmaps, t->nimgs * sizeof(*t->hm));
	for (int i = 0; i < t->nimgs && !t->ring; i++)
		if (t->hm[i].role == AGENT_HM_EVENTS &&
		    !(t->ring = calloc(1, RING_BYTES)))
			goto fail;
	for (int i = 0; i < agent.cfg.nhmaps; i++) {
		const struct agent_hmap *m = &agent.cfg.hmaps[i];
		struct himg *h = &t->imgs[i];

		if (m->role != AGENT_HM_AGG)
			continue;
		h->d = agent.cfg.maps[m->devmap];
		h->d.nshards = 1;
		h->d.base = 0;
		if (devrt_map_layout(&h->d) ||
		    !(h->data = calloc(1, devrt_map_bytes(&h->d)))) {
			for (int k = 0; k < i; k++)
				free(t->imgs[k].data);
			goto fail;
		}
		devrt_map_init(&h->d, h->data);
	}
	t->pid_tgid = (uint64_t)getpid() << 32 | (uint32_t)syscall(SYS_gettid);
	pthread_mutex_lock(&host_lock);
	t->next = threads;
	threads = t;
	nthreads++;
	pthread_mutex_unlock(&host_lock);
	return t;
fail:
	free(t->imgs);
	free(t->hm);
	free(t->memo);
	free(t->ring);
	free(t);
	return NULL;
}

/* The state of TH's thread (a fork child starts its own: pids changed). */
static AGENT_HOT struct hthread *self(struct agent_thread *th)
{
	if (th->host && th->host_pid == agent.pid &&
	    th->host_gen == __atomic_load_n(&hot.gen, __ATOMIC_ACQUIRE))
		return th->host;
	th->host_gen = __atomic_load_n(&hot.gen, __ATOMIC_ACQUIRE);
	th->host = thread_new();
	th->host_pid = agent.pid;
	return th->host;
}

/* --------------------------------------------------------- helpers -- */

static void tell_name(const struct agent_kernel *k, uint64_t h)
{
	size_t i;

	pthread_mutex_lock(&host_lock);
	for (i = 0; i < ntold && told[i] != h; i++)
		;
	if (i == ntold) {
		uint64_t *v = realloc(told, (ntold + 1) * sizeof(*v));

		if (v) {
			told = v;
			told[ntold++] = h;
			agent_send(AGENT_MSG_KNAME, 0, k->mangled,
				   strlen(k->mangled));
		}
	}
	pthread_mutex_unlock(&host_lock);
}

/*
 * The bits of the session's cuda:launch:GLOBs that kernel K matches,
 * which the kernel path takes from the fatbins' names: matched here, as
 * probes/cuda_names.c's cuda_glob_bits() matches (the mangled name or
 * the tracer's base name), at
 * the kernel's first sight, so kernels loaded from memory (Triton,
 * NVRTC, cuModuleLoadData) match too.  Kept in K, tagged with the
 * session (a -p re-attach brings other GLOBs); two threads may both
 * compute it, with the same result.
 */
static uint64_t glob_bits(const struct agent_kernel *k)
{
	const struct hset *h = __atomic_load_n(&hot.cur, __ATOMIC_ACQUIRE);
	uint64_t *c = (uint64_t *)&k->hbits;
	uint64_t tag = (uint64_t)(uint32_t)(agent_self.host_gen + 1) << 32;
	uint64_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
	char *base;

	if (!h || !h->nglobs)
		return 0;
	if ((v & ~0xffffffffull) == tag)
		return v & 0xffffffffull;
	base = agent_dmgl_base(k->mangled);
	v = 0;
	for (int i = 0; i < h->nglobs; i++)
		if (!fnmatch(h->globs[i], k->mangled, 0) ||
		    (base && !fnmatch(h->globs[i], base, 0)))
			v |= 1ull << i;
	free(base);
	__atomic_store_n(c, tag | v, __ATOMIC_RELAXED);
	return v;
}

/* A names cache miss: slot C filled for HANDLE (out of the hot path) */
static AGENT_COLD void *names_fill(struct hthread *t, unsigned c,
				   uint64_t handle)
{
	const struct agent_kernel *k;
	uint64_t bits = 0;

	k = agent_kernel_get((uintptr_t)handle);
	if (!k)
		return NULL;
	/* the line is reused: the memo may point at it (an entry of no
	 * name keeps the old name's bytes, which a memo would hand out) */
	for (int i = 0; i < t->nimgs; i++)
		if (t->hm[i].role == AGENT_HM_NAMES)
			t->memo[i].val = NULL;
	/* a handle whose name nobody could tell: "unknown", as the
	 * kernel path's names map has no entry for it (a record's name
	 * does not change) */
	t->names[c].handle = handle;
	t->names[c].unknown = !k->mangled || !k->mangled[0];
	if (t->names[c].unknown)
		return NULL;
	memset(t->names[c].val, 0, NAMES_VALUE);
	kname_key(t->names[c].val, 64, k->mangled);
	bits = glob_bits(k);
	if (!strncmp(k->mangled, KNAME_AGENT_PREFIX,
		     strlen(KNAME_AGENT_PREFIX)))
		bits |= 1ull << BIT_AGENT;
	memcpy(t->names[c].val + 64, &bits, 8);
	t->names[c].handle = handle;
	tell_name(k, kname_hash(k->mangled));
	return t->names[c].val;
}

/* .cuda_names[handle]: the kernel's key and bits, as the kernel path's */
static AGENT_HOT void *names_lookup(struct hthread *t, uint64_t handle)
{
	unsigned c = (unsigned)((handle >> 4) ^ (handle >> 12)) % NAMES_CACHE;

	if (t->names[c].handle == handle && handle)
		return t->names[c].unknown ? NULL : t->names[c].val;
	return names_fill(t, c, handle);
}

static AGENT_HOT void *h_lookup(void *arg, int map, const void *key)
{
	struct hrun *r = arg;
	const struct agent_hmap *m = &r->t->hm[map];
	struct himg *h = &r->t->imgs[map];

	if (map >= r->t->nimgs)		/* a re-attach between the two */
		return NULL;
	uint64_t *w, b = 0;

	switch (m->role) {
	case AGENT_HM_NAMES: {
		uint64_t handle;
		uint8_t *v;

		memcpy(&handle, key, 8);
		v = names_lookup(r->t, handle);
		if (v)	/* the line's handle is the key */
			r->t->memo[map] = (struct hbpf_memo){
				v, v - offsetof(struct hname, val) +
				   offsetof(struct hname, handle) };
		return v;
	}
	case AGENT_HM_LOST:
		return &r->t->lost;
	case AGENT_HM_CALLS:	/* this call's, whatever the key */
		return r->call[1] ? r->call : NULL;
	case AGENT_HM_AGG:
		if (m->bucket)
			memcpy(&b, (const uint8_t *)key + m->key_size - 8, 8);
		w = find(h, key, false);
		if (!w || b >= h->d.nwords)
			return NULL;
		/* the slot's key (slots are never freed nor moved), where it
		 * is the whole key: a hist's bucket is not in it */
		if (!m->bucket && m->key_size == h->d.key_size)
			r->t->memo[map] = (struct hbpf_memo){
				w, (uint8_t *)w - devrt_key_bytes(&h->d) };
		return w + b;
	}
	return NULL;
}

static AGENT_HOT long h_update(void *arg, int map, const void *key,
			       const void *val, uint64_t flags)
{
	struct hrun *r = arg;
	const struct agent_hmap *m = &r->t->hm[map];
	struct himg *h = &r->t->imgs[map];

	if (map >= r->t->nimgs)		/* a re-attach between the two */
		return -EINVAL;
	uint64_t *w, b = 0;

	if (m->role == AGENT_HM_LOST) {
		memcpy(&r->t->lost, val, 8);
		return 0;
	}
	if (m->role != AGENT_HM_AGG)
		return -EINVAL;
	if (m->bucket)
		memcpy(&b, (const uint8_t *)key + m->key_size - 8, 8);
	if (b >= h->d.nwords || m->value_size > (h->d.nwords - b) * 8)
		return -E2BIG;
	w = find(h, key, true);
	if (!w)
		return -E2BIG;
	memcpy(w + b, val, m->value_size);
	return 0;
}

static void ring_put(uint8_t *ring, uint64_t pos, const void *p, size_t n)
{
	size_t at = pos & (RING_BYTES - 1), first = RING_BYTES - at;

	if (first > n)
		first = n;
	memcpy(ring + at, p, first);
	memcpy(ring, (const uint8_t *)p + first, n - first);
}

/*
 * An event ({u64 id, arguments}, as the kernel path's ring holds it)
 * into the thread's ring as a printf record (agent_printf_rec); the
 * tracer formats it like a host printf.  Full: -ENOSPC, and the
 * program counts it in .lost, as with the kernel's ring.
 */
static long h_output(void *arg, int map, const void *data, uint64_t size)
{
	struct hthread *t = ((struct hrun *)arg)->t;
	struct agent_printf_rec r;
	uint64_t id, len, head, tail;

	if (!t->ring || size < 8 || size > RING_BYTES / 4)
		return -EINVAL;
	memcpy(&id, data, 8);
	r.fmt = (uint32_t)id;
	r.size = (uint32_t)(size - 8);
	len = sizeof(r) + ((r.size + 7ull) & ~7ull);
	head = t->head;
	tail = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
	if (head - tail + len > RING_BYTES)
		return -ENOSPC;
	ring_put(t->ring, head, &r, sizeof(r));
	ring_put(t->ring, head + sizeof(r), (const uint8_t *)data + 8, r.size);
	__atomic_store_n(&t->head, head + len, __ATOMIC_RELEASE);
	return 0;
}

/* The fake stack and the launch config are ours to read; else the
 * kernel checks the address for us. */
static long h_read(void *arg, void *dst, uint32_t n, uint64_t src)
{
	const struct hrun *r = arg;
	uint64_t s = (uintptr_t)r->stack, c = (uintptr_t)r->cfg;
	struct iovec l = { dst, n }, rv = { (void *)(uintptr_t)src, n };

	if (src >= s && src - s <= r->stack_len && n <= r->stack_len - (src - s)) {
		memcpy(dst, (const void *)(uintptr_t)src, n);
		return 0;
	}
	if (r->cfg && src >= c && src - c <= sizeof(CUlaunchConfig) &&
	    n <= sizeof(CUlaunchConfig) - (src - c)) {
		memcpy(dst, (const void *)(uintptr_t)src, n);
		return 0;
	}
	if (!n)
		return 0;
	if (process_vm_readv(getpid(), &l, 1, &rv, 1, 0) == (ssize_t)n)
		return 0;
	memset(dst, 0, n);
	return -EFAULT;
}

/*
 * Up to N bytes with the NUL, as the kernel's helper: the length with
 * the NUL, or -EFAULT.  One read: process_vm_readv stops at the first
 * page it cannot read and says how much it got, so a string that ends
 * before a hole is read whole.
 */
static long h_read_str(void *arg, void *dst, uint32_t n, uint64_t src)
{
	struct iovec l = { dst, n }, rv = { (void *)(uintptr_t)src, n };
	char *d = dst, *z;
	ssize_t got;

	if (!n)
		return 0;
	if (!h_read(arg, dst, n, src) && (z = memchr(d, 0, n)))
		return z - d + 1;
	got = process_vm_readv(getpid(), &l, 1, &rv, 1, 0);
	if (got <= 0) {
		memset(dst, 0, n);
		return -EFAULT;
	}
	z = memchr(d, 0, got);
	if (z)
		return z - d + 1;
	if ((uint32_t)got == n) {
		d[n - 1] = 0;
		return n;
	}
	memset(dst, 0, n);	/* no NUL before the hole: as the kernel */
	return -EFAULT;
}

static uint64_t h_ktime(void *arg)
{
	return agent_now_ns();
}

static AGENT_HOT uint64_t h_pid_tgid(void *arg)
{
	return ((const struct hrun *)arg)->t->pid_tgid;
}

static uint64_t h_uid_gid(void *arg)
{
	return (uint64_t)getgid() << 32 | getuid();
}

static uint64_t h_cpu(void *arg)
{
	int c = sched_getcpu();

	return c < 0 ? 0 : (uint64_t)c;
}

static long h_comm(void *arg, void *dst, uint32_t n)
{
	struct hthread *t = ((const struct hrun *)arg)->t;

	if (!t->have_comm) {
		memset(t->comm, 0, sizeof(t->comm));
		prctl(PR_GET_NAME, t->comm, 0, 0, 0);
		t->have_comm = true;
	}
	memset(dst, 0, n);
	memcpy(dst, t->comm, n < 16 ? n : 16);
	if (n)
		((char *)dst)[n - 1 < 15 ? n - 1 : 15] = 0;
	return 0;
}

static const struct hbpf_ops ops = {
	.lookup = h_lookup, .update = h_update, .output = h_output,
	.read_user = h_read, .read_user_str = h_read_str, .ktime = h_ktime,
	.pid_tgid = h_pid_tgid, .uid_gid = h_uid_gid, .cpu = h_cpu,
	.comm = h_comm,
};

/* ------------------------------------------------------------ setup -- */

/*
 * A new session (-p attached again): the last one's programs and counts
 * go.  A thread may be in a program right now, so nothing is freed: the
 * old images leave the list and each thread starts new ones.
 */
void agent_host_reset(void)
{
	pthread_mutex_lock(&host_lock);
	threads = NULL;
	nthreads = 0;
	ntold = 0;
	__atomic_store_n(&hot.cur, NULL, __ATOMIC_RELEASE);
	__atomic_add_fetch(&hot.gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&host_lock);
}

/* GPUTRACE_HBPF_JIT=0: every program interpreted (the JIT's check). */
static bool jit_wanted(void)
{
	const char *e = getenv("GPUTRACE_HBPF_JIT");

	return !e || strcmp(e, "0");
}

void agent_host_init(void)
{
	const struct agent_config *c = &agent.cfg;
	bool jit = jit_wanted();
	int last[AGENT_HE_END_];
	struct hset *h;
	char err[256];
	int njit = 0;

	if (!c->nhprogs)
		return;
	/* its first line is what a launch reads */
	h = aligned_alloc(64, (sizeof(*h) + 63) & ~(size_t)63);
	if (h) {
		memset(h, 0, sizeof(*h));
		h->hmaps = calloc(c->nhmaps, sizeof(*h->hmaps));
		h->progs = calloc(c->nhprogs, sizeof(*h->progs));
		h->jits = calloc(c->nhprogs, sizeof(*h->jits));
		h->next = calloc(c->nhprogs, sizeof(*h->next));
	}
	if (!h || !h->hmaps || !h->progs || !h->jits || !h->next) {
		agent_report("out of memory: host clauses do not run");
		if (h) {	/* never published: no thread holds it */
			free(h->hmaps);
			free(h->progs);
			free(h->jits);
			free(h->next);
			free(h);
		}
		return;
	}
	for (int i = 0; i < c->nhmaps; i++) {
		h->hmaps[i].key_size = c->hmaps[i].key_size;
		h->hmaps[i].value_size = c->hmaps[i].value_size;
		h->hmaps[i].ring = c->hmaps[i].role == AGENT_HM_EVENTS;
	}
	for (int e = 0; e < AGENT_HE_END_; e++)
		h->first[e] = last[e] = -1;
	for (int i = 0; i < c->nhprogs; i++) {
		struct hbpf_prog *p = &h->progs[h->nprogs];
		uint32_t e = c->hprogs[i].entry;
		struct bpf_insn *v;

		if (e >= AGENT_HE_END_)
			continue;
		/* ours: the config goes at a re-attach, a run may not */
		v = malloc(c->hprogs[i].ninsns * sizeof(*v));
		if (!v)
			continue;
		memcpy(v, c->hprogs[i].insns, c->hprogs[i].ninsns * sizeof(*v));
		p->insns = v;
		p->n = c->hprogs[i].ninsns;
		p->maps = h->hmaps;
		p->nmaps = c->nhmaps;
		p->ctx_size = sizeof(struct pt_regs);
		if (hbpf_verify(p, NULL, err, sizeof(err))) {
			agent_report("host clause %d refused: %s", i, err);
			free(v);
			continue;
		}
		/* native code when it compiles, else the interpreter */
		if (jit && (h->jits[h->nprogs] = hbpf_jit_compile(p, &ops, err,
								  sizeof(err))))
			njit++;
		else if (jit)
			agent_debug("host clause %d interpreted: %s", i, err);
		h->next[h->nprogs] = -1;
		if (last[e] < 0)
			h->first[e] = h->nprogs;
		else
			h->next[last[e]] = h->nprogs;
		last[e] = h->nprogs++;
	}
	/* ours too, as the programs */
	h->globs = calloc(c->nhglobs + 1, sizeof(*h->globs));
	for (int i = 0; h->globs && i < c->nhglobs && i < AGENT_MAX_HGLOBS; i++)
		if ((h->globs[h->nglobs] = strdup(c->hglobs[i])))
			h->nglobs++;
		else
			break;
	if (h->nglobs < c->nhglobs)
		agent_report("out of memory: cuda:launch GLOBs match nothing");
	agent_debug("%d host clauses run in the agent, %d as native code%s",
		    h->nprogs, njit, jit ? "" : " (GPUTRACE_HBPF_JIT=0)");
	__atomic_store_n(&hot.cur, h, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------- runs -- */

static AGENT_HOT void run_entry(const struct hset *h, uint32_t e,
				struct hrun *r, const struct pt_regs *regs)
{
	uint64_t ret;

	for (int i = h->first[e]; i >= 0; i = h->next[i]) {
		int err;

		err = h->jits[i] ? hbpf_jit_run(h->jits[i], r, regs,
						r->t->memo, &ret) :
		      hbpf_run(&h->progs[i], &ops, r, regs, &ret);
		if (err)
			agent_report_once("a host clause stopped: %s",
					  err == -E2BIG ? "too many instructions" :
					  "a memory access outside its regions");
	}
}

AGENT_HOT void agent_host_launch(const struct agent_launch *l,
			       struct agent_thread *th)
{
	static const uint32_t entry[3][2] = {
		[AGENT_L_KERNEL] = { AGENT_HE_LAUNCH, AGENT_HE_LAUNCH_PTSZ },
		[AGENT_L_EX] = { AGENT_HE_EX, AGENT_HE_EX_PTSZ },
		[AGENT_L_COOP] = { AGENT_HE_COOP, AGENT_HE_COOP_PTSZ },
	};
	const struct hset *h = __atomic_load_n(&hot.cur, __ATOMIC_ACQUIRE);
	union {
		struct pt_regs r;
		__m128i v[(sizeof(struct pt_regs) + 15) / 16];
	} regs;
	uint64_t stack[6];
	struct hrun r;
	uint32_t e;

	if (!h || (unsigned)l->form > AGENT_L_COOP)
		return;
	e = entry[l->form][l->ptsz ? 1 : 0];
	if (h->first[e] < 0 || !(r.t = self(th)))
		return;
	/* zeroed by eleven stores: a memset of this size, or a loop the
	 * compiler makes one of, is a rep stos, slow to start */
	_Static_assert(sizeof(regs.v) == 11 * 16, "struct pt_regs");
	regs.v[0] = regs.v[1] = regs.v[2] = regs.v[3] = regs.v[4] =
		regs.v[5] = regs.v[6] = regs.v[7] = regs.v[8] = regs.v[9] =
		regs.v[10] = _mm_setzero_si128();
	/* at entry, [sp] is the return address, argument 6 + i at sp + 8 + 8i */
	stack[0] = 0;
	if (l->form == AGENT_L_EX) {
		regs.r.rdi = (uintptr_t)l->config;
		regs.r.rsi = (uintptr_t)l->f;
		regs.r.rdx = (uintptr_t)l->params;
		regs.r.rcx = (uintptr_t)l->extra;
		stack[1] = stack[2] = stack[3] = stack[4] = stack[5] = 0;
	} else {
		regs.r.rdi = (uintptr_t)l->f;
		regs.r.rsi = l->gx;
		regs.r.rdx = l->gy;
		regs.r.rcx = l->gz;
		regs.r.r8 = l->bx;
		regs.r.r9 = l->by;
		stack[1] = l->bz;
		stack[2] = l->shmem;
		stack[3] = (uintptr_t)l->stream;
		stack[4] = (uintptr_t)l->params;
		stack[5] = (uintptr_t)l->extra;
	}
	regs.r.rsp = (uintptr_t)stack;
	r.stack = stack;
	r.stack_len = sizeof(stack);
	r.cfg = l->form == AGENT_L_EX ? l->config : NULL;
	r.call[0] = r.call[1] = 0;
	run_entry(h, e, &r, &regs.r);
}

/* Not the agent's own calls, nor CUPTI's on its behalf (in a hook). */
bool agent_host_on(uint32_t e)
{
	const struct hset *h = __atomic_load_n(&hot.cur, __ATOMIC_ACQUIRE);

	return h && e < AGENT_HE_END_ && h->first[e] >= 0 && !agent_in_hook;
}

uint64_t agent_host_now(void)
{
	return agent_now_ns();
}

/*
 * A call of entry point E other than a launch (agent_hostcall.h): the
 * registers as the uprobe (RET NULL) or the uretprobe (RET: rax) sees
 * them; SAVED is what the kernel path's hidden entry program keeps in
 * .cuda_calls for the return.
 */
void agent_host_call(uint32_t e, const uint64_t *args, const uint64_t *ret,
		     uint64_t saved)
{
	const struct hset *h = __atomic_load_n(&hot.cur, __ATOMIC_ACQUIRE);
	uint64_t stack[2] = { 0, 0 };
	struct pt_regs regs;
	struct hrun r;

	if (!h || e >= AGENT_HE_END_ || h->first[e] < 0 ||
	    !(r.t = self(&agent_self)))
		return;
	/* the exit handler (the last snapshot), as a launch registers it */
	agent_saw_cuda();
	memset(&regs, 0, sizeof(regs));
	regs.rdi = args[0];
	regs.rsi = args[1];
	regs.rdx = args[2];
	regs.rcx = args[3];
	regs.r8 = args[4];
	regs.r9 = args[5];
	if (ret)
		regs.rax = *ret;
	regs.rsp = (uintptr_t)stack;
	r.stack = stack;
	r.stack_len = sizeof(stack);
	r.cfg = NULL;
	r.call[0] = saved;
	r.call[1] = ret != NULL;
	run_entry(h, e, &r, &regs);
}

/* ---------------------------------------------------------- events -- */

/* Send the events the threads wrote, and the count lost when it grew. */
void agent_host_drain(void)
{
	static uint64_t lost_sent;
	static uint8_t buf[SEND_BYTES];
	uint64_t lost = 0;

	pthread_mutex_lock(&host_lock);
	for (struct hthread *t = threads; t; t = t->next) {
		lost += __atomic_load_n(&t->lost, __ATOMIC_RELAXED);
		while (t->ring) {
			uint64_t tail = t->tail, head, n = 0;

			head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
			/* whole records, up to a message's worth */
			while (tail + n < head) {
				struct agent_printf_rec r;
				size_t at = (tail + n) & (RING_BYTES - 1);
				uint64_t len;

				memcpy(&r, t->ring + at, sizeof(r));
				len = sizeof(r) + ((r.size + 7ull) & ~7ull);
				if (n + len > sizeof(buf))
					break;
				n += len;
			}
			if (!n)
				break;
			for (uint64_t k = 0; k < n;) {
				size_t at = (tail + k) & (RING_BYTES - 1);
				size_t c = RING_BYTES - at;

				if (c > n - k)
					c = n - k;
				memcpy(buf + k, t->ring + at, c);
				k += c;
			}
			__atomic_store_n(&t->tail, tail + n, __ATOMIC_RELEASE);
			agent_send(AGENT_MSG_PRINTF, 0, buf, n);
		}
	}
	if (lost != lost_sent) {
		lost_sent = lost;
		agent_send(AGENT_MSG_HLOST, 0, &lost, sizeof(lost));
	}
	pthread_mutex_unlock(&host_lock);
}

/* ------------------------------------------------------- snapshots -- */

uint32_t agent_host_nimages(void)
{
	uint32_t n = 0;

	pthread_mutex_lock(&host_lock);
	for (struct hthread *t = threads; t; t = t->next)
		for (int i = 0; i < t->nimgs; i++)
			n += t->imgs[i].data != NULL;
	pthread_mutex_unlock(&host_lock);
	return n;
}

int agent_host_write(struct agent_seg_hdr *h, uint32_t *j, uint32_t n,
		     size_t *off)
{
	int ret = 0;

	pthread_mutex_lock(&host_lock);
	for (struct hthread *t = threads; t && !ret; t = t->next)
		for (int i = 0; i < t->nimgs && *j < n; i++) {
			const struct himg *m = &t->imgs[i];
			size_t bytes;

			if (!m->data)
				continue;
			bytes = devrt_map_bytes(&m->d);
			if (*off + bytes > agent.seg_len) {
				ret = -ENOSPC;
				break;
			}
			memcpy(agent.seg + *off, m->data, bytes);
			h->images[*j] = (struct agent_seg_map){
				.map = t->hm[i].devmap, .gpu = 0,
				.offset = *off, .bytes = bytes, .desc = m->d,
			};
			(*j)++;
			*off = (*off + bytes + 7) & ~7ul;
		}
	pthread_mutex_unlock(&host_lock);
	return ret;
}
/* fork(): the maps go at the child's first driver call
 * (agent_host_reset). */
void agent_host_forked(void)
{
	pthread_mutex_init(&host_lock, NULL);
}

#endif /* GT_AGENT_SO */
