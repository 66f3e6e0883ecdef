// SPDX-License-Identifier: MIT
/*
 * usdt:BIN:[PROVIDER:]NAME — a statically defined probe of a program or
 * library (<sys/sdt.h>), attached as a uprobe at the probe's nop, with
 * arg0..argN read as its note's argument specs say (a register, memory
 * at a register plus a displacement, or a constant).  A probe guarded
 * by a semaphore gets it counted up by the kernel for as long as the
 * uprobe exists (the uprobe PMU's ref_ctr_offset, Linux 4.20+), so the
 * program sees a tracer and takes the probe's path.  A probe with
 * several sites (inlined, unrolled) is attached at each, when all sites
 * read their arguments alike.
 */
#define _GNU_SOURCE	/* asprintf */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "lang/ast.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "probes/usdt_notes.h"

#define UPROBE_PMU	"/sys/bus/event_source/devices/uprobe"
#define USDT_MAX_SITES	4	/* an event and a link each in p->fds */

struct usdt_probe {
	int nargs;
	struct usdt_arg args[USDT_MAX_ARGS];
	int nsites;
	uint64_t offset[USDT_MAX_SITES];
	uint64_t sem[USDT_MAX_SITES];
};

/* PROV (NULL: any) and NAME match SITE, as globs. */
static bool site_match(const struct usdt_site *s, const char *prov,
		       const char *name)
{
	return (!prov || !fnmatch(prov, s->provider, 0)) &&
	       !fnmatch(name, s->name, 0);
}

static int us_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	const char *prov = p->nargs == 3 ? p->args[1] : NULL;
	/* args[-1] is out of bounds with no arguments: check the count first */
	const char *name = p->nargs >= 1 ? p->args[p->nargs - 1] : "";
	char path[PATH_MAX], msg[256];
	struct usdt_sites s;
	struct usdt_probe *up;
	const char *spec = NULL;
	int ret = 0;

	if (p->nargs < 2 || p->nargs > 3 || !p->args[0][0] || !name[0])
		return provider_fail(err, errlen, arg, -1,
				     "usdt probe type requires 2 or 3 arguments (usdt:BIN:[PROVIDER:]NAME)");
	if (syms_resolve(p->args[0], p->target_pid, path, sizeof(path), err,
			 errlen)) {
		*arg = 0;
		return -EINVAL;
	}
	if (usdt_read(path, &s, err, errlen)) {
		*arg = 0;
		return -EINVAL;
	}
	up = ast_alloc(sizeof(*up));
	memset(up, 0, sizeof(*up));
	for (size_t i = 0; i < s.n && !ret; i++) {
		const struct usdt_site *site = &s.v[i];

		if (!site_match(site, prov, name))
			continue;
		if (spec && strcmp(spec, site->args))
			ret = provider_fail(err, errlen, arg, p->nargs - 1,
					    "usdt probe %s:%s has sites that read their arguments differently (not supported)",
					    site->provider, site->name);
		else if (up->nsites == USDT_MAX_SITES)
			ret = provider_fail(err, errlen, arg, p->nargs - 1,
					    "usdt probe %s:%s has more than %d sites",
					    site->provider, site->name, USDT_MAX_SITES);
		if (ret)
			break;
		if (!spec) {
			up->nargs = usdt_parse_args(site->args, up->args,
						    USDT_MAX_ARGS, msg, sizeof(msg));
			if (up->nargs < 0) {
				ret = provider_fail(err, errlen, arg,
						    p->nargs - 1,
						    "usdt probe %s:%s: %s",
						    site->provider, site->name,
						    msg);
				break;
			}
			spec = site->args;
			p->func = ast_strndup(site->name, strlen(site->name));
		}
		up->offset[up->nsites] = site->offset;
		up->sem[up->nsites++] = site->sem_offset;
	}
	if (!ret && !up->nsites)
		ret = provider_fail(err, errlen, arg, p->nargs - 1,
				    "no usdt probe '%s%s%s' in %s", prov ? prov : "",
				    prov ? ":" : "", name, path);
	usdt_sites_free(&s);
	if (ret)
		return ret;
	p->path = ast_strndup(path, strlen(path));
	p->offset = up->offset[0];
	p->priv = up;
	return 0;
}

static int us_expand(const struct probe *p, char ***out, char *err,
		     size_t errlen)
{
	const char *prov = p->nargs == 3 ? p->args[1] : NULL;
	char path[PATH_MAX], shown[PATH_MAX], **names;
	struct usdt_sites s;
	size_t k = 0;

	*out = NULL;
	if (p->nargs < 2 || p->nargs > 3 || strpbrk(p->args[0], "*?")) {
		snprintf(err, errlen,
			 "%s: wildcards are supported in the provider and probe names only",
			 p->name);
		return -EINVAL;
	}
	if (syms_resolve_shown(p->args[0], p->target_pid, path, sizeof(path),
			       shown, sizeof(shown), err, errlen) ||
	    usdt_read(path, &s, err, errlen))
		return -EINVAL;
	names = calloc(s.n + 1, sizeof(*names));
	if (!names) {
		usdt_sites_free(&s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s.n; i++) {
		const struct usdt_site *v = &s.v[i];
		bool dup = false;

		if (!site_match(v, prov, p->args[p->nargs - 1]))
			continue;
		/* one probe per provider:name, whatever its sites */
		for (size_t j = 0; j < i && !dup; j++)
			dup = site_match(&s.v[j], prov, p->args[p->nargs - 1]) &&
			      !strcmp(s.v[j].provider, v->provider) &&
			      !strcmp(s.v[j].name, v->name);
		if (dup)
			continue;
		if (asprintf(&names[k], "usdt:%s:%s:%s", shown, v->provider,
			     v->name) < 0)
			break;
		k++;
	}
	usdt_sites_free(&s);
	*out = names;
	return k;
}

static bool us_has_builtin(const struct probe *p, const char *name)
{
	const struct usdt_probe *up = p->priv;
	int n;

	if (provider_host_builtin(name) || !strcmp(name, "func"))
		return true;
	return provider_arg_index(name, &n) && up && n < up->nargs;
}

static int us_builtin_src(const struct probe *p, const char *name,
			  struct builtin_src *src)
{
	const struct usdt_probe *up = p->priv;
	const struct usdt_arg *a;
	int n;

	memset(src, 0, sizeof(*src));
	if (!strcmp(name, "func")) {
		src->kind = BSRC_STR;
		src->str = p->func ? p->func : "";
		return 0;
	}
	if (!up || !provider_arg_index(name, &n) || n >= up->nargs)
		return -ENOENT;
	a = &up->args[n];
	src->size = a->size;
	src->sign = a->sign;
	src->off = a->reg_off;
	switch (a->kind) {
	case USDT_ARG_REG:
		src->kind = BSRC_CTX_INT;	/* the low bytes of the register */
		break;
	case USDT_ARG_MEM:
		src->kind = BSRC_PTR_INT;
		src->ptr_off = a->val;
		break;
	case USDT_ARG_IMM:
		src->kind = BSRC_IMM;
		src->imm = a->val;
		break;
	}
	return 0;
}

static int sysfs_int(const char *path, const char *prefix, long *out)
{
	char buf[64];
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return -errno;
	ok = fgets(buf, sizeof(buf), f) && !strncmp(buf, prefix, strlen(prefix));
	fclose(f);
	if (!ok)
		return -EINVAL;
	*out = strtol(buf + strlen(prefix), NULL, 10);
	return 0;
}

static void us_detach(struct probe *p)
{
	while (p->nfds > 0)
		close(p->fds[--p->nfds]);
	p->prog_fd = -1;
}

static int us_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	const struct usdt_probe *up = p->priv;
	struct perf_event_attr attr = { .size = sizeof(attr), .disabled = 1 };
	int pid = p->target_pid ? p->target_pid : -1;
	long type, refbit = -1;
	int e;

	if (!up || !p->path) {
		snprintf(err, errlen, "not parsed");
		return -EINVAL;
	}
	if (sysfs_int(UPROBE_PMU "/type", "", &type)) {
		snprintf(err, errlen, "this kernel has no uprobe PMU (%s)", UPROBE_PMU);
		return -ENOENT;
	}
	for (int i = 0; i < up->nsites; i++) {
		int pfd;

		attr.type = type;
		attr.config = 0;
		attr.config1 = (uint64_t)(uintptr_t)p->path;
		attr.config2 = up->offset[i];
		if (up->sem[i]) {
			/* "config:32-63": the semaphore's file offset */
			if (refbit < 0 &&
			    sysfs_int(UPROBE_PMU "/format/ref_ctr_offset", "config:",
				      &refbit)) {
				snprintf(err, errlen,
					 "the probe has a semaphore, and this kernel's uprobes cannot count one (no ref_ctr_offset)");
				us_detach(p);
				return -EOPNOTSUPP;
			}
			attr.config |= up->sem[i] << refbit;
		}
		pfd = syscall(SYS_perf_event_open, &attr, pid, pid == -1 ? 0 : -1,
			      -1, PERF_FLAG_FD_CLOEXEC);
		if (pfd < 0) {
			e = errno;
			snprintf(err, errlen, "perf_event_open (uprobe %s+0x%llx): %s",
				 p->path, (unsigned long long)up->offset[i],
				 strerror(e));
			us_detach(p);
			return -e;
		}
		e = probe_perf_attach(p, pfd, prog_fd, "uprobe", err, errlen);
		if (e) {
			us_detach(p);
			return e;
		}
	}
	return 0;
}

const struct provider provider_usdt = {
	.name = "usdt",
	.prog_type = BPF_PROG_TYPE_KPROBE,
	.parse = us_parse,
	.has_builtin = us_has_builtin,
	.builtin_src = us_builtin_src,
	.expand = us_expand,
	.pid_filter = false,
	.attach = us_attach,
	.detach = us_detach,
};
