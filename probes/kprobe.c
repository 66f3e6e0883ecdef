// SPDX-License-Identifier: MIT
/*
 * kprobe:FUNC[+OFF] and kretprobe:FUNC.
 *
 * Where the kernel has kprobes, through the kprobe PMU (perf_event_open
 * with the dynamic type from sysfs, config1 = the function's name,
 * config2 = the offset), which needs no tracefs and leaves nothing
 * behind.  A kernel built without CONFIG_KPROBES (this project's CI
 * machine) still has BPF trampolines: there a probe without an offset on
 * a function that vmlinux BTF describes is loaded as fentry (fexit for
 * kretprobe), with the same builtins; its arguments come from the
 * trampoline's u64 array instead of the registers.
 */
#define _GNU_SOURCE	/* asprintf */
#include <errno.h>
#include <fnmatch.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <asm/ptrace.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "lang/ast.h"
#include "probes/kfuncs.h"
#include "probes/provider.h"

/* x86-64: the first six arguments are in registers, as for user code */
#define KPROBE_MAX_ARGS	6

struct kp_priv {
	int nargs;		/* fentry: the function's parameter count */
};

/* FUNC+OFF: OFF decimal or 0x hex. */
static int split_off(const char *s, char **name, uint64_t *off)
{
	const char *plus = strchr(s, '+');
	char *end;

	*off = 0;
	if (plus) {
		if (plus[1] < '0' || plus[1] > '9')
			return -EINVAL;
		errno = 0;
		*off = strtoull(plus + 1, &end, 0);
		if (errno || *end)
			return -EINVAL;
	}
	*name = ast_strndup(s, plus ? (size_t)(plus - s) : strlen(s));
	return 0;
}

/* fentry: the BTF id of FUNC and its parameter count, or negative errno. */
static int btf_func(const char *name, int *nargs)
{
	const struct btf *btf = kfuncs_btf();
	const struct btf_type *t;
	int id;

	if (!btf)
		return -ENOENT;
	id = kfuncs_btf_func(name);
	if (id <= 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_func_proto(t))
		return -ENOENT;
	*nargs = btf_vlen(t);
	return id;
}

/*
 * Whether the kernel loads a fentry/fexit program on BTF function ID: a
 * sandbox may refuse them all (an LSM), and the user should hear it at
 * the probe, not from the loader.  The answer for the first function
 * stands for all
 * when it is EPERM.
 */
static int tramp_usable(int id, bool fexit)
{
	static int answer = 1;
	const struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o);
	int fd;

	if (answer <= 0)
		return answer;
	o.expected_attach_type = fexit ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY;
	o.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "gt_fentry", "GPL", prog, 2, &o);
	if (fd < 0) {
		/* only a refusal of every trampoline stands for all */
		if (errno == EPERM)
			answer = -EPERM;
		return -errno;
	}
	close(fd);
	return 0;
}

static int kp_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	const char *prov = p->prov->name;
	struct kp_priv *kp;
	int type, bit, id, e;
	uint64_t off;
	char *name;

	p->retprobe = p->prov == &provider_kretprobe;
	if (p->nargs != 1 || !p->args[0][0])
		return provider_fail(err, errlen, arg, -1,
				     "%s probe type requires 1 argument (%s:FUNC)",
				     prov, prov);
	if (split_off(p->args[0], &name, &off))
		return provider_fail(err, errlen, arg, 0,
				     "invalid offset in '%s'",
				     p->args[0]);
	if (p->retprobe && strchr(p->args[0], '+'))
		return provider_fail(err, errlen, arg, 0,
				     "kretprobe cannot take an offset");
	if (!kfuncs_has(name))
		return provider_fail(err, errlen, arg, 0,
				     "%s is not a traceable kernel function", name);
	p->func = name;
	p->offset = off;
	kp = ast_alloc(sizeof(*kp));
	kp->nargs = KPROBE_MAX_ARGS;
	p->priv = kp;
	if (kfuncs_kprobe_pmu(&type, &bit))
		return 0;
	/* no kprobes: fentry/fexit, which has no offsets */
	if (off)
		return provider_fail(err, errlen, arg, 0,
				     "this kernel has no kprobes (CONFIG_KPROBES), and BPF trampolines cannot probe at an offset");
	id = btf_func(name, &kp->nargs);
	if (id < 0)
		return provider_fail(err, errlen, arg, 0,
				     "this kernel has no kprobes (CONFIG_KPROBES), and %s has no BTF for a BPF trampoline",
				     name);
	e = tramp_usable(id, p->retprobe);
	if (e)
		return provider_fail(err, errlen, arg, 0,
				     "this kernel has no kprobes (CONFIG_KPROBES), and refuses a BPF trampoline on %s (%s)",
				     name, strerror(-e));
	p->prog_type = BPF_PROG_TYPE_TRACING;
	p->attach_type = p->retprobe ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY;
	p->attach_btf_id = id;
	return 0;
}

static int kp_expand(const struct probe *p, char ***out, char *err,
		     size_t errlen)
{
	const char *const *v;
	char **names;
	size_t n, i, k = 0;
	int type, bit;
	bool pmu;

	*out = NULL;
	if (strchr(p->args[0] ? p->args[0] : "", '+')) {
		snprintf(err, errlen, "an offset cannot be used with a wildcard");
		return -EINVAL;
	}
	v = kfuncs_list(&n);
	if (!n) {
		snprintf(err, errlen,
			 "cannot list the kernel's functions (no tracefs, no /proc/kallsyms)");
		return -ENOENT;
	}
	pmu = kfuncs_kprobe_pmu(&type, &bit);
	names = calloc(n + 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		int nargs;

		if (p->nargs != 1 || fnmatch(p->args[0], v[i], 0))
			continue;
		/* without kprobes only BTF-described functions can be had */
		if (!pmu && btf_func(v[i], &nargs) < 0)
			continue;
		if (asprintf(&names[k], "%s:%s", p->prov->name, v[i]) < 0) {
			while (k)
				free(names[--k]);
			free(names);
			return -ENOMEM;
		}
		k++;
	}
	*out = names;
	return k;
}

static bool kp_has_builtin(const struct probe *p, const char *name)
{
	const struct kp_priv *kp = p->priv;
	int n;

	if (provider_host_builtin(name) || !strcmp(name, "func"))
		return true;
	if (p->retprobe)
		return !strcmp(name, "retval");
	return provider_arg_index(name, &n) && n < (kp ? kp->nargs : KPROBE_MAX_ARGS) &&
	       n < KPROBE_MAX_ARGS;
}

static int kp_builtin_src(const struct probe *p, const char *name,
			  struct builtin_src *src)
{
	static const int regs[KPROBE_MAX_ARGS] = {
		offsetof(struct pt_regs, rdi), offsetof(struct pt_regs, rsi),
		offsetof(struct pt_regs, rdx), offsetof(struct pt_regs, rcx),
		offsetof(struct pt_regs, r8), offsetof(struct pt_regs, r9),
	};
	const struct kp_priv *kp = p->priv;
	bool tramp = p->attach_btf_id != 0;
	int n;

	memset(src, 0, sizeof(*src));
	if (!strcmp(name, "func")) {
		src->kind = BSRC_STR;
		src->str = p->func ? p->func : "";
		return 0;
	}
	if (p->retprobe && !strcmp(name, "retval")) {
		/* fexit: the return value follows the arguments */
		src->kind = BSRC_CTX_U64;
		src->off = tramp ? 8 * kp->nargs : offsetof(struct pt_regs, rax);
		return 0;
	}
	if (!p->retprobe && provider_arg_index(name, &n) && n < KPROBE_MAX_ARGS) {
		src->kind = BSRC_CTX_U64;
		src->off = tramp ? 8 * n : regs[n];
		return 0;
	}
	return -ENOENT;
}

static void kp_detach(struct probe *p)
{
	while (p->nfds > 0)
		close(p->fds[--p->nfds]);
	p->prog_fd = -1;
}

static int kp_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .disabled = 1 };
	int type, bit, fd, e;

	if (!p->func) {
		snprintf(err, errlen, "%s: not parsed", p->name);
		return -EINVAL;
	}
	if (p->attach_btf_id) {
		fd = bpf_raw_tracepoint_open(NULL, prog_fd);
		if (fd < 0) {
			e = errno;
			snprintf(err, errlen, "attaching the BPF trampoline: %s",
				 strerror(e));
			return -e;
		}
		p->prog_fd = prog_fd;
		p->fds[p->nfds++] = fd;
		return 0;
	}
	if (!kfuncs_kprobe_pmu(&type, &bit) || bit < 0 || bit > 63) {
		snprintf(err, errlen, "this kernel has no kprobe PMU");
		return -ENOENT;
	}
	attr.type = type;
	attr.config = p->retprobe ? 1ull << bit : 0;
	attr.config1 = (uint64_t)(uintptr_t)p->func;
	attr.config2 = p->offset;
	fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "perf_event_open (kprobe %s+%llu): %s",
			 p->func, (unsigned long long)p->offset,
			 strerror(e));
		return -e;
	}
	e = probe_perf_attach(p, fd, prog_fd, "kprobe", err, errlen);
	if (e)
		kp_detach(p);
	return e;
}

const struct provider provider_kprobe = {
	.name = "kprobe",
	.prog_type = BPF_PROG_TYPE_KPROBE,
	.parse = kp_parse,
	.has_builtin = kp_has_builtin,
	.builtin_src = kp_builtin_src,
	.expand = kp_expand,
	.pid_filter = true,
	.attach = kp_attach,
	.detach = kp_detach,
};

const struct provider provider_kretprobe = {
	.name = "kretprobe",
	.prog_type = BPF_PROG_TYPE_KPROBE,
	.parse = kp_parse,
	.has_builtin = kp_has_builtin,
	.builtin_src = kp_builtin_src,
	.expand = kp_expand,
	.pid_filter = true,
	.attach = kp_attach,
	.detach = kp_detach,
};
