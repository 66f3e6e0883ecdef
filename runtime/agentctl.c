// SPDX-License-Identifier: MIT
/*
 * The tracer's side of the agent protocol: a private directory holding
 * the configuration file and the listening socket, a memfd segment the
 * target inherits, the messages, and snapshots copied out of the segment
 * so that an agent that exits (or the next one writing the segment)
 * cannot take them away.  docs/agent-protocol.md has the design.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "runtime/hostevents.h"
#include "runtime/knames.h"
#include "runtime/agentctl_priv.h"

#define DEF_RINGS	16u
#define DEF_RING_BYTES	(256u << 10)
#define KEYED_CAPACITY	4096u		/* bpftrace's default map size */
#define MAX_SHARDS	32u
/* the inline updates' shards: 256 lines let a kernel of very short warps
 * (cub::for_each, 262144 warps in 22 us) pile its atomics onto a few L2
 * slices or not, depending on where the lines landed (1.01-1.10x);
 * 1024 gave 1.01x at every stride tried (docs/device-runtime.md) */
#define HOT_SHARDS	1024u
#define KERNEL_CAPACITY	1024u		/* AGENT_MAX_KERNELS */
#define SHARD_BUDGET	(16ull << 20)	/* bytes of one map, all shards */
#define KERNEL_BUDGET	(48ull << 20)	/* the same, a map kept per kernel */
#define MAX_PACKET	(64u << 20)

/* ------------------------------------------------------ configuration -- */

static uint32_t kind_of(const struct map_sym *m, bool host)
{
	static const uint32_t k[] = {
		[AGG_COUNT] = DEVRT_K_COUNT, [AGG_SUM] = DEVRT_K_SUM,
		[AGG_MIN] = DEVRT_K_MIN, [AGG_MAX] = DEVRT_K_MAX,
		[AGG_AVG] = DEVRT_K_AVG, [AGG_STATS] = DEVRT_K_STATS,
		[AGG_HIST] = DEVRT_K_HIST, [AGG_LHIST] = DEVRT_K_LHIST,
		[AGG_SMLOAD] = DEVRT_K_SMLOAD,
	};

	if ((!m->device && !host) || !m->val)
		return DEVRT_K_NONE;
	if (m->val->kind != T_AGG)
		return DEVRT_K_PLAIN;
	return k[m->val->agg];
}

/*
 * Fill D for map M.  Keyed aggregations get up to MAX_SHARDS shards
 * (fewer when big values would make the map huge), the others one per
 * SM; plain maps one, so every
 * lookup sees the one copy; smload without key DEVRT_SMLOAD_SHARDS (a
 * cache line per SM), with key one: its words are per SM already.
 */
static int map_desc(const struct map_sym *m, bool host,
		    struct devrt_map_desc *d)
{
	struct devrt_map_desc t;

	memset(d, 0, sizeof(*d));
	d->kind = kind_of(m, host);
	if (d->kind == DEVRT_K_NONE) {
		d->nshards = d->capacity = 1;
		return 0;
	}
	d->flags = m->val->is_signed ? DEVRT_F_SIGNED : 0;
	if (m->per_kernel)
		d->flags |= DEVRT_F_KERNEL;
	d->key_size = m->key ? m->key->size : 0;
	/* per kernel: a slot for each kernel that can be named */
	d->capacity = m->per_kernel ? KERNEL_CAPACITY :
		      m->key ? KEYED_CAPACITY : 1;
	d->nshards = d->kind == DEVRT_K_SMLOAD && !d->key_size ?
		     DEVRT_SMLOAD_SHARDS : 1;
	if (d->kind == DEVRT_K_PLAIN)
		d->value_size = m->val->size;
	if (d->kind == DEVRT_K_LHIST) {
		d->lmin = m->lmin;
		d->lmax = m->lmax;
		d->lstep = m->lstep;
	}
	t = *d;
	if (t.kind == DEVRT_K_SMLOAD)
		t.nwords = 1;		/* the agent sets the SM count */
	if (devrt_map_layout(&t))
		return -EINVAL;
	if (d->kind != DEVRT_K_PLAIN && d->kind != DEVRT_K_SMLOAD) {
		uint64_t budget = m->per_kernel ? KERNEL_BUDGET : SHARD_BUDGET;

		/* without key (or kept per kernel) the inline updates spread
		 * each launch's warps over the shards, a few lines each */
		d->nshards = d->key_size && !m->per_kernel ? MAX_SHARDS :
			     HOT_SHARDS;
		while (d->nshards > 1 && d->nshards * t.shard_bytes > budget)
			d->nshards /= 2;
	}
	return 0;
}

/* *DST: a copy of the N GLOBs SRC (none: NULL); -ENOMEM, half made. */
static int copy_globs(char ***dst, int *nd, const char *const *src, int n)
{
	if (n <= 0)
		return 0;
	*dst = calloc(n, sizeof(**dst));
	if (!*dst)
		return -ENOMEM;
	for (; *nd < n; (*nd)++)
		if (!((*dst)[*nd] = strdup(src[*nd])))
			return -ENOMEM;
	return 0;
}

/* The host programs of H into C (docs/hostpath.md). */
static int copy_host(const struct agent_config *h, struct agent_config *c)
{
	if (!h->nhprogs)
		return 0;
	c->hmaps = calloc(h->nhmaps + 1, sizeof(*c->hmaps));
	c->hprogs = calloc(h->nhprogs + 1, sizeof(*c->hprogs));
	if (!c->hmaps || !c->hprogs)
		return -ENOMEM;
	memcpy(c->hmaps, h->hmaps, h->nhmaps * sizeof(*c->hmaps));
	c->nhmaps = h->nhmaps;
	for (; c->nhprogs < h->nhprogs; c->nhprogs++) {
		const struct agent_hprog *s = &h->hprogs[c->nhprogs];
		struct agent_hprog *d = &c->hprogs[c->nhprogs];

		*d = *s;
		d->insns = malloc(s->ninsns * sizeof(*d->insns) + 1);
		if (!d->insns)
			return -ENOMEM;
		memcpy(d->insns, s->insns, s->ninsns * sizeof(*d->insns));
	}
	return copy_globs(&c->hglobs, &c->nhglobs,
			  (const char *const *)h->hglobs, h->nhglobs);
}

int agentctl_build(const struct unit *u, const struct device_set *ds,
		   const struct agentctl_opts *o, struct agent_config *c)
{
	memset(c, 0, sizeof(*c));
	c->verbose = o->verbose;
	c->ptx_major = PL_PTX_MIN_MAJOR;
	c->ptx_minor = PL_PTX_MIN_MINOR;
	c->nrings = o->nrings ? o->nrings : DEF_RINGS;
	c->ring_bytes = o->ring_bytes ? o->ring_bytes : DEF_RING_BYTES;
	if (c->ring_bytes & (c->ring_bytes - 1))
		return -EINVAL;
	c->decls = strdup(ds->decls ? ds->decls : "");
	c->maps = calloc(u->nmaps + 1, sizeof(*c->maps));
	if (copy_globs(&c->completes, &c->ncompletes, o->completes,
		       o->ncompletes) ||
	    copy_globs(&c->samples, &c->nsamples, o->samples, o->nsamples))
		goto nomem;
	c->complete_queued = c->ncompletes && o->complete_queued;
	c->sample_period = c->nsamples ? o->sample_period : 0;
	if (o->timeline && !(c->timeline = strdup(o->timeline)))
		goto nomem;
	/* an entry clause with deferred updates adds their exit text */
	c->clauses = calloc(2 * ds->n + 1, sizeof(*c->clauses));
	if (!c->decls || !c->maps || !c->clauses)
		goto nomem;
	c->nmaps = u->nmaps;
	for (const struct map_sym *m = u->maps; m; m = m->next) {
		if (m->index < 0 || m->index >= u->nmaps)
			continue;
		if (map_desc(m, o->host_maps && o->host_maps[m->index],
			     &c->maps[m->index])) {
			fprintf(stderr, "gputrace: %s: cannot be kept on the GPU (key of %d bytes)\n",
				m->name, m->key ? m->key->size : 0);
			agent_config_free(c);
			return -EINVAL;
		}
	}
	if (o->host && copy_host(o->host, c))
		goto nomem;
	for (int i = 0; ds && i < ds->n; i++) {
		const struct device_probe *p = &ds->v[i];
		struct agent_clause *cl = &c->clauses[c->nclauses++];

		cl->id = p->func.index;
		cl->warp = p->probe->warp;
		cl->mem = p->probe->mem;
		cl->exit = p->probe->retprobe;
		cl->glob = strdup(p->probe->func ? p->probe->func : "*");
		cl->call = strdup(p->call ? p->call : "");
		if (!cl->glob || !cl->call)
			goto nomem;
		/* device memory reads: the agent tracks allocations */
		if (strstr(cl->call, "__gt_rt_read"))
			c->reads = true;
		if (!p->func.flush)
			continue;
		cl = &c->clauses[c->nclauses++];
		cl->id = p->func.index;
		cl->exit = true;
		cl->glob = strdup(p->probe->func ? p->probe->func : "*");
		cl->call = strdup(p->func.flush);
		if (!cl->glob || !cl->call)
			goto nomem;
	}
	return 0;
nomem:
	agent_config_free(c);
	return -ENOMEM;
}

/* ------------------------------------------------------- open, close -- */

/* The agent library: AGENT_LIB, $GPUTRACE_AGENT_LIB, or by the binary. */
char *agentctl_find_lib(const char *want)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64], *slash;
	static const char *const rel[] = {
		"", "build/", "../lib/gputrace/",
	};
	ssize_t n;

	if (!want)
		want = getenv(AGENTCTL_LIB_ENV);
	if (want && *want)
		return realpath(want, NULL);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	slash[1] = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s%s%s", exe, rel[i],
			 AGENTCTL_LIB_NAME);
		if (!access(cand, R_OK))
			return realpath(cand, NULL);
	}
	return NULL;
}

static int make_env(struct agentctl *ac)
{
	const char *pre = getenv("LD_PRELOAD");
	int r[4];

	r[0] = pre && *pre ?
	       asprintf(&ac->env_str[0], "LD_PRELOAD=%s:%s", ac->lib, pre) :
	       asprintf(&ac->env_str[0], "LD_PRELOAD=%s", ac->lib);
	r[1] = asprintf(&ac->env_str[1], "%s=%s", AGENT_ENV_CONFIG, ac->cfg_path);
	r[2] = asprintf(&ac->env_str[2], "%s=%s", AGENT_ENV_SOCK, ac->sock_path);
	/* the pid: a child whose parent closed the number opens it again */
	r[3] = asprintf(&ac->env_str[3], "%s=%d:%d", AGENT_ENV_SEG, ac->seg_fd,
			(int)getpid());
	for (int i = 0; i < 4; i++) {
		if (r[i] < 0) {
			ac->env_str[i] = NULL;
			return -ENOMEM;
		}
		ac->env[i] = ac->env_str[i];
	}
	ac->env[4] = NULL;
	return 0;
}

static int open_socket(struct agentctl *ac)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	size_t n = strlen(ac->sock_path);
	socklen_t len = sizeof(sa);

	if (n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, ac->sock_path, n);
	if (ac->sock_path[0] == '@') {	/* abstract: no file to open */
		sa.sun_path[0] = 0;
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	}
	ac->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
			 0);
	if (ac->lfd < 0)
		return -errno;
	if (bind(ac->lfd, (struct sockaddr *)&sa, len) ||
	    listen(ac->lfd, 16))
		return -errno;
	ac->ep = epoll_create1(EPOLL_CLOEXEC);
	if (ac->ep < 0 || epoll_ctl(ac->ep, EPOLL_CTL_ADD, ac->lfd, &ev))
		return -errno;
	return 0;
}

#define SEG_ALL (AGENT_SEG_REGIONS * AGENT_SEG_BYTES)	/* sparse */

/* Not close-on-exec: the child inherits it under the same number. */
static int open_segment(struct agentctl *ac)
{
	ac->seg_fd = memfd_create("gputrace-maps", 0);
	if (ac->seg_fd < 0)
		return -errno;
	if (ftruncate(ac->seg_fd, SEG_ALL))
		return -errno;
	return 0;
}

int agentctl_open(const struct agentctl_opts *o, struct agentctl **out)
{
	struct agentctl *ac = calloc(1, sizeof(*ac));
	const char *tmp = getenv("TMPDIR");
	const char *what = "cannot create its files";
	int err;

	*out = NULL;
	if (!ac)
		return -ENOMEM;
	ac->o = *o;
	ac->lfd = ac->ep = ac->seg_fd = -1;
	ac->lib = agentctl_find_lib(o->agent_lib);
	if (!ac->lib) {
		fprintf(stderr, "gputrace: cannot find %s next to gputrace (set %s to its path)\n",
			AGENTCTL_LIB_NAME, AGENTCTL_LIB_ENV);
		free(ac);
		return -ENOENT;
	}
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	snprintf(ac->dir, sizeof(ac->dir), "%s/gputrace.XXXXXX", tmp);
	if (!mkdtemp(ac->dir)) {
		err = -errno;
		ac->dir[0] = 0;
		goto fail;
	}
	if (asprintf(&ac->cfg_path, "%s/config", ac->dir) < 0)
		ac->cfg_path = NULL;
	if (o->attach_pid > 0) {
		/* only the target may connect (SO_PEERCRED, accept_all);
		 * a random part so that nobody can take the name first */
		uint64_t rnd = 0;
		int ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

		if (ufd >= 0) {
			if (read(ufd, &rnd, sizeof(rnd)) != sizeof(rnd))
				rnd = 0;
			close(ufd);
		}
		rnd ^= (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
		if (asprintf(&ac->sock_path, "@gputrace-%d-%016llx",
			     (int)getpid(), (unsigned long long)rnd) < 0)
			ac->sock_path = NULL;
	} else if (asprintf(&ac->sock_path, "%s/sock", ac->dir) < 0) {
		ac->sock_path = NULL;
	}
	err = !ac->cfg_path || !ac->sock_path ? -ENOMEM : 0;
	if (!err) {
		err = open_socket(ac);
		what = "cannot open its socket";
	}
	if (!err) {
		err = open_segment(ac);
		what = "cannot create its shared memory";
	}
	if (!err)
		err = make_env(ac);
	if (!err) {
		*out = ac;
		return 0;
	}
fail:
	fprintf(stderr, "gputrace: agent: %s: %s\n", what, strerror(-err));
	agentctl_free(ac);
	return err;
}

const char *const *agentctl_env(const struct agentctl *ac)
{
	return ac->env;
}

const char *agentctl_sock(const struct agentctl *ac)
{
	return ac->sock_path;
}

const char *agentctl_lib(const struct agentctl *ac)
{
	return ac->lib;
}

void agentctl_set_host(struct agentctl *ac, const struct agent_config *host,
		       const bool *host_maps)
{
	ac->o.host = host;
	ac->o.host_maps = host_maps;
}

void agentctl_set_complete_queued(struct agentctl *ac, bool on)
{
	ac->o.complete_queued = on;
}

void agentctl_set_completes(struct agentctl *ac, const char *const *globs,
			    int n)
{
	ac->o.completes = globs;
	ac->o.ncompletes = n;
}

void agentctl_set_samples(struct agentctl *ac, const char *const *globs,
			  int n, uint32_t period)
{
	ac->o.samples = globs;
	ac->o.nsamples = n;
	ac->o.sample_period = period;
}

int agentctl_configure(struct agentctl *ac, const struct unit *u,
		       const struct device_set *ds)
{
	int err;

	for (int i = 0; ac->base && i < ac->cfg.nmaps; i++)
		agentctl_tab_free(&ac->base[i].tab);
	free(ac->base);
	free(ac->drops_seen);
	ac->base = NULL;
	ac->drops_seen = NULL;
	agent_config_free(&ac->cfg);
	err = agentctl_build(u, ds, &ac->o, &ac->cfg);
	if (err)
		return err;
	ac->u = u;
	ac->drops_seen = calloc(u->nmaps + 1, sizeof(*ac->drops_seen));
	ac->base = calloc(u->nmaps + 1, sizeof(*ac->base));
	if (!ac->drops_seen || !ac->base)
		return -ENOMEM;
	err = agent_config_write(&ac->cfg, ac->cfg_path);
	if (err)
		fprintf(stderr, "gputrace: agent: cannot write %s: %s\n",
			ac->cfg_path, strerror(-err));
	return err;
}

void agentctl_set_cb(struct agentctl *ac, const struct agentctl_cb *cb)
{
	ac->cb = *cb;
}

int agentctl_fd(const struct agentctl *ac)
{
	return ac ? ac->ep : -1;
}

void agentctl_warn_idle(const struct agentctl *ac)
{
	bool cuda = false;

	for (int i = 0; ac && i < ac->nconns; i++)
		cuda |= ac->conns[i].cuda;
	if (!ac)
		return;
	if (!cuda) {
		/* about the probes the program has: gpu:, cuda:complete */
		if (ac->cfg.nclauses || ac->cfg.ncompletes)
			fprintf(stderr, "gputrace: WARNING: the target launched "
				"no CUDA kernel (did it load the CUDA driver?): "
				"no %s probe could fire\n",
				ac->cfg.nclauses ? "gpu:" : "cuda:complete");
		return;
	}
	for (int i = 0; i < ac->cfg.nclauses; i++) {
		const char *glob = ac->cfg.clauses[i].glob;
		bool hit = false, told = false;

		for (int j = 0; j < i && !told; j++)
			told = !strcmp(ac->cfg.clauses[j].glob, glob);
		for (int j = 0; j < ac->nmatched && !hit && !told; j++) {
			char *base = syms_demangle(ac->matched[j], true);

			hit = !fnmatch(glob, ac->matched[j], 0) ||
			      (base && !fnmatch(glob, base, 0));
			free(base);
		}
		if (!hit && !told)
			fprintf(stderr, "gputrace: WARNING: no kernel that the "
				"target loaded matches '%s': its gpu: probes "
				"did not fire\n", glob);
	}
}

bool agentctl_connected(const struct agentctl *ac)
{
	for (int i = 0; ac && i < ac->nconns; i++)
		if (ac->conns[i].hello)
			return true;
	return false;
}

static void free_imgs(struct agentctl_img *v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i].data);
	free(v);
}

static void conn_close(struct agentctl *ac, struct agentctl_conn *c)
{
	if (c->fd >= 0) {
		epoll_ctl(ac->ep, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
	c->gone = true;
}

void agentctl_free(struct agentctl *ac)
{
	if (!ac)
		return;
	for (int i = 0; i < ac->nconns; i++)
		conn_close(ac, &ac->conns[i]);
	for (int i = 0; i < ac->nconns; i++)
		free_imgs(ac->conns[i].imgs, ac->conns[i].nimgs);
	free(ac->conns);
	free(ac->imgs);		/* a view: the data belongs to the conns */
	if (ac->ep >= 0)
		close(ac->ep);
	if (ac->lfd >= 0)
		close(ac->lfd);
	for (int r = 0; r < AGENT_SEG_REGIONS; r++)
		if (ac->seg[r])
			munmap((void *)ac->seg[r], AGENT_SEG_BYTES);
	if (ac->seg_fd >= 0)
		close(ac->seg_fd);
	if (ac->sock_path && ac->sock_path[0] != '@')
		unlink(ac->sock_path);
	if (ac->cfg_path)
		unlink(ac->cfg_path);
	if (ac->dir[0])
		rmdir(ac->dir);
	for (int i = 0; i < 4; i++)
		free(ac->env_str[i]);
	for (int i = 0; i < ac->nseen; i++)
		free(ac->seen[i]);
	free(ac->seen);
	for (int i = 0; i < ac->nmatched; i++)
		free(ac->matched[i]);
	free(ac->matched);
	free(ac->evq);
	if (ac->base)
		for (int i = 0; i < ac->cfg.nmaps; i++)
			agentctl_tab_free(&ac->base[i].tab);
	free(ac->base);
	free(ac->drops_seen);
	agent_config_free(&ac->cfg);
	free(ac->cfg_path);
	free(ac->sock_path);
	free(ac->lib);
	free(ac);
}

/* ---------------------------------------------------------- snapshots -- */

/* Whether image IM of the segment fits the map we configured. */
static bool img_ok(const struct agentctl *ac, const struct agent_seg_map *im)
{
	const struct devrt_map_desc *w, *d = &im->desc;
	struct devrt_map_desc t;

	if (im->map >= (uint32_t)ac->cfg.nmaps || im->offset % 8 ||
	    im->offset > AGENT_SEG_BYTES ||
	    im->bytes > AGENT_SEG_BYTES - im->offset)
		return false;
	w = &ac->cfg.maps[im->map];
	if (d->kind == DEVRT_K_NONE)
		return true;		/* carries printf drops only */
	if (d->kind != w->kind || d->flags != w->flags ||
	    d->key_size != w->key_size ||
	    (w->kind == DEVRT_K_PLAIN && d->value_size != w->value_size) ||
	    (w->kind == DEVRT_K_LHIST && (d->lmin != w->lmin ||
	     d->lmax != w->lmax || d->lstep != w->lstep)))
		return false;
	t = *d;
	/* a map kept per kernel comes with the slots in use only */
	if (d->flags & DEVRT_F_KERNEL)
		t.capacity = w->capacity;
	if (devrt_map_layout(&t))
		return false;
	devrt_map_used(&t, d->capacity, &t);
	if (t.nwords != d->nwords ||
	    t.capacity != d->capacity || t.slot_bytes != d->slot_bytes ||
	    t.shard_bytes != d->shard_bytes || t.value_size != d->value_size)
		return false;
	return devrt_map_bytes(&t) == im->bytes;
}

/* ac->imgs: every connection's latest images, in connection order. */
static int gather(struct agentctl *ac)
{
	struct agentctl_img *v;
	int n = 0;

	for (int i = 0; i < ac->nconns; i++)
		n += ac->conns[i].nimgs;
	v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (int i = 0; i < ac->nconns; i++) {
		if (!ac->conns[i].nimgs)
			continue;
		memcpy(v + n, ac->conns[i].imgs,
		       (size_t)ac->conns[i].nimgs * sizeof(*v));
		n += ac->conns[i].nimgs;
	}
	free(ac->imgs);
	ac->imgs = v;
	ac->nimgs = n;
	return 0;
}

/*
 * After C's DONE or BYE for SEQ naming REGION: copy the region if C
 * wrote it (its header says SEQ).  The copy outlives the agent and the
 * region's next writer.  -EAGAIN: a later snapshot of C's (its final
 * one, as the program ends) is being written or has replaced this one,
 * or did so while we copied: its own message (BYE) follows, wait for
 * it.  An older header: C wrote nothing (0, nothing copied).
 */
static int seg_copy(struct agentctl *ac, struct agentctl_conn *c,
		    uint64_t seq, uint32_t region)
{
	const struct agent_seg_hdr *h;
	const uint64_t maximg = (AGENT_SEG_BYTES - sizeof(*h)) /
				sizeof(struct agent_seg_map);
	struct agentctl_img *v;
	uint64_t hseq;
	uint32_t n;
	int k = 0, bad = 0;

	if (region >= AGENT_SEG_REGIONS)
		return -EINVAL;
	if (!ac->seg[region]) {
		/* mapped when first written: the segment is 8 GiB sparse */
		void *p = mmap(NULL, AGENT_SEG_BYTES, PROT_READ, MAP_SHARED,
			       ac->seg_fd, (off_t)region * AGENT_SEG_BYTES);

		if (p == MAP_FAILED)
			return -errno;
		ac->seg[region] = p;
	}
	h = (const void *)ac->seg[region];
	hseq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
	if (h->magic == AGENT_SEG_MAGIC && (!hseq || hseq > seq))
		return -EAGAIN;
	if (h->magic != AGENT_SEG_MAGIC || hseq != seq)
		return 0;
	n = h->nimages;
	if (seq == c->have_seq)
		return 0;		/* a BYE after its last DONE */
	if (n > maximg) {
		fprintf(stderr, "gputrace: agent in process %d: the snapshot segment is not valid\n",
			c->pid);
		return -EINVAL;
	}
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct agent_seg_map im;

		memcpy(&im, &h->images[i], sizeof(im));	/* it may change */
		if (!img_ok(ac, &im)) {
			bad++;
			continue;
		}
		v[k].map = im.map;
		v[k].gpu = im.gpu;
		v[k].drops = im.drops;
		v[k].desc = im.desc;
		if (im.desc.kind != DEVRT_K_NONE) {
			v[k].data = malloc(im.bytes ? im.bytes : 1);
			if (!v[k].data) {
				free_imgs(v, k);
				return -ENOMEM;
			}
			memcpy(v[k].data, (const uint8_t *)h + im.offset,
			       im.bytes);
		}
		k++;
	}
	/* torn: the agent began its next snapshot as we copied */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) != seq) {
		free_imgs(v, k);
		return -EAGAIN;
	}
	if (bad)
		fprintf(stderr, "gputrace: agent in process %d: %d map images do not match the configuration; ignored\n",
			c->pid, bad);
	free_imgs(c->imgs, c->nimgs);
	c->imgs = v;
	c->nimgs = k;
	c->have_seq = seq;
	return gather(ac);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* ----------------------------------------------------------- messages -- */

static bool seen_before(struct agentctl *ac, const char *line)
{
	char **v;

	for (int i = 0; i < ac->nseen; i++)
		if (!strcmp(ac->seen[i], line))
			return true;
	v = realloc(ac->seen, (ac->nseen + 1) * sizeof(*v));
	if (!v)
		return false;
	ac->seen = v;
	ac->seen[ac->nseen] = strdup(line);
	if (ac->seen[ac->nseen])
		ac->nseen++;
	return false;
}

/* A kernel that a clause matched: its name for printing keys, and for
 * agentctl_warn_idle(). */
static void note_kname(struct agentctl *ac, const char *p, size_t len)
{
	char *name = strndup(p, len), **v;

	if (!name || memchr(p, 0, len) || knames_add(name)) {
		free(name);
		return;
	}
	for (int i = 0; i < ac->nmatched; i++)
		if (!strcmp(ac->matched[i], name)) {
			free(name);
			return;
		}
	v = realloc(ac->matched, (ac->nmatched + 1) * sizeof(*v));
	if (!v) {
		free(name);
		return;
	}
	ac->matched = v;
	ac->matched[ac->nmatched++] = name;
}

/* "instrumented ..." and "info ..." lines are for -v only. */
static void report(struct agentctl *ac, const char *s, size_t n)
{
	while (n) {
		const char *nl = memchr(s, '\n', n);
		size_t len = nl ? (size_t)(nl - s) : n;
		char *line = strndup(s, len);

		if (line && len && !seen_before(ac, line) &&
		    (ac->o.verbose || (strncmp(line, "instrumented", 12) &&
				       strncmp(line, "info", 4))))
			fprintf(stderr, "gputrace: %s\n", line);
		free(line);
		len += nl ? 1 : 0;
		s += len;
		n -= len;
	}
}

/*
 * The whole records of a PRINTF message, each padded to 8, onto the
 * queue deliver() empties: a host clause's print() takes a snapshot,
 * which reads more messages, so nothing is delivered from handle().
 */
static void queue_events(struct agentctl *ac, const uint8_t *p, size_t n)
{
	while (n >= sizeof(struct agent_printf_rec)) {
		struct agent_printf_rec r;
		size_t len, pad;

		memcpy(&r, p, sizeof(r));
		if (r.size > n - sizeof(r))
			return;
		pad = sizeof(r) + ((r.size + 7ull) & ~7ull);
		if (ac->evq_len + pad > ac->evq_cap) {
			size_t cap = ac->evq_cap ? ac->evq_cap : 65536;
			uint8_t *q;

			while (cap < ac->evq_len + pad)
				cap *= 2;
			q = realloc(ac->evq, cap);
			if (!q)
				return;
			ac->evq = q;
			ac->evq_cap = cap;
		}
		memset(ac->evq + ac->evq_len, 0, pad);
		memcpy(ac->evq + ac->evq_len, p, sizeof(r) + r.size);
		ac->evq_len += pad;
		len = pad < n ? pad : n;
		p += len;
		n -= len;
	}
}

/* One record, once its id and size are checked against the unit. */
static void dispatch(struct agentctl *ac, const struct agent_printf_rec *r,
		     const uint8_t *args)
{
	const struct event_desc *ev;

	ev = ac->u && r->fmt < (uint32_t)ac->u->nevents ?
	     &ac->u->events[r->fmt] : NULL;
	if (!ev)
		return;
	if (ev->kind == EV_PRINTF) {
		if (ac->cb.on_printf &&
		    (!ev->args || (uint32_t)ev->args->size <= r->size))
			ac->cb.on_printf(ac->cb.arg, r->fmt, args, r->size);
		return;
	}
	if (ac->cb.on_event && hostev_size(ev) == (int64_t)r->size)
		ac->cb.on_event(ac->cb.arg, r->fmt, args, r->size);
}

/* The queued records, in order; once at a time (a callback's snapshot
 * queues more, which this loop delivers after the current one). */
static void deliver(struct agentctl *ac)
{
	uint8_t small[512], *args;

	if (ac->delivering)
		return;
	ac->delivering = true;
	while (ac->evq_head < ac->evq_len) {
		struct agent_printf_rec r;
		const uint8_t *p = ac->evq + ac->evq_head;

		memcpy(&r, p, sizeof(r));
		/* a copy: the callback may grow the queue */
		args = r.size <= sizeof(small) ? small : malloc(r.size);
		ac->evq_head += sizeof(r) + ((r.size + 7ull) & ~7ull);
		if (!args)
			continue;
		memcpy(args, p + sizeof(r), r.size);
		dispatch(ac, &r, args);
		if (args != small)
			free(args);
	}
	ac->evq_head = ac->evq_len = 0;
	ac->delivering = false;
}

static int send_msg(struct agentctl_conn *c, uint32_t type, uint64_t seq);

static void handle(struct agentctl *ac, int ci, const uint8_t *buf, size_t n)
{
	struct agentctl_conn *c = &ac->conns[ci];
	struct agent_msg m;
	const uint8_t *pl = buf + sizeof(m);
	uint32_t region = 0;

	if (n < sizeof(m))
		return;
	memcpy(&m, buf, sizeof(m));
	if (m.len != n - sizeof(m))
		return;
	if (m.len >= 4)
		memcpy(&region, pl, 4);	/* DONE, BYE: the region written */
	switch (m.type) {
	case AGENT_MSG_HELLO:
		if (m.len >= 4) {
			uint32_t pid;

			memcpy(&pid, pl, 4);
			c->pid = (int)pid;
		}
		c->hello = true;
		if (ac->o.verbose)
			fprintf(stderr, "gputrace: agent ready in process %d\n",
				c->pid);
		break;
	case AGENT_MSG_REPORT:
		report(ac, (const char *)pl, m.len);
		break;
	case AGENT_MSG_CUDA:
		c->cuda = true;
		break;
	case AGENT_MSG_KNAME:
		note_kname(ac, (const char *)pl, m.len);
		break;
	case AGENT_MSG_KHANDLE:
		if (m.len > 8 && m.len < 8 + 4096) {
			char name[4096];
			uint64_t h;

			memcpy(&h, pl, 8);
			memcpy(name, pl + 8, m.len - 8);
			name[m.len - 8] = 0;
			if (ac->cb.on_khandle)
				ac->cb.on_khandle(ac->cb.arg, h, name);
		}
		send_msg(c, AGENT_MSG_KHANDLE_ACK, m.seq);
		break;
	case AGENT_MSG_SNAPSHOT_DONE:
		/* no region: nothing was written */
		if (c->want && m.seq == c->want &&
		    (m.len < 4 || seg_copy(ac, c, m.seq, region) != -EAGAIN))
			c->got = true;
		break;
	case AGENT_MSG_PRINTF:
		queue_events(ac, pl, m.len);
		break;
	case AGENT_MSG_HLOST:
		if (m.len >= 8) {
			uint64_t v;

			memcpy(&v, pl, 8);
			if (v > c->host_lost)
				c->host_lost = v;
		}
		break;
	case AGENT_MSG_BYE:
		if (!c->bye && m.len >= 4)
			seg_copy(ac, c, m.seq, region);
		c->bye = true;
		/* the region may now go to the next process */
		if (m.len >= 4)
			send_msg(c, AGENT_MSG_BYE_ACK, m.seq);
		break;
	default:
		break;		/* newer agents may say more */
	}
}

/* Read every message C has sent.  Returns how many, or -1 once gone. */
static int drain(struct agentctl *ac, int ci)
{
	int n = 0;

	while (ac->conns[ci].fd >= 0) {
		struct agentctl_conn *c = &ac->conns[ci];
		ssize_t len = recv(c->fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
		uint8_t *buf;

		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (len <= 0) {
			/* a shell wrapper leaving with _exit lost nothing */
			if (c->hello && !c->bye && c->cuda)
				fprintf(stderr, "gputrace: the agent in process %d went away without a final snapshot; its maps are from the last one\n",
					c->pid);
			conn_close(ac, c);
			return -1;
		}
		buf = len <= MAX_PACKET ? malloc(len) : NULL;
		if (!buf) {
			char one;

			recv(c->fd, &one, 1, 0);	/* drop it */
			continue;
		}
		if (recv(c->fd, buf, len, 0) == len) {
			handle(ac, ci, buf, len);
			n++;
		}
		free(buf);
	}
	return n;
}

/*
 * -p: a connection must come from the target itself; it gets the
 * configuration and the segment as descriptors (AGENT_MSG_ATTACH).
 */
static bool attach_peer(struct agentctl *ac, int fd)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct agent_msg m = { .type = AGENT_MSG_ATTACH };
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b) };
	struct cmsghdr *c;
	int fds[2];
	bool ok;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) ||
	    cr.pid != ac->o.attach_pid)
		return false;
	fds[0] = open(ac->cfg_path, O_RDONLY | O_CLOEXEC);
	fds[1] = ac->seg_fd;
	if (fds[0] < 0)
		return false;
	memset(cm.b, 0, sizeof(cm.b));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	ok = sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(m);
	close(fds[0]);
	return ok;
}

static void accept_all(struct agentctl *ac)
{
	for (;;) {
		int fd = accept4(ac->lfd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN };
		struct agentctl_conn *v;

		if (fd < 0)
			return;
		if (ac->o.attach_pid > 0 && !attach_peer(ac, fd)) {
			close(fd);
			continue;
		}
		if (ac->nconns == ac->capconns) {
			int cap = ac->capconns ? ac->capconns * 2 : 4;

			v = realloc(ac->conns, cap * sizeof(*v));
			if (!v) {
				close(fd);
				return;
			}
			ac->conns = v;
			ac->capconns = cap;
		}
		memset(&ac->conns[ac->nconns], 0, sizeof(*v));
		ac->conns[ac->nconns].fd = fd;
		ac->nconns++;
		epoll_ctl(ac->ep, EPOLL_CTL_ADD, fd, &ev);
	}
}

static int service(struct agentctl *ac)
{
	int n = 0;

	accept_all(ac);
	for (int i = 0; i < ac->nconns; i++) {
		int k = drain(ac, i);

		n += k > 0 ? k : 0;
	}
	deliver(ac);
	return n;
}

static int wait_io(struct agentctl *ac, int timeout_ms)
{
	struct epoll_event ev[8];
	int n = epoll_wait(ac->ep, ev, 8, timeout_ms);

	if (n < 0 && errno != EINTR)
		return -errno;
	return 0;
}

int agentctl_poll(struct agentctl *ac, int timeout_ms)
{
	int err;

	if (!ac)
		return 0;
	err = wait_io(ac, timeout_ms);
	return err ? err : service(ac);
}

static int send_msg(struct agentctl_conn *c, uint32_t type, uint64_t seq)
{
	struct agent_msg m = { .type = type, .len = 0, .seq = seq };

	if (c->fd < 0)
		return -EPIPE;
	return send(c->fd, &m, sizeof(m), MSG_NOSIGNAL) == sizeof(m) ?
	       0 : -errno;
}

/* New map-table drops, once per snapshot. */
static void report_drops(struct agentctl *ac)
{
	for (const struct map_sym *m = ac->u ? ac->u->maps : NULL; m;
	     m = m->next) {
		uint64_t d = 0;

		if (m->index < 0 || m->index >= ac->cfg.nmaps ||
		    ac->cfg.maps[m->index].kind == DEVRT_K_NONE)
			continue;
		for (int i = 0; i < ac->nimgs; i++) {
			const struct agentctl_img *im = &ac->imgs[i];

			if (im->map == (uint32_t)m->index && im->data)
				d += devrt_map_drops(&im->desc, im->data);
		}
		if (d > ac->drops_seen[m->index])
			fprintf(stderr, "gputrace: %s: %llu GPU updates lost: more than %u keys\n",
				m->name,
				(unsigned long long)(d - ac->drops_seen[m->index]),
				ac->cfg.maps[m->index].capacity);
		ac->drops_seen[m->index] = d;
	}
}

static int snapshot(struct agentctl *ac, int timeout_ms, uint32_t type)
{
	uint64_t deadline;

	if (!ac)
		return 0;
	deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	service(ac);
	/* one agent at a time: they share the segment */
	for (int i = 0; i < ac->nconns; i++) {
		struct agentctl_conn *c = &ac->conns[i];

		if (!c->hello || c->bye || c->gone)
			continue;
		c->want = ++ac->seq;
		c->got = false;
		if (send_msg(c, type, c->want)) {
			c->want = 0;
			continue;
		}
		for (;;) {
			uint64_t t = now_ms();

			c = &ac->conns[i];	/* service() may move it */
			if (c->got || c->bye || c->gone)
				break;
			if (t >= deadline) {
				if (!c->late_told)
					fprintf(stderr, "gputrace: the agent in process %d did not send its maps in time; they are from its last snapshot\n",
						c->pid);
				c->late_told = true;
				break;
			}
			wait_io(ac, (int)(deadline - t));
			service(ac);
		}
		ac->conns[i].want = 0;
	}
	report_drops(ac);
	return 0;
}

int agentctl_snapshot(struct agentctl *ac, int timeout_ms)
{
	return snapshot(ac, timeout_ms, AGENT_MSG_SNAPSHOT);
}

int agentctl_snapshot_last(struct agentctl *ac, int timeout_ms)
{
	return snapshot(ac, timeout_ms, AGENT_MSG_SNAPSHOT_LAST);
}

/*
 * Printf drops are per context; the agent may put them on map 0's image
 * only or on every image of the context: take each GPU's largest.
 */
uint64_t agentctl_lost(struct agentctl *ac)
{
	uint64_t total = 0, d;

	if (!ac)
		return 0;
	for (int i = 0; i < ac->nimgs; i++) {
		uint32_t gpu = ac->imgs[i].gpu;
		uint64_t most = 0;
		int j;

		for (j = 0; j < i && ac->imgs[j].gpu != gpu; j++)
			;
		if (j < i)
			continue;	/* that GPU was counted */
		for (j = i; j < ac->nimgs; j++)
			if (ac->imgs[j].gpu == gpu && ac->imgs[j].drops > most)
				most = ac->imgs[j].drops;
		total += most;
	}
	/* and the events host clauses in the agent lost */
	for (int i = 0; i < ac->nconns; i++)
		total += ac->conns[i].host_lost;
	d = total > ac->lost_seen ? total - ac->lost_seen : 0;
	if (total > ac->lost_seen)
		ac->lost_seen = total;
	return d;
}

void agentctl_detach(struct agentctl *ac)
{
	if (!ac)
		return;
	for (int i = 0; i < ac->nconns; i++)
		if (ac->conns[i].hello && !ac->conns[i].gone)
			send_msg(&ac->conns[i], AGENT_MSG_DETACH, 0);
}
