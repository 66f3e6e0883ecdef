// SPDX-License-Identifier: MIT
/*
 * Kernels: every CUfunction/CUkernel handle we see gets a record (its
 * name, whether a clause matches it) in an insert-only hash table that
 * launches read without a lock.  A matched kernel gets an instrumented
 * copy per context on its first launch there: best PTX, splice, JIT.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agent/agent_priv.h"

struct slot {
	_Atomic uintptr_t key;
	struct agent_kernel *_Atomic val;
};

struct ktab {
	size_t cap, n;
	struct ktab *prev;	/* older tables: readers may still be there */
	struct slot s[];
};

static struct ktab *_Atomic tab;
static pthread_mutex_t klock = PTHREAD_MUTEX_INITIALIZER; /* table, list */
static pthread_mutex_t ilock = PTHREAD_MUTEX_INITIALIZER; /* insts, busy */
static pthread_cond_t icond = PTHREAD_COND_INITIALIZER;	/* busy cleared */
static pthread_mutex_t idlock = PTHREAD_MUTEX_INITIALIZER; /* kernel ids */
static struct agent_kernel *all;

/* kernel ids: index of the mangled name, process-wide */
static char **id_names;
static int nids, cap_ids;

static size_t home(uintptr_t h, size_t cap)
{
	uint64_t x = (uint64_t)h;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 29;
	return (size_t)x & (cap - 1);
}

static struct agent_kernel *lookup(uintptr_t h)
{
	struct ktab *t = atomic_load_explicit(&tab, memory_order_acquire);

	if (!t)
		return NULL;
	for (size_t i = home(h, t->cap);; i = (i + 1) & (t->cap - 1)) {
		uintptr_t k = atomic_load_explicit(&t->s[i].key,
						   memory_order_acquire);

		if (k == h)
			return atomic_load_explicit(&t->s[i].val,
						    memory_order_acquire);
		if (!k)
			return NULL;
	}
}

/* Under klock.  The value is stored before the key is published. */
static void put(struct ktab *t, uintptr_t h, struct agent_kernel *k)
{
	for (size_t i = home(h, t->cap);; i = (i + 1) & (t->cap - 1)) {
		uintptr_t key = atomic_load_explicit(&t->s[i].key,
						     memory_order_relaxed);

		if (key == h) {
			atomic_store_explicit(&t->s[i].val, k,
					      memory_order_release);
			return;
		}
		if (!key) {
			atomic_store_explicit(&t->s[i].val, k,
					      memory_order_relaxed);
			atomic_store_explicit(&t->s[i].key, h,
					      memory_order_release);
			t->n++;
			return;
		}
	}
}

static int insert(uintptr_t h, struct agent_kernel *k)
{
	struct ktab *t = atomic_load_explicit(&tab, memory_order_relaxed);

	if (!t || (t->n + 1) * 2 > t->cap) {
		size_t cap = t ? t->cap * 2 : 4096;
		struct ktab *nt = calloc(1, sizeof(*nt) + cap * sizeof(nt->s[0]));

		if (!nt)
			return -ENOMEM;
		nt->cap = cap;
		nt->prev = t;
		for (size_t i = 0; t && i < t->cap; i++) {
			uintptr_t key = atomic_load(&t->s[i].key);

			if (key)
				put(nt, key, atomic_load(&t->s[i].val));
		}
		atomic_store_explicit(&tab, nt, memory_order_release);
		t = nt;
	}
	put(t, h, k);
	return 0;
}

char *agent_demangle(const char *m)
{
	static char *(*fn)(const char *, char *, size_t *, int *);
	static int looked;
	char *d;
	int st = -1;

	if (strncmp(m, "_Z", 2))
		return NULL;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		fn = agent_real_dlsym(RTLD_DEFAULT, "__cxa_demangle");
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	if (!fn)
		return NULL;
	d = fn(m, NULL, NULL, &st);
	if (st) {
		free(d);
		return NULL;
	}
	return d;
}

static bool clause_matches(const struct agent_clause *c,
			   const struct agent_kernel *k)
{
	return !fnmatch(c->glob, k->base, 0) ||
	       !fnmatch(c->glob, k->mangled, 0);
}

static struct agent_kernel *new_kernel(uintptr_t h, bool is_kernel,
				       const char *name, uintptr_t owner)
{
	struct agent_kernel *k = calloc(1, sizeof(*k));
	char *d;

	if (!k)
		return NULL;
	k->handle = h;
	k->is_kernel = is_kernel;
	k->owner = owner;
	k->id = -1;
	if (!name) {
		char buf[48];

		snprintf(buf, sizeof(buf), "function %#lx", (unsigned long)h);
		k->mangled = strdup("");
		k->pretty = strdup(buf);
		k->base = strdup("");
		k->state = AGENT_K_UNMATCHED;
		goto out;
	}
	d = agent_demangle(name);
	k->mangled = strdup(name);
	k->pretty = d ? d : strdup(name);
	/* no libstdc++ in the process: the simple cases still get a name */
	if (!d && (k->base = agent_simple_name(name)))
		;
	else
		k->base = agent_base_name(k->pretty ? k->pretty : name);
	if (!k->mangled || !k->pretty || !k->base)
		goto out;
	k->state = AGENT_K_UNMATCHED;
	for (int i = 0; i < agent.cfg.nclauses; i++)
		if (clause_matches(&agent.cfg.clauses[i], k))
			k->state = AGENT_K_MATCHED;
out:
	if (!k->mangled || !k->pretty || !k->base) {
		free(k->mangled);
		free(k->pretty);
		free(k->base);
		free(k);
		return NULL;
	}
	/* the tracer prints device keys by this name, and warns about
	 * GLOBs that no kernel matched */
	if (k->state == AGENT_K_MATCHED)
		agent_send(AGENT_MSG_KNAME, 0, k->mangled, strlen(k->mangled));
	agent_debug("kernel %s (%s %#lx): %s", k->pretty,
		    is_kernel ? "CUkernel" : "CUfunction", (unsigned long)h,
		    k->state == AGENT_K_MATCHED ? "matched" : "no clause");
	return k;
}

/* Under klock. */
static struct agent_kernel *record(uintptr_t h, bool is_kernel,
				   const char *name, uintptr_t owner)
{
	struct agent_kernel *k = new_kernel(h, is_kernel, name, owner);

	if (!k)
		return NULL;
	if (insert(h, k) < 0) {
		free(k->mangled);
		free(k->pretty);
		free(k->base);
		free(k);
		return NULL;
	}
	k->all_next = all;
	all = k;
	return k;
}

/*
 * A runtime may ask for a handle it has (cuModuleGetFunction,
 * cuKernelGetFunction) at every launch: a handle already recorded as
 * the same kernel costs a look-up, without the lock.  Records are never
 * freed and their names and owners never change.
 */
static const struct agent_kernel *known(uintptr_t h, const char *name,
				       uintptr_t owner)
{
	const struct agent_kernel *k = lookup(h);

	return k && k->owner == owner && !strcmp(k->mangled, name) ? k : NULL;
}

void agent_kernel_note(uintptr_t h, bool is_kernel, const char *name,
		       uintptr_t owner)
{
	struct agent_kernel *k;

	if (!h || known(h, name, owner))
		return;
	pthread_mutex_lock(&klock);
	k = lookup(h);
	if (!k || k->owner != owner || strcmp(k->mangled, name))
		record(h, is_kernel, name, owner);
	pthread_mutex_unlock(&klock);
}

void agent_kernel_alias(uintptr_t h, uintptr_t from)
{
	struct agent_kernel *src = agent_kernel_get(from), *k;
	const struct agent_kernel *had;

	if (!h || !src || !*src->mangled)
		return;
	had = known(h, src->mangled, src->owner);
	if (had && (!src->is_kernel ||
		    __atomic_load_n(&had->kern, __ATOMIC_RELAXED) == from))
		return;
	pthread_mutex_lock(&klock);
	k = lookup(h);
	if (!k || k->owner != src->owner || strcmp(k->mangled, src->mangled))
		k = record(h, false, src->mangled, src->owner);
	if (k && src->is_kernel)
		__atomic_store_n(&k->kern, from, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&klock);
}

struct agent_kernel *agent_kernel_get(uintptr_t h)
{
	struct agent_kernel *k = lookup(h);
	const char *name = NULL;
	CUmodule mod = NULL;
	bool is_kernel = false;

	if (k || !h)
		return k;
	/* a handle whose creation we did not see: ask the driver */
	agent_in_hook++;
	if (agent_drv.func_get_name &&
	    agent_drv.func_get_name(&name, (CUfunction)h) == CUDA_SUCCESS &&
	    name) {
		if (agent_drv.func_get_module &&
		    agent_drv.func_get_module(&mod, (CUfunction)h) !=
		    CUDA_SUCCESS)
			mod = NULL;
	} else if (agent_drv.kernel_get_name &&
		   agent_drv.kernel_get_name(&name, (CUkernel)h) ==
		   CUDA_SUCCESS && name) {
		is_kernel = true;
	} else {
		name = NULL;
	}
	agent_in_hook--;
	pthread_mutex_lock(&klock);
	k = lookup(h);
	if (!k)
		k = record(h, is_kernel, name, (uintptr_t)mod);
	pthread_mutex_unlock(&klock);
	return k;
}

/* Under klock: make H unknown again if it still maps to K. */
static void unmap_key(uintptr_t h, struct agent_kernel *k)
{
	struct ktab *t = atomic_load(&tab);

	for (size_t i = home(h, t->cap);; i = (i + 1) & (t->cap - 1)) {
		uintptr_t key = atomic_load(&t->s[i].key);

		if (!key)
			return;
		if (key == h) {
			if (atomic_load(&t->s[i].val) == k)
				atomic_store(&t->s[i].val, NULL);
			return;
		}
	}
}

void agent_kernel_forget_owner(uintptr_t owner)
{
	pthread_mutex_lock(&klock);
	for (struct agent_kernel *k = all; k; k = k->all_next)
		if (k->owner == owner)
			unmap_key(k->handle, k);
	pthread_mutex_unlock(&klock);
}

void agent_kernel_forget_ctx(CUcontext ctx)
{
	pthread_mutex_lock(&klock);
	for (struct agent_kernel *k = all; k; k = k->all_next)
		for (struct agent_inst *in = atomic_load(&k->insts); in;
		     in = in->next)
			if (in->ctx == ctx) {
				in->ctx = NULL;
				if (in->fn)
					unmap_key((uintptr_t)in->fn, k);
			}
	pthread_mutex_unlock(&klock);
}

/* The id of NAME, new ones get the next index. */
static int kernel_id(const char *name)
{
	int id = -1;

	pthread_mutex_lock(&idlock);
	for (int i = 0; i < nids && id < 0; i++)
		if (!strcmp(id_names[i], name))
			id = i;
	if (id < 0 && nids == cap_ids) {
		int cap = cap_ids ? cap_ids * 2 : 64;
		char **v = realloc(id_names, (size_t)cap * sizeof(*v));

		if (v) {
			id_names = v;
			cap_ids = cap;
		}
	}
	if (id < 0 && nids < cap_ids && (id_names[nids] = strdup(name)))
		id = nids++;
	pthread_mutex_unlock(&idlock);
	return id;
}

/* ms, with the fraction: the JIT's steps are short */
static double now_ms(void)
{
	return agent_now_ns() / 1e6;
}

/* Concatenate the call texts of K's clauses of one kind (entry/exit). */
static char *clause_text(const struct agent_kernel *k, bool exit)
{
	size_t n = 0;
	char *s;

	for (int i = 0; i < agent.cfg.nclauses; i++) {
		const struct agent_clause *c = &agent.cfg.clauses[i];

		if (c->exit == exit && !c->mem && clause_matches(c, k) &&
		    c->call)
			n += strlen(c->call) + 1;
	}
	if (!n)
		return NULL;
	s = calloc(1, n + 1);
	if (!s)
		return NULL;
	for (int i = 0; i < agent.cfg.nclauses; i++) {
		const struct agent_clause *c = &agent.cfg.clauses[i];

		if (c->exit == exit && !c->mem && clause_matches(c, k) &&
		    c->call) {
			strcat(s, c->call);
			strcat(s, "\n");
		}
	}
	return s;
}

/* K's gpu:mem clauses (malloc'd, *N of them; NULL when out of memory). */
static struct ptx_mem_clause *mem_clauses(const struct agent_kernel *k, int *n)
{
	struct ptx_mem_clause *v = calloc(agent.cfg.nclauses + 1, sizeof(*v));

	*n = 0;
	for (int i = 0; v && i < agent.cfg.nclauses; i++) {
		const struct agent_clause *c = &agent.cfg.clauses[i];

		if (c->mem && c->call && clause_matches(c, k)) {
			v[*n].text = c->call;
			v[*n].classes = c->mem;
			++*n;
		}
	}
	return v;
}

/* -v: a kernel's memory instructions gpu:mem leaves out, and why */
static void mem_note(void *arg, const char *kernel, const char *msg)
{
	const struct agent_kernel *k = arg;

	agent_debug("%s: %s", k->pretty, msg);
}

/* Attribute A of K's original on DEV into *V: false when unknown. */
static bool orig_get(const struct agent_kernel *k, CUfunction_attribute a,
		     CUdevice dev, int *v)
{
	if (k->is_kernel && agent_drv.kernel_get_attribute)
		return agent_drv.kernel_get_attribute(v, a, (CUkernel)k->handle,
						      dev) == CUDA_SUCCESS;
	if (!k->is_kernel && agent_drv.func_get_attribute)
		return agent_drv.func_get_attribute(v, a, (CUfunction)k->handle)
		       == CUDA_SUCCESS;
	return false;
}

/* Attribute A of K's original on DEV; 0 when the driver cannot say. */
static int orig_attr(const struct agent_kernel *k, CUfunction_attribute a,
		     CUdevice dev)
{
	int n = 0;

	return orig_get(k, a, dev, &n) && n > 0 ? n : 0;
}

/* agent_image_ptx's question about K's original (ARG: struct kdev) */
struct kdev {
	const struct agent_kernel *k;
	CUdevice dev;
};

static int kdev_attr(void *arg, int a)
{
	const struct kdev *kd = arg;
	int v;

	return orig_get(kd->k, (CUfunction_attribute)a, kd->dev, &v) ? v : -1;
}

/*
 * What a program sets with cudaFuncSetAttribute is on the original only;
 * a copy starts from the driver's defaults, and a launch of it asking
 * for a cluster of more than 8 blocks would fail without the non-portable
 * size allowed.  Set before the first launch (the usual place), these are
 * copied when the copy is made.  The dynamic shared memory limit is also
 * checked at each launch (agent_inst_fit_smem): programs raise it late.
 */
static void mirror_attrs(const struct agent_kernel *k, CUfunction fn,
			 CUdevice dev)
{
	static const CUfunction_attribute set[] = {
		CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
		CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
		CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
		CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
		CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
		CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
		CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
	};

	if (!agent_drv.func_get_attribute || !agent_drv.func_set_attribute)
		return;
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		int want, cur;
		CUresult r;

		if (!orig_get(k, set[i], dev, &want) ||
		    agent_drv.func_get_attribute(&cur, set[i], fn) !=
		    CUDA_SUCCESS || cur == want)
			continue;
		r = agent_drv.func_set_attribute(fn, set[i], want);
		agent_debug("%s: attribute %d %d -> %d, as the original's%s%s",
			    k->pretty, (int)set[i], cur, want,
			    r == CUDA_SUCCESS ? "" : ": ",
			    r == CUDA_SUCCESS ? "" : agent_cu_str(r));
	}
}

static int copy_attr(CUfunction f, CUfunction_attribute a)
{
	int n = 0;

	if (agent_drv.func_get_attribute)
		agent_drv.func_get_attribute(&n, a, f);
	return n > 0 ? n : 0;
}

/*
 * The register cap for K's instrumented copy: what the original uses,
 * rounded up to the allocation unit (8 a thread: 256 a warp) and at least
 * 32 (a thread may use 32 without costing occupancy), so that the probes
 * spill on their own rare path instead of making every block of the
 * kernel take more registers.  0: no cap (unknown).
 */
static unsigned reg_cap(const struct agent_kernel *k, CUdevice dev)
{
	int n = orig_attr(k, CU_FUNC_ATTRIBUTE_NUM_REGS, dev);

	if (n <= 0)
		return 0;
	n = (n + 7) & ~7;
	if (n > 255)
		n = 255;
	return n < 32 ? 32 : (unsigned)n;
}

void agent_inst_fit_smem(const struct agent_kernel *k,
			 struct agent_inst *in, unsigned shmem)
{
	const CUfunction_attribute a =
		CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
	int cur = 0, want;
	CUdevice dev;

	/* the common case, and the limit once known: no driver call */
	if (shmem <= __atomic_load_n(&in->dyn_ok, __ATOMIC_RELAXED) ||
	    !agent_drv.func_get_attribute || !agent_drv.func_set_attribute ||
	    agent_drv.func_get_attribute(&cur, a, in->fn) != CUDA_SUCCESS)
		return;
	if ((unsigned)cur < shmem &&
	    agent_drv.ctx_get_device(&dev) == CUDA_SUCCESS) {
		want = orig_attr(k, a, dev);
		if (want > cur &&
		    agent_drv.func_set_attribute(in->fn, a, want) ==
		    CUDA_SUCCESS) {
			agent_debug("%s: dynamic shared memory limit %d -> %d "
				    "bytes, as the original's", k->pretty,
				    cur, want);
			cur = want;
		}
	}
	if (cur > 0)
		__atomic_store_n(&in->dyn_ok, (unsigned)cur, __ATOMIC_RELAXED);
}

struct ilocal {
	char *ptx, *out, *entry, *exit;
	struct ptx_mem_clause *mem;
	struct ptx_module *m;
};

/* Make K's instrumented copy in CTX (current); IN->fn stays NULL on
 * failure, with WHY set unless it was reported already. */
static void instrument(struct agent_kernel *k, struct agent_inst *in,
		       char *why, size_t whylen)
{
	struct ilocal l = { 0 };
	struct kdev kd;
	const struct ptx_func *f;
	const char *names[2] = { k->mangled, NULL };
	struct ptx_splice_req req = { 0 };
	char err[768], var[128];
	CUdevice dev;
	int maj = 0, min = 0, gpu, hi;
	unsigned sm, arch;
	/* phase times for -v: PTX found, parsed, spliced, device state */
	double ts[5];

	ts[0] = now_ms();
	if (agent_drv.ctx_get_device(&dev) != CUDA_SUCCESS ||
	    agent_drv.device_get_attribute(&maj,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ||
	    agent_drv.device_get_attribute(&min,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) {
		snprintf(why, whylen, "cannot query its device");
		return;
	}
	gpu = (int)dev;
	sm = (unsigned)(maj * 10 + min);
	kd = (struct kdev){ k, dev };
	if (agent_image_ptx(k->owner ? agent_image_find(k->owner) : NULL,
			    k->mangled, sm, kdev_attr, &kd, &l.ptx, &arch,
			    why, whylen) < 0)
		goto out;
	ts[1] = now_ms();
	if (agent_ptx_get(l.ptx, &l.m, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "cannot parse its PTX: %s", err);
		goto out;
	}
	f = ptx_find_entry(l.m, k->mangled);
	if (!f || !f->is_def) {
		snprintf(why, whylen, "its PTX does not define it");
		goto out;
	}
	if (agent_ptx_module_var(l.m, f, var, sizeof(var))) {
		__atomic_store_n(&k->state, AGENT_K_FAILED, __ATOMIC_RELAXED);
		agent_report_once("skipped %s: uses module-scope variables "
				  "(instrumenting would give it its own copy)",
				  k->pretty);
		agent_debug("%s uses %s", k->pretty, var);
		goto out;
	}
	ts[2] = now_ms();
	l.entry = clause_text(k, false);
	l.exit = clause_text(k, true);
	/* the compiler refused this where it saw the kernel (-c's fatbins);
	 * one loaded otherwise gets 0 for the missing parameters: say so */
	hi = ptx_highest_arg(l.entry);
	if (ptx_highest_arg(l.exit) > hi)
		hi = ptx_highest_arg(l.exit);
	if (hi >= f->nparams)
		agent_report_once("%s has %d parameter%s: its probe reads arg%d as 0",
				  k->pretty, f->nparams,
				  f->nparams == 1 ? "" : "s", hi);
	req.names = names;
	req.decls = agent.cfg.decls;
	req.entry = l.entry;
	req.exit = l.exit;
	/* probes name the times they use; JIT only what they call */
	req.flags = PTX_SPLICE_ONLY_MATCHED | PTX_SPLICE_PRUNE;
	req.min_major = (int)agent.cfg.ptx_major;
	req.min_minor = (int)agent.cfg.ptx_minor;
	req.maxnreg = reg_cap(k, dev);
	l.mem = mem_clauses(k, &req.nmem);
	req.mem = l.mem;
	req.note = mem_note;
	req.note_arg = k;
	if (!l.mem) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	if (ptx_splice(l.m, &req, &l.out, err, sizeof(err)) <= 0) {
		snprintf(why, whylen, "cannot splice the probes: %s",
			 l.out ? "no kernel matched" : err);
		goto out;
	}
	ts[3] = now_ms();
	in->actx = agent_ctx_get(in->ctx, err, sizeof(err));
	if (!in->actx) {
		snprintf(why, whylen, "no device state: %s", err);
		goto out;
	}
	ts[4] = now_ms();
	if (agent_jit(l.out, req.maxnreg, &in->mod, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "JIT failed: %s", err);
		goto out;
	}
	if (agent_drv.module_get_function(&in->fn, in->mod, k->mangled) !=
	    CUDA_SUCCESS) {
		in->fn = NULL;
		snprintf(why, whylen, "not in its instrumented module");
		goto out;
	}
	mirror_attrs(k, in->fn, dev);
	in->nparams = f->nparams;
	in->ctx_off = ptx_ctx_offset(f);
	/*
	 * The copy's handle names the same kernel: a graph node's
	 * parameters read back (cuGraphKernelNodeGetParams) and set again
	 * keep their instrumentation instead of gaining a second one.
	 */
	pthread_mutex_lock(&klock);
	if (!lookup((uintptr_t)in->fn))
		insert((uintptr_t)in->fn, k);
	pthread_mutex_unlock(&klock);
	in->launch_ns = (l.entry && strstr(l.entry, "%gt_launch_ns")) ||
			(l.exit && strstr(l.exit, "%gt_launch_ns"));
	for (int i = 0; i < req.nmem; i++)
		in->launch_ns |= strstr(l.mem[i].text, "%gt_launch_ns") != NULL;
	/* one id per mangled name: instantiations stay apart */
	if (k->id < 0)
		k->id = kernel_id(k->mangled);
	if (k->id >= 0)
		agent_ctx_name(k->id, k->mangled);
	agent_ctx_kernel_hot(in->actx, k->id, k->mangled, in->hot);
	agent_report("instrumented %s [gpu %d]: jit %.1f ms", k->pretty, gpu,
		     now_ms() - ts[4]);
	agent_debug("%s: PTX found %.1f ms, parsed %.1f, spliced %.1f, device "
		    "state %.1f, then JIT, load and slots %.1f", k->pretty,
		    ts[1] - ts[0], ts[2] - ts[1], ts[3] - ts[2], ts[4] - ts[3],
		    now_ms() - ts[4]);
	agent_debug("%s: PTX for compute_%u, %d parameters, context "
		    "parameter at byte %zu, kernel id %d", k->pretty, arch,
		    in->nparams, in->ctx_off, k->id);
	/* what the probes cost in resources (bench/real reads this) */
	agent_debug("%s: registers %d -> %d, local memory %d -> %d bytes",
		    k->pretty, orig_attr(k, CU_FUNC_ATTRIBUTE_NUM_REGS, dev),
		    copy_attr(in->fn, CU_FUNC_ATTRIBUTE_NUM_REGS),
		    orig_attr(k, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, dev),
		    copy_attr(in->fn, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
out:
	agent_ptx_put(l.m);
	free(l.ptx);
	free(l.out);
	free(l.entry);
	free(l.exit);
	free(l.mem);
}

static struct agent_inst *inst_in(struct agent_kernel *k, CUcontext ctx)
{
	struct agent_inst *in;

	for (in = atomic_load_explicit(&k->insts, memory_order_acquire); in;
	     in = in->next)
		if (in->ctx == ctx)
			return in;
	return NULL;
}

/*
 * K's instance in CTX, made on the first call.  The JIT runs outside
 * ilock, so kernels are instrumented side by side (the launching threads
 * and agent_prefetch.c's workers); a caller that finds K being made
 * waits for it (k->busy).
 */
struct agent_inst *agent_kernel_inst(struct agent_kernel *k, CUcontext ctx)
{
	struct agent_inst *in;
	CUstreamCaptureMode mode;
	CUcontext old;
	char why[1024];

	/* every launch of a matched kernel comes here: nothing to clear */
	if ((in = inst_in(k, ctx)))
		return in;
	why[0] = '\0';
	if (!agent_kernel_matched(k))
		return NULL;
	pthread_mutex_lock(&ilock);
	while (!(in = inst_in(k, ctx)) && k->busy)
		pthread_cond_wait(&icond, &ilock);
	if (in || !agent_kernel_matched(k) ||
	    !(in = calloc(1, sizeof(*in)))) {
		pthread_mutex_unlock(&ilock);
		return in;
	}
	k->busy = ctx;
	pthread_mutex_unlock(&ilock);
	in->ctx = ctx;
	agent_in_hook++;
	mode = agent_capture_relax();
	if (agent_drv_usable()) {
		snprintf(why, sizeof(why), "the CUDA driver lacks entry points "
			 "the agent needs");
	} else if (agent_drv.ctx_push(ctx) != CUDA_SUCCESS) {
		snprintf(why, sizeof(why), "cannot use its context");
	} else {
		instrument(k, in, why, sizeof(why));
		agent_drv.ctx_pop(&old);
	}
	agent_capture_restore(mode);
	agent_in_hook--;
	if (!in->fn && why[0])
		agent_report_once("skipped %s: %s", k->pretty, why);
	pthread_mutex_lock(&ilock);
	in->next = atomic_load(&k->insts);
	atomic_store_explicit(&k->insts, in, memory_order_release);
	k->busy = NULL;
	pthread_cond_broadcast(&icond);
	pthread_mutex_unlock(&ilock);
	if (in->fn)
		agent_prefetch(k, ctx);
	return in;
}

void agent_kernel_each_pending(uintptr_t owner, CUcontext ctx,
			       void (*fn)(struct agent_kernel *, void *),
			       void *arg)
{
	pthread_mutex_lock(&klock);
	for (struct agent_kernel *k = all; k; k = k->all_next)
		if (k->owner == owner && agent_kernel_matched(k) &&
		    !k->busy && !inst_in(k, ctx))
			fn(k, arg);
	pthread_mutex_unlock(&klock);
}

/*
 * A new attach (-p): every handle is matched again against the new
 * clauses.  The old table and records stay (lock-free readers).
 */
void agent_kernel_reset(void)
{
	struct ktab *t, *nt = calloc(1, sizeof(*nt) + 4096 * sizeof(nt->s[0]));

	if (!nt)
		return;
	nt->cap = 4096;
	pthread_mutex_lock(&klock);
	t = atomic_load_explicit(&tab, memory_order_relaxed);
	nt->prev = t;
	atomic_store_explicit(&tab, nt, memory_order_release);
	all = NULL;
	pthread_mutex_unlock(&klock);
}
/* fork(): the table itself is replaced at the child's first driver
 * call (agent_kernel_reset); kernel ids, by name, stay. */
void agent_kernel_forked(void)
{
	pthread_mutex_init(&klock, NULL);
	pthread_mutex_init(&ilock, NULL);
	pthread_cond_init(&icond, NULL);
	pthread_mutex_init(&idlock, NULL);
}

#endif /* GT_AGENT_SO */
