// SPDX-License-Identifier: MIT
/*
 * interval:UNIT:N — a perf_event program on a software cpu-clock event of
 * CPU 0, as bpftrace does: the event's hrtimer fires every period and runs
 * the program in whatever task CPU 0 is running.  Units are bpftrace
 * 0.17's: s, ms, us and hz (N times a second).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>

#include "probes/provider.h"

#define NSEC_PER_SEC	1000000000ull

/* Decimal, 0x hex, or an integer in e-notation ("1e3"), as bpftrace. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		if (!isxdigit((unsigned char)s[2]))
			return -EINVAL;
		errno = 0;
		v = strtoull(s + 2, &end, 16);
		if (errno || *end)
			return -EINVAL;
		*out = v;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (*s - '0');
	}
	if (*s == 'e' || *s == 'E') {
		unsigned int exp = 0;

		if (*++s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9' && exp < 100; s++)
			exp = exp * 10 + (*s - '0');
		for (; exp; exp--) {
			if (v > UINT64_MAX / 10)
				return -ERANGE;
			v *= 10;
		}
	}
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

static int iv_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "s", NSEC_PER_SEC }, { "ms", 1000000 }, { "us", 1000 },
		{ "hz", 0 },
	};
	uint64_t n, mult = 0;
	size_t i;
	int ret;

	if (p->nargs != 2) {
		snprintf(err, errlen,
			 "interval probe type requires 2 arguments (interval:UNIT:N, UNIT one of s, ms, us, hz)");
		*arg = -1;
		return -EINVAL;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(p->args[0], units[i].unit))
			break;
	if (i == sizeof(units) / sizeof(units[0])) {
		snprintf(err, errlen,
			 "%s is not an accepted unit of time (s, ms, us, hz)",
			 p->args[0]);
		*arg = 0;
		return -EINVAL;
	}
	mult = units[i].ns;
	ret = parse_u64(p->args[1], &n);
	if (ret || n == 0) {
		snprintf(err, errlen,
			 "interval %s must be a positive integer, not '%s'",
			 mult ? "period" : "frequency", p->args[1]);
		*arg = 1;
		return -EINVAL;
	}
	if (!mult) {
		if (n > NSEC_PER_SEC) {
			snprintf(err, errlen,
				 "interval frequency %s is above 1000000000 hz",
				 p->args[1]);
			*arg = 1;
			return -EINVAL;
		}
		p->period_ns = NSEC_PER_SEC / n;
	} else {
		if (n > UINT64_MAX / mult) {
			snprintf(err, errlen, "interval period %s%s is too long",
				 p->args[1], p->args[0]);
			*arg = 1;
			return -EINVAL;
		}
		p->period_ns = n * mult;
	}
	return 0;
}

static bool iv_has_builtin(const struct probe *p, const char *name)
{
	return provider_host_builtin(name);
}

static void iv_detach(struct probe *p)
{
	/* Link before event, so the program is gone before the timer. */
	while (p->nfds > 0)
		close(p->fds[--p->nfds]);
	p->prog_fd = -1;
}

static int iv_attach(struct probe *p, int prog_fd, char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = p->period_ns,
		.disabled = 1,
	};
	int pfd, e;

	if (!p->period_ns) {
		snprintf(err, errlen, "%s: not parsed", p->name);
		return -EINVAL;
	}
	pfd = syscall(SYS_perf_event_open, &attr, -1, 0, -1,
		      PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		e = errno;
		snprintf(err, errlen, "%s: perf_event_open (cpu-clock, cpu 0): %s",
			 p->name, strerror(e));
		return -e;
	}
	e = probe_perf_attach(p, pfd, prog_fd, "perf event", err, errlen);
	if (e)
		iv_detach(p);
	return e;
}

const struct provider provider_interval = {
	.name = "interval",
	.prog_type = BPF_PROG_TYPE_PERF_EVENT,
	.parse = iv_parse,
	.has_builtin = iv_has_builtin,
	.attach = iv_attach,
	.detach = iv_detach,
};
