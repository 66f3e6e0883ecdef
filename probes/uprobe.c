// SPDX-License-Identifier: MIT
/*
 * uprobe:BIN:FUNC[+OFF] and uretprobe:BIN:FUNC.
 *
 * Attached through the uprobe PMU (perf_event_open with the dynamic type
 * from sysfs, config1 = path, config2 = file offset), which needs no
 * tracefs and leaves nothing behind if we die.  With -p the event is
 * opened for that process only, so the kernel installs the breakpoint in
 * its memory alone and no pid test is needed in the program.  Arguments
 * follow the x86-64 SysV ABI: six in registers, the rest on the stack
 * above the return address.
 */
#define _GNU_SOURCE	/* asprintf, memmem */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <asm/ptrace.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>

#include "lang/ast.h"
#include "probes/elf_syms.h"
#include "probes/insn_check.h"
#include "probes/provider.h"
#include "probes/uprobe_check.h"

#define UPROBE_PMU	"/sys/bus/event_source/devices/uprobe"

/* The FUNC part of the probe text: everything after BIN (may hold "::"). */
static const char *func_text(const struct probe *p)
{
	const char *s = strchr(p->name, ':');

	s = s ? strchr(s + 1, ':') : NULL;
	return s ? s + 1 : "";
}

/* Decimal or 0x hex, the whole string. */
static int parse_off(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

/*
 * Split FUNC+OFF: a '+' followed by a number.  "operator+(A, B)" has no
 * number after its '+', so it stays whole.  *NAME is malloc'd.
 */
static int split_off(const char *fn, char **name, uint64_t *off, bool *has)
{
	const char *plus = strrchr(fn, '+');

	*has = plus && !parse_off(plus + 1, off);
	if (!*has) {
		*off = 0;
		plus = fn + strlen(fn);
	}
	*name = strndup(fn, plus - fn);
	return *name ? 0 : -ENOMEM;
}

/*
 * "name"+OFF: the quotes let a name hold any character; the probe is
 * named without them, as bpftrace names it.
 */
static int unquote(struct probe *p, char *name)
{
	size_t n = strlen(name), at = func_text(p) - p->name;
	char *full;

	if (n < 2 || name[0] != '"' || name[n - 1] != '"')
		return 0;
	memmove(name, name + 1, n - 2);
	name[n - 2] = 0;
	full = ast_alloc(strlen(p->name) + 1);
	memcpy(full, p->name, at);
	strcpy(full + at, name);
	strcat(full, p->name + at + n);
	p->name = full;
	return 0;
}

/*
 * The probe is named with BIN as bpftrace shows it: a library or a
 * program by the path found, a file of a target in another mount
 * namespace through /proc/PID/root.
 */
static int show_path(struct probe *p, const char *shown)
{
	const char *fn = func_text(p);
	size_t plen = strlen(p->prov->name);
	char *full;

	if (!strcmp(shown, p->args[0]))
		return 0;
	full = ast_alloc(plen + strlen(shown) + strlen(fn) + 3);
	sprintf(full, "%s:%s:%s", p->prov->name, shown, fn);
	p->name = full;
	return 0;
}

/*
 * uprobe:BIN:ADDR (decimal or 0x hex): the function holding that
 * address gives func; the probe is named with the address in decimal,
 * as bpftrace names it.
 */
static int by_address(struct probe *p, const struct syms *s, uint64_t addr,
		      char *err, size_t errlen, int *arg)
{
	const struct syms_func *f = NULL;
	size_t i, at = func_text(p) - p->name;
	char *full;

	for (i = 0; i < s->n && !f; i++)
		if (s->funcs[i].addr <= addr &&
		    addr < s->funcs[i].addr + (s->funcs[i].size ? s->funcs[i].size : 1))
			f = &s->funcs[i];
	if (!f) {
		/* bpftrace's words, BIN as the user wrote it */
		const char *b = strchr(p->name, ':');

		b = b && b < p->name + at ? b + 1 : p->name;
		return provider_fail(err, errlen, arg, 1,
				     "Could not resolve address: %.*s0x%llx",
				     (int)(p->name + at - b), b,
				     (unsigned long long)addr);
	}
	full = ast_alloc(at + 24);
	memcpy(full, p->name, at);
	snprintf(full + at, 24, "%llu", (unsigned long long)addr);
	p->name = full;
	p->path = ast_strndup(s->path, strlen(s->path));
	p->func = ast_strndup(syms_display(f), strlen(syms_display(f)));
	p->offset = f->offset + (addr - f->addr);
	return 0;
}

/*
 * FUNC+OFF inside an instruction is refused, as bpftrace refuses it.
 * When Zydis is missing the probe goes ahead after a warning: the
 * offset is then the user's word.
 */
static int check_boundary(struct probe *p, const struct syms_func *f,
			  const char *path, uint64_t off, char *err,
			  size_t errlen, int *arg)
{
	char why[256];
	int r = insn_boundary(path, f->offset, f->size, off, why, sizeof(why));

	if (r == 1)
		return 0;
	if (r == 0)
		return provider_fail(err, errlen, arg, 1,
				     "could not add uprobe into middle of instruction: %s:%s+%llu",
				     p->args[0], syms_display(f), (unsigned long long)off);
	fprintf(stderr, "gputrace: warning: %s: cannot check that +%llu is an instruction boundary: %s\n",
		p->name, (unsigned long long)off, why);
	return 0;
}

static int up_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	const char *prov = p->prov->name;
	const struct syms_func *f;
	const struct syms *s;
	char path[PATH_MAX], shown[PATH_MAX], *name = NULL;
	bool has_off, ambiguous;
	uint64_t off, addr;
	int ret;

	if (p->nargs < 2 || !p->args[0][0])
		return provider_fail(err, errlen, arg, -1,
				     "%s probe type requires 2 arguments (%s:BIN:FUNC)",
				     prov, prov);
	if (!*func_text(p))
		return provider_fail(err, errlen, arg, 1,
				     "%s needs a function name", prov);
	if (split_off(func_text(p), &name, &off, &has_off))
		return -ENOMEM;
	if (unquote(p, name)) {
		ret = -ENOMEM;
		goto out;
	}
	p->retprobe = p->prov == &provider_uretprobe;
	if (p->retprobe && has_off) {
		ret = provider_fail(err, errlen, arg, 1,
				    "uretprobe cannot take an offset");
		goto out;
	}
	ret = syms_resolve_shown(p->args[0], p->target_pid, path, sizeof(path),
				 shown, sizeof(shown), err, errlen);
	if (!ret)
		ret = syms_load(path, &s, err, errlen);
	if (!ret)
		ret = show_path(p, shown);
	if (ret) {
		*arg = 0;
		ret = -EINVAL;
		goto out;
	}
	if (!has_off && !parse_off(name, &addr)) {
		ret = by_address(p, s, addr, err, errlen, arg);
		goto out;
	}
	f = syms_lookup(s, name, &ambiguous);
	if (ambiguous) {
		ret = provider_fail(err, errlen, arg, 1,
				    "'%s' names several functions in %s; give the full name or a wildcard",
				    name, path);
		goto out;
	}
	if (!f) {
		ret = provider_fail(err, errlen, arg, 1,
				    "no function '%s' in %s", name, path);
		goto out;
	}
	if (has_off && f->size && off >= f->size) {
		ret = provider_fail(err, errlen, arg, 1,
				    "Offset outside the function bounds ('%s' size is %llu)",
				    syms_display(f), (unsigned long long)f->size);
		goto out;
	}
	if (has_off) {
		ret = check_boundary(p, f, path, off, err, errlen, arg);
		if (ret)
			goto out;
	}
	/* the probe lives in the AST arena, and so do its strings */
	p->path = ast_strndup(path, strlen(path));
	p->func = ast_strndup(syms_display(f), strlen(syms_display(f)));
	p->offset = f->offset + off;
out:
	free(name);
	return ret;
}

static int up_expand(const struct probe *p, char ***out, char *err,
		     size_t errlen)
{
	const char *fn = func_text(p), *prov = p->prov->name;
	const struct syms *s;
	char path[PATH_MAX], shown[PATH_MAX], **names = NULL;
	size_t i, n = 0;
	int ret;

	*out = NULL;
	if (p->nargs < 2 || strpbrk(p->args[0], "*?")) {
		snprintf(err, errlen,
			 "%s: wildcards are supported in the function name only",
			 p->name);
		return -EINVAL;
	}
	if (strchr(fn, '+')) {
		snprintf(err, errlen, "an offset cannot be used with a wildcard");
		return -EINVAL;
	}
	ret = syms_resolve_shown(p->args[0], p->target_pid, path, sizeof(path),
				 shown, sizeof(shown), err, errlen);
	if (!ret)
		ret = syms_load(path, &s, err, errlen);
	if (ret)
		return ret;
	names = calloc(s->n + 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	/* the table is sorted by name: duplicates (same name, other
	 * address) are neighbours, and the name stands for them all */
	for (i = 0; i < s->n; i++) {
		const struct syms_func *f = &s->funcs[i];

		/* "*.part.N" clones cannot be traced: bpftrace skips them */
		if (!syms_match(f, fn) || strstr(f->name, ".part.") ||
		    (i && !strcmp(f->name, s->funcs[i - 1].name)))
			continue;
		if (asprintf(&names[n], "%s:%s:%s", prov, shown, f->name) < 0)
			goto nomem;
		n++;
	}
	*out = names;
	return n;
nomem:
	while (n)
		free(names[--n]);
	free(names);
	return -ENOMEM;
}

static bool is_arg(const char *name)
{
	return !strncmp(name, "arg", 3) && name[3] >= '0' && name[3] <= '9' &&
	       !name[4];
}

static bool up_has_builtin(const struct probe *p, const char *name)
{
	if (provider_host_builtin(name) || !strcmp(name, "func"))
		return true;
	if (p->prov == &provider_uretprobe)
		return !strcmp(name, "retval");
	return is_arg(name);
}

static int up_builtin_src(const struct probe *p, const char *name,
			  struct builtin_src *src)
{
	static const int regs[6] = {
		offsetof(struct pt_regs, rdi), offsetof(struct pt_regs, rsi),
		offsetof(struct pt_regs, rdx), offsetof(struct pt_regs, rcx),
		offsetof(struct pt_regs, r8), offsetof(struct pt_regs, r9),
	};

	memset(src, 0, sizeof(*src));
	if (!strcmp(name, "func")) {
		src->kind = BSRC_STR;
		src->str = p->func ? p->func : "";
		return 0;
	}
	if (p->prov == &provider_uretprobe && !strcmp(name, "retval")) {
		src->kind = BSRC_CTX_U64;
		src->off = offsetof(struct pt_regs, rax);
		return 0;
	}
	if (p->prov == &provider_uprobe && is_arg(name)) {
		int n = name[3] - '0';

		if (n < 6) {
			src->kind = BSRC_CTX_U64;
			src->off = regs[n];
		} else {
			/* at entry [sp] is the return address, arg6 above */
			src->kind = BSRC_USTACK_U64;
			src->off = 8 * (n - 5);
			src->sp_off = offsetof(struct pt_regs, rsp);
		}
		return 0;
	}
	return -ENOENT;
}

/* The first integer in sysfs file PATH (after PREFIX, if given). */
static int read_sysfs(const char *path, const char *prefix, long *out)
{
	char buf[64];
	const char *s = buf;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = 0;
	if (prefix) {
		if (strncmp(buf, prefix, strlen(prefix)))
			return -EINVAL;
		s += strlen(prefix);
	}
	*out = strtol(s, NULL, 10);
	return 0;
}

static void up_detach(struct probe *p)
{
	/* link before event, so the program goes before the breakpoint */
	while (p->nfds > 0)
		close(p->fds[--p->nfds]);
	p->prog_fd = -1;
}

static int up_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .disabled = 1 };
	int pid = p->target_pid ? p->target_pid : -1;
	long type, bit = 0;
	int pfd, e;

	/* a probe on the agent library (cuda:complete, gpu:sample) with -c:
	 * the agent is preloaded into the command and every process it
	 * starts (launchers, torchrun's ranks), and only they map it */
	if (provider_target_cmd && provider_agent_lib && p->path &&
	    !strcmp(p->path, provider_agent_lib))
		pid = -1;

	if (!p->path) {
		snprintf(err, errlen, "%s: not parsed", p->name);
		return -EINVAL;
	}
	e = read_sysfs(UPROBE_PMU "/type", NULL, &type);
	if (!e && p->retprobe)
		e = read_sysfs(UPROBE_PMU "/format/retprobe", "config:", &bit);
	if (e || bit < 0 || bit > 63) {
		snprintf(err, errlen,
			 "%s: this kernel has no uprobe PMU (%s)", p->name,
			 UPROBE_PMU);
		return e ? e : -EINVAL;
	}
	attr.type = type;
	attr.config = p->retprobe ? 1ull << bit : 0;
	attr.config1 = (uint64_t)(uintptr_t)p->path;
	attr.config2 = p->offset;
	/* a system-wide uprobe is one event on any cpu: the program runs
	 * wherever the breakpoint is hit */
	pfd = syscall(SYS_perf_event_open, &attr, pid, pid == -1 ? 0 : -1, -1,
		      PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		e = errno;
		snprintf(err, errlen, "%s: perf_event_open (uprobe %s+0x%llx): %s",
			 p->name, p->path, (unsigned long long)p->offset,
			 strerror(e));
		return -e;
	}
	e = probe_perf_attach(p, pfd, prog_fd, "uprobe", err, errlen);
	if (e)
		up_detach(p);
	else
		uprobe_check_fires(p);
	return e;
}

/* For other providers whose probes are uprobes (cuda:). */
int uprobe_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	return up_attach(p, prog_fd, err, errlen);
}

void uprobe_detach(struct probe *p)
{
	up_detach(p);
}

const struct provider provider_uprobe = {
	.name = "uprobe",
	.prog_type = BPF_PROG_TYPE_KPROBE,
	.parse = up_parse,
	.has_builtin = up_has_builtin,
	.builtin_src = up_builtin_src,
	.expand = up_expand,
	.pid_filter = false,
	.attach = up_attach,
	.detach = up_detach,
};

const struct provider provider_uretprobe = {
	.name = "uretprobe",
	.prog_type = BPF_PROG_TYPE_KPROBE,
	.parse = up_parse,
	.has_builtin = up_has_builtin,
	.builtin_src = up_builtin_src,
	.expand = up_expand,
	.pid_filter = false,
	.attach = up_attach,
	.detach = up_detach,
};
