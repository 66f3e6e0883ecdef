// SPDX-License-Identifier: MIT
/*
 * Cubins in the process's anonymous memory.  A kernel whose load the
 * agent did not see (-p: loaded before the attach) and that no ELF
 * object's .nv_fatbin has may come from a cubin the program keeps in
 * memory: Triton holds each kernel's cubin as a Python bytes object and
 * loads it with cuModuleLoadData.  Such a cubin carries its PTX in
 * .nv_debug_ptx_txt (ptxas -lineinfo).  The scan (gpucode/cubin_scan.c)
 * only ever copies the memory; what it found is kept here, as an index
 * for later misses.  docs/attach.md, docs/fatbin.md.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/cubin_scan.h"
#include "runtime/agent/agent_priv.h"

#define MAX_FOUND	4096		/* cubins kept */
#define RETRY_S		5.0		/* a later miss rescans after */

struct found {
	uint8_t *data;		/* our copy */
	size_t len;
};

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct found *found;
static int nfound;
static bool scanned;
static double scanned_at;

static double now_s(void)
{
	return agent_now_ns() / 1e9;
}

static void forget_all(void)
{
	while (nfound)
		free(found[--nfound].data);
	free(found);
	found = NULL;
}

/* A cubin copy D (LEN) found: kept when its PTX belongs to it, once. */
static void keep(uint8_t *d, size_t len, void *arg)
{
	struct fatbin_cubin_ptx x;
	struct fatbin_arch a;
	struct found *v;
	char err[160];

	if (fatbin_cubin_arch(d, len, &a) < 0 ||
	    fatbin_cubin_ptx(d, len, a.sm, NULL, &x, err, sizeof(err)) < 0)
		goto drop;
	free(x.text);
	for (int i = 0; i < nfound; i++)
		if (found[i].len == len && !memcmp(found[i].data, d, len))
			goto drop;
	if (nfound == MAX_FOUND ||
	    !(v = realloc(found, (size_t)(nfound + 1) * sizeof(*v))))
		goto drop;
	found = v;
	found[nfound++] = (struct found){ d, len };
	return;
drop:
	free(d);
}

static void scan(void)
{
	/* GPUTRACE_MEMSCAN_MB: another budget (tests) */
	const char *mb = getenv("GPUTRACE_MEMSCAN_MB");
	struct cubin_scan sc = {
		.ptx_only = true,
		.budget = mb ? strtoull(mb, NULL, 10) << 20 : 0,
	};
	int e;

	/* our old copies go first: freed, they are not found again */
	forget_all();
	scanned = true;
	scanned_at = now_s();
	e = cubin_scan(&sc, keep, NULL);
	if (e < 0) {
		agent_debug("memory scan: cannot read the mappings: %s",
			    strerror(-e));
		return;
	}
	agent_debug("memory scan: %d cubin%s with PTX in %llu MiB of %d "
		    "anonymous mappings, %.0f ms%s", nfound,
		    nfound == 1 ? "" : "s",
		    (unsigned long long)(sc.scanned >> 20), sc.mappings, sc.ms,
		    sc.huge ? " (mappings over 64 GiB skipped)" : "");
	if (sc.cut)
		agent_debug("memory scan: stopped at its budget of %llu MiB; "
			    "%llu MiB of anonymous memory not scanned",
			    (unsigned long long)(sc.budget >> 20),
			    (unsigned long long)
			    ((sc.total - sc.scanned) >> 20));
}

static int each(const char *name, agent_memscan_fn fn, void *arg)
{
	struct fatbin_cubin_func f;
	int n = 0;

	for (int i = 0; i < nfound; i++)
		if (!fatbin_cubin_func(found[i].data, found[i].len, name,
				       &f)) {
			n++;
			if (fn)
				fn(found[i].data, found[i].len, arg);
		}
	return n;
}

int agent_memscan_each(const char *name, agent_memscan_fn fn, void *arg)
{
	int n;

	pthread_mutex_lock(&scan_lock);
	if (!each(name, NULL, NULL) &&
	    (!scanned || now_s() - scanned_at >= RETRY_S))
		scan();
	n = each(name, fn, arg);
	pthread_mutex_unlock(&scan_lock);
	return n;
}

void agent_memscan_reset(void)
{
	pthread_mutex_lock(&scan_lock);
	forget_all();
	scanned = false;
	pthread_mutex_unlock(&scan_lock);
}
#endif /* GT_AGENT_SO */
