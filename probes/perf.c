// SPDX-License-Identifier: MIT
/*
 * profile:UNIT:N, software:EVENT[:N] and hardware:EVENT[:N]: perf_event
 * programs on one event per online CPU, as bpftrace 0.17 opens them
 * (pid -1: every task).  profile:hz:N asks perf for N samples a second
 * (frequency mode), the other units for a fixed cpu-clock period in ns.
 * software/hardware count EVENT and run the program every N events (the
 * sample period), with bpftrace's default N when it is left out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "lang/ast.h"
#include "probes/provider.h"

#define NSEC_PER_SEC	1000000000ull

struct perf_ev {
	const char *name;
	const char *alias;
	uint32_t type;
	uint64_t config;
	uint64_t defcount;	/* bpftrace 0.17's period when N is omitted */
};

static const struct perf_ev sw_events[] = {
	{ "cpu-clock", "cpu", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000000 },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 1000000 },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 100 },
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1000 },
	{ "cpu-migrations", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1 },
	{ "minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 100 },
	{ "major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1 },
	{ "alignment-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, 1 },
	{ "emulation-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, 1 },
	{ "dummy", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 1 },
	{ "bpf-output", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, 1 },
};

static const struct perf_ev hw_events[] = {
	{ "cpu-cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1000000 },
	{ "instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1000000 },
	{ "cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 1000000 },
	{ "cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1000000 },
	{ "branch-instructions", "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 100000 },
	{ "branch-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 100000 },
	{ "bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, 100000 },
	{ "frontend-stalls", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 1000000 },
	{ "backend-stalls", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 1000000 },
	{ "ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 1000000 },
};

/* What parse() decided, in the AST arena with the probe. */
struct perf_probe {
	struct perf_event_attr attr;
	int ncpus;
	int *fds;		/* one event, then one link, per CPU */
	int nfds;
};

/* A positive decimal, 0x hex or e-notation integer (interval's rules). */
static int count_arg(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end == 'e' && end[1] >= '0' && end[1] <= '9') {
		unsigned long exp = strtoul(end + 1, &end, 10);

		for (; exp && v; exp--) {
			if (v > UINT64_MAX / 10)
				return -ERANGE;
			v *= 10;
		}
	}
	if (errno || *end || !v)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The online CPUs, "0-3,6" in sysfs, as a list of ids (arena). */
static int online_cpus(int **cpus)
{
	char buf[4096];
	int n = 0, cap = 0, *v = NULL;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	char *s;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	for (int pass = 0; pass < 2; pass++) {
		n = 0;
		for (s = buf; *s && *s != '\n';) {
			long a = strtol(s, &s, 10), b = a;

			if (*s == '-')
				b = strtol(s + 1, &s, 10);
			for (; a <= b; a++, n++)
				if (pass)
					v[n] = a;
			if (*s == ',')
				s++;
		}
		if (!pass) {
			cap = n ? n : 1;
			v = ast_alloc(cap * sizeof(*v));
		}
	}
	*cpus = v;
	return n;
}

static int set_event(struct probe *p, const struct perf_ev *tab, size_t ntab,
		     char *err, size_t errlen, int *arg)
{
	const char *kind = p->prov->name;
	struct perf_probe *pp = p->priv;
	const struct perf_ev *e = NULL;
	uint64_t n;

	if (p->nargs < 1 || p->nargs > 2)
		return provider_fail(err, errlen, arg, -1,
				     "%s probe type requires 1 or 2 arguments", kind);
	for (size_t i = 0; i < ntab && !e; i++)
		if (!strcmp(tab[i].name, p->args[0]) ||
		    (tab[i].alias && !strcmp(tab[i].alias, p->args[0])))
			e = &tab[i];
	if (!e)
		return provider_fail(err, errlen, arg, 0,
				     "%s: unknown event", p->args[0]);
	n = e->defcount;
	if (p->nargs == 2 && count_arg(p->args[1], &n))
		return provider_fail(err, errlen, arg, 1,
				     "%s: count must be a positive integer", p->args[1]);
	pp->attr.type = e->type;
	pp->attr.config = e->config;
	pp->attr.sample_period = n;
	return 0;
}

static int profile_period(struct probe *p, char *err, size_t errlen, int *arg)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "s", NSEC_PER_SEC }, { "ms", 1000000 }, { "us", 1000 },
		{ "hz", 0 },
	};
	struct perf_probe *pp = p->priv;
	uint64_t n;
	size_t i;

	if (p->nargs != 2)
		return provider_fail(err, errlen, arg, -1, "%s",
				     "profile probe type requires 2 arguments (profile:UNIT:N, UNIT one of s, ms, us, hz)");
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(p->args[0], units[i].unit))
			break;
	if (i == sizeof(units) / sizeof(units[0]))
		return provider_fail(err, errlen, arg, 0,
				     "%s is not an accepted unit of time (s, ms, us, hz)",
				     p->args[0]);
	if (count_arg(p->args[1], &n))
		return provider_fail(err, errlen, arg, 1,
				     "profile rate must be a positive integer, not '%s'",
				     p->args[1]);
	pp->attr.type = PERF_TYPE_SOFTWARE;
	pp->attr.config = PERF_COUNT_SW_CPU_CLOCK;
	if (!units[i].ns) {
		pp->attr.freq = 1;
		pp->attr.sample_freq = n;
	} else {
		if (n > UINT64_MAX / units[i].ns)
			return provider_fail(err, errlen, arg, 1,
					     "profile period %s is too long", p->args[1]);
		pp->attr.sample_period = n * units[i].ns;
	}
	return 0;
}

static int pf_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	struct perf_probe *pp = ast_alloc(sizeof(*pp));

	memset(pp, 0, sizeof(*pp));
	p->priv = pp;
	pp->attr.size = sizeof(pp->attr);
	pp->attr.disabled = 1;
	if (p->prov == &provider_profile)
		return profile_period(p, err, errlen, arg);
	if (p->prov == &provider_software)
		return set_event(p, sw_events, sizeof(sw_events) / sizeof(sw_events[0]),
				 err, errlen, arg);
	return set_event(p, hw_events, sizeof(hw_events) / sizeof(hw_events[0]),
			 err, errlen, arg);
}

static bool pf_has_builtin(const struct probe *p, const char *name)
{
	return provider_host_builtin(name);
}

static void pf_detach(struct probe *p)
{
	struct perf_probe *pp = p->priv;

	/* links (odd slots) before their events */
	while (pp && pp->nfds > 0)
		close(pp->fds[--pp->nfds]);
	p->prog_fd = -1;
}

static int pf_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	struct perf_probe *pp = p->priv;
	int *cpus, n, e;

	if (!pp) {
		snprintf(err, errlen, "%s: not parsed", p->name);
		return -EINVAL;
	}
	n = online_cpus(&cpus);
	if (n <= 0) {
		snprintf(err, errlen, "%s: cannot read the online CPUs", p->name);
		return n ? n : -ENODEV;
	}
	pp->fds = ast_alloc(2 * n * sizeof(int));
	pp->nfds = 0;
	p->prog_fd = prog_fd;
	for (int i = 0; i < n; i++) {
		struct probe tmp = { .name = p->name, .prog_fd = -1 };
		int pfd = syscall(SYS_perf_event_open, &pp->attr, -1, cpus[i],
				  -1, PERF_FLAG_FD_CLOEXEC);

		if (pfd < 0) {
			e = errno;
			snprintf(err, errlen, "perf_event_open (cpu %d): %s%s",
				 cpus[i], strerror(e),
				 e == ENOENT || e == EOPNOTSUPP ?
				 " (this machine has no such counter; a VM often has no hardware events)" : "");
			pf_detach(p);
			return -e;
		}
		/* probe_perf_attach records into tmp.fds; keep them here */
		e = probe_perf_attach(&tmp, pfd, prog_fd, "perf event", err, errlen);
		for (int j = 0; j < tmp.nfds; j++)
			pp->fds[pp->nfds++] = tmp.fds[j];
		if (e) {
			pf_detach(p);
			return e;
		}
	}
	return 0;
}

const struct provider provider_profile = {
	.name = "profile",
	.prog_type = BPF_PROG_TYPE_PERF_EVENT,
	.parse = pf_parse,
	.has_builtin = pf_has_builtin,
	.pid_filter = true,
	.attach = pf_attach,
	.detach = pf_detach,
};

const struct provider provider_software = {
	.name = "software",
	.prog_type = BPF_PROG_TYPE_PERF_EVENT,
	.parse = pf_parse,
	.has_builtin = pf_has_builtin,
	.pid_filter = true,
	.attach = pf_attach,
	.detach = pf_detach,
};

const struct provider provider_hardware = {
	.name = "hardware",
	.prog_type = BPF_PROG_TYPE_PERF_EVENT,
	.parse = pf_parse,
	.has_builtin = pf_has_builtin,
	.pid_filter = true,
	.attach = pf_attach,
	.detach = pf_detach,
};
