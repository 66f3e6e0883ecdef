// SPDX-License-Identifier: MIT
/*
 * -v: how often the program called the hooked entry points that are
 * not launches, next to the number of launches, said once at exit.  A
 * runtime that asks for a kernel handle at every launch shows here (as
 * many cuKernelGetFunction calls as launches), which is what decides
 * whether a uprobe on such an entry point costs per launch
 * (docs/hostpath.md, "Cost").  Counted only with -v: an atomic add on a
 * shared line is not free on the launch path.
 */
#ifdef GT_AGENT_SO
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#include "runtime/agent/agent_priv.h"

static const char *const names[AGENT_C_END_] = {
	[AGENT_C_LAUNCH] = "launches",
	[AGENT_C_MODULE_GET_FUNCTION] = "cuModuleGetFunction",
	[AGENT_C_LIBRARY_GET_KERNEL] = "cuLibraryGetKernel",
	[AGENT_C_KERNEL_GET_FUNCTION] = "cuKernelGetFunction",
	[AGENT_C_GET_PROC] = "cuGetProcAddress",
};

uint64_t agent_calls[AGENT_C_END_];

static struct {
	uint64_t n, hook, drv;
	uint64_t tsc0, ns0;	/* at the first launch: the TSC's rate */
} prof;

void agent_prof_init(void)
{
	const char *e = getenv("GPUTRACE_AGENT_PROF");

	agent.prof = agent.cfg.verbose && e && *e && *e != '0';
}

void agent_prof_add(uint64_t hook, uint64_t drv)
{
	if (!__atomic_fetch_add(&prof.n, 1, __ATOMIC_RELAXED)) {
		prof.ns0 = agent_now_ns();
		prof.tsc0 = __rdtsc();
	}
	__atomic_fetch_add(&prof.hook, hook, __ATOMIC_RELAXED);
	__atomic_fetch_add(&prof.drv, drv, __ATOMIC_RELAXED);
}

static void prof_report(void)
{
	uint64_t n = prof.n, dt, dns;
	double per;

	if (!agent.prof || n < 2)
		return;
	dt = __rdtsc() - prof.tsc0;
	dns = agent_now_ns() - prof.ns0;
	if (!dt || !dns)
		return;
	per = (double)dns / (double)dt;	/* ns a cycle */
	agent_debug("launch profile: %" PRIu64 " launches, %.1f ns a launch "
		    "in the hook before the driver's call, %.1f ns in the "
		    "driver's call (TSC %.2f GHz)", n,
		    (double)prof.hook * per / (double)n,
		    (double)prof.drv * per / (double)n, 1.0 / per);
}

void agent_calls_report(void)
{
	char buf[512];
	size_t n = 0;

	if (!agent.cfg.verbose)
		return;
	for (int i = 0; i < AGENT_C_END_ && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s %" PRIu64,
				      i ? ", " : "", names[i],
				      __atomic_load_n(&agent_calls[i],
						      __ATOMIC_RELAXED));
	agent_debug("calls seen: %s", buf);
	prof_report();
}
#endif /* GT_AGENT_SO */
