// SPDX-License-Identifier: MIT
/*
 * Load a compiled gt_object into the kernel with libbpf's low-level API:
 * one bpf_map_create per map, then one bpf_prog_load per program after
 * the map indices in its ld_imm64 instructions are patched to map fds.
 * We do not use bpf_object (no ELF in between): the compiler already
 * hands us instructions and map definitions.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "compiler/program.h"
#include "probes/provider.h"

/* Big enough for the verifier's last states; the kernel keeps the tail. */
#define LOAD_LOG_SIZE	(1u << 20)

static void load_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Kernel object names allow [A-Za-z0-9_.] and 15 characters. */
static void obj_name(char *dst, size_t n, const char *src)
{
	size_t i;

	for (i = 0; src && src[i] && i + 1 < n; i++) {
		char c = src[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.'))
			c = '_';
		dst[i] = c;
	}
	dst[i] = '\0';
}

static int map_kind(enum gt_map_type t, enum bpf_map_type *out)
{
	switch (t) {
	case GT_MT_HASH:		*out = BPF_MAP_TYPE_HASH; return 0;
	case GT_MT_PERCPU_HASH:	*out = BPF_MAP_TYPE_PERCPU_HASH; return 0;
	case GT_MT_ARRAY:		*out = BPF_MAP_TYPE_ARRAY; return 0;
	case GT_MT_PERCPU_ARRAY:	*out = BPF_MAP_TYPE_PERCPU_ARRAY; return 0;
	case GT_MT_RINGBUF:		*out = BPF_MAP_TYPE_RINGBUF; return 0;
	case GT_MT_STACK_TRACE:	*out = BPF_MAP_TYPE_STACK_TRACE; return 0;
	}
	return -EINVAL;
}

static int create_map(struct gt_map_def *m, char *err, size_t errlen)
{
	enum bpf_map_type type;
	uint32_t ksz = m->key_size, vsz = m->value_size;
	char name[BPF_OBJ_NAME_LEN];
	LIBBPF_OPTS(bpf_map_create_opts, o);
	int fd;

	if (map_kind(m->type, &type)) {
		load_err(err, errlen, "map %s: unknown map type %d",
			 m->name, (int)m->type);
		return -EINVAL;
	}
	if (type == BPF_MAP_TYPE_RINGBUF)
		ksz = vsz = 0;
	obj_name(name, sizeof(name), m->name);
	o.map_flags = m->map_flags;
	fd = bpf_map_create(type, name, ksz, vsz, m->max_entries, &o);
	if (fd < 0) {
		int e = errno;

		load_err(err, errlen,
			 "map %s: cannot create (key %u, value %u, entries %u): %s",
			 m->name, ksz, vsz, m->max_entries, strerror(e));
		if (type == BPF_MAP_TYPE_STACK_TRACE && e == EINVAL)
			load_err(err, errlen,
				 "map %s: cannot create: a stack limit of %u is more than kernel.perf_event_max_stack allows (sysctl kernel.perf_event_max_stack=%u)",
				 m->name, vsz / 8, vsz / 8);
		return -e;
	}
	m->fd = fd;
	return 0;
}

static bool is_map_ref(const struct bpf_insn *in)
{
	return in->code == (BPF_LD | BPF_DW | BPF_IMM) &&
	       (in->src_reg == BPF_PSEUDO_MAP_FD ||
		in->src_reg == BPF_PSEUDO_MAP_VALUE);
}

/* Replace map indices with fds in INSNS (a copy of the program). */
static int patch_maps(const struct gt_object *obj, struct bpf_insn *insns,
		      size_t n, const char *pname, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int idx;

		if (insns[i].code != (BPF_LD | BPF_DW | BPF_IMM))
			continue;
		if (i + 1 >= n) {
			load_err(err, errlen,
				 "probe %s: insn %zu: truncated ld_imm64",
				 pname, i);
			return -EINVAL;
		}
		if (is_map_ref(&insns[i])) {
			idx = insns[i].imm;
			if (idx < 0 || idx >= obj->nmaps) {
				load_err(err, errlen,
					 "probe %s: insn %zu: map index %d out of range (%d maps)",
					 pname, i, idx, obj->nmaps);
				return -EINVAL;
			}
			insns[i].imm = obj->maps[idx].fd;
		}
		i++;	/* skip the second half of ld_imm64 */
	}
	return 0;
}

/* Keep the end of the log (where the verifier says why) within ERR. */
static void log_tail(char *err, size_t errlen, const char *head,
		     const char *log)
{
	size_t hl = strlen(head), ll = strlen(log), room;
	const char *p = log;

	while (ll && log[ll - 1] == '\n')
		ll--;
	if (!err || !errlen)
		return;
	room = errlen > hl + 2 ? errlen - hl - 2 : 0;
	if (ll > room) {
		const char *nl;

		p = log + (ll - room);
		nl = memchr(p, '\n', log + ll - p);
		if (nl)
			p = nl + 1;
	}
	snprintf(err, errlen, "%s\n%.*s", head, (int)(log + ll - p), p);
}

/*
 * The BTF a program with callback subprograms needs (the kernel wants
 * func_info for every function then): "long f(void)" for each, static.
 * FI gets 1 + NSUBS records; returns the BTF's fd or a negative errno.
 */
static int btf_funcs_load(struct bpf_func_info *fi, const uint32_t *offs,
			  int nsubs)
{
	struct btf *btf = btf__new_empty();
	int lng, proto, f = 0, fd;

	if (!btf)
		return -errno;
	lng = btf__add_int(btf, "long", 8, BTF_INT_SIGNED);
	proto = lng > 0 ? btf__add_func_proto(btf, lng) : lng;
	for (int i = 0; i <= nsubs && proto > 0 && f >= 0; i++) {
		f = btf__add_func(btf, i ? "gt_callback" : "gt_prog",
				  BTF_FUNC_STATIC, proto);
		fi[i] = (struct bpf_func_info){ .insn_off = i ? offs[i - 1] : 0,
						.type_id = f };
	}
	if (proto < 0 || f < 0) {
		btf__free(btf);
		return proto < 0 ? proto : f;
	}
	fd = btf__load_into_kernel(btf);
	if (!fd)
		fd = btf__fd(btf);
	if (fd >= 0)
		fd = dup(fd);
	btf__free(btf);
	return fd;
}

static int load_prog(const struct gt_object *obj, struct gt_bpf_prog *pr,
		     char *err, size_t errlen)
{
	const struct provider *prov = pr->probe ? pr->probe->prov : NULL;
	const char *pname = pr->probe && pr->probe->name ?
			    pr->probe->name : "?";
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	char name[BPF_OBJ_NAME_LEN], head[256];
	enum bpf_prog_type ptype;
	struct bpf_insn *insns;
	struct bpf_func_info *finfo = NULL;
	char *log;
	int fd, e, ret, btf_fd = -1;

	if (!prov) {
		load_err(err, errlen, "probe %s: no provider", pname);
		return -EINVAL;
	}
	if (prov->device)
		return 0;	/* lowered to PTX, not loaded into the kernel */
	if (pr->probe && pr->probe->in_agent)
		return 0;	/* run by the agent (docs/hostpath.md) */
	if (!pr->insns || !pr->ninsns) {
		load_err(err, errlen, "probe %s: empty program", pname);
		return -EINVAL;
	}
	insns = malloc(pr->ninsns * sizeof(*insns));
	if (!insns) {
		load_err(err, errlen, "probe %s: out of memory", pname);
		return -ENOMEM;
	}
	memcpy(insns, pr->insns, pr->ninsns * sizeof(*insns));
	ret = patch_maps(obj, insns, pr->ninsns, pname, err, errlen);
	if (ret)
		goto out;

	obj_name(name, sizeof(name), pname);
	ptype = pr->probe->prog_type ? pr->probe->prog_type : prov->prog_type;
	if (pr->probe->attach_btf_id) {
		opts.expected_attach_type = pr->probe->attach_type;
		opts.attach_btf_id = pr->probe->attach_btf_id;
	}
	if (pr->nsubs) {
		finfo = calloc(pr->nsubs + 1, sizeof(*finfo));
		btf_fd = finfo ? btf_funcs_load(finfo, pr->sub_offs, pr->nsubs) :
				 -ENOMEM;
		if (btf_fd < 0) {
			load_err(err, errlen, "probe %s: cannot load the BTF of its callbacks: %s",
				 pname, strerror(-btf_fd));
			ret = btf_fd;
			goto out;
		}
		opts.prog_btf_fd = btf_fd;
		opts.func_info = finfo;
		opts.func_info_cnt = pr->nsubs + 1;
		opts.func_info_rec_size = sizeof(finfo[0]);
	}
	/* Fast path without a log; only a failure pays for one. */
	fd = bpf_prog_load(ptype, name, "GPL", insns, pr->ninsns,
			   &opts);
	if (fd >= 0) {
		pr->fd = fd;
		ret = 0;
		goto out;
	}
	e = errno;
	log = calloc(1, LOAD_LOG_SIZE);
	if (log) {
		opts.log_buf = log;
		opts.log_size = LOAD_LOG_SIZE;
		opts.log_level = 1;
		fd = bpf_prog_load(ptype, name, "GPL", insns,
				   pr->ninsns, &opts);
		if (fd >= 0) {		/* raced into success: keep it */
			free(log);
			pr->fd = fd;
			ret = 0;
			goto out;
		}
		/* ENOSPC only means the log was cut; keep the first reason */
		if (errno != ENOSPC)
			e = errno;
	}
	snprintf(head, sizeof(head),
		 "probe %s: the kernel rejected the program (%s)",
		 pname, strerror(e));
	if (log && log[0])
		log_tail(err, errlen, head, log);
	else
		load_err(err, errlen, "%s", head);
	free(log);
	ret = -e;
out:
	if (btf_fd >= 0)
		close(btf_fd);
	free(finfo);
	free(insns);
	return ret;
}

int gt_object_load(struct gt_object *obj, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < obj->nmaps; i++)
		obj->maps[i].fd = -1;
	for (i = 0; i < obj->nprogs; i++)
		obj->progs[i].fd = -1;
	return gt_object_load_part(obj, NULL, err, errlen);
}

int gt_object_load_part(struct gt_object *obj, const bool *load, char *err,
			size_t errlen)
{
	struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };
	int i, ret;

	if (err && errlen)
		err[0] = '\0';

	/* Old kernels charge BPF memory to memlock; newer ones ignore it. */
	setrlimit(RLIMIT_MEMLOCK, &inf);

	for (i = 0; i < obj->nmaps; i++) {
		if (obj->maps[i].fd >= 0)
			continue;	/* shared: the caller's fd */
		ret = create_map(&obj->maps[i], err, errlen);
		if (ret)
			goto fail;
	}
	for (i = 0; i < obj->nprogs; i++) {
		obj->progs[i].fd = -1;
		if (load && !load[i])
			continue;
		ret = load_prog(obj, &obj->progs[i], err, errlen);
		if (ret)
			goto fail;
	}
	return 0;
fail:
	gt_object_unload(obj);
	return ret;
}

void gt_object_unload(struct gt_object *obj)
{
	int i;

	for (i = 0; i < obj->nprogs; i++) {
		if (obj->progs[i].fd >= 0)
			close(obj->progs[i].fd);
		obj->progs[i].fd = -1;
	}
	for (i = 0; i < obj->nmaps; i++) {
		if (obj->maps[i].fd >= 0)
			close(obj->maps[i].fd);
		obj->maps[i].fd = -1;
	}
}
