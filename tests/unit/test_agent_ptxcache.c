// SPDX-License-Identifier: MIT
/*
 * The agent's cache of parsed PTX (runtime/agent/agent_ptxcache.c): the
 * same text gives the same module, different texts different ones, a
 * module in use is never evicted, and one that found no free entry is
 * the caller's (freed by agent_ptx_put; ASan sees a leak or a double
 * free otherwise).
 */
#define GT_AGENT_SO
#define AGENT_NO_CUDA
#include "runtime/agent/agent_ptxcache.c"

#include <stdio.h>

#include "tests/unit/unit.h"

static char *ptx(int i)
{
	static char buf[8][256];

	snprintf(buf[i], sizeof(buf[i]),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".visible .entry k%d()\n{\n\tret;\n}\n", i);
	return buf[i];
}

int main(void)
{
	struct ptx_module *a, *b, *c, *held[PCACHE_N], *extra;
	char err[256];

	CHECK(!agent_ptx_get(ptx(0), &a, err, sizeof(err)), "parse");
	CHECK(a && ptx_find_entry(a, "k0"), "parsed k0");
	CHECK(!agent_ptx_get(ptx(0), &b, err, sizeof(err)) && a == b,
	      "same text: same module");
	CHECK(!agent_ptx_get(ptx(1), &c, err, sizeof(err)) && c != a,
	      "other text: other module");
	agent_ptx_put(a);
	agent_ptx_put(b);
	agent_ptx_put(c);
	/* hold PCACHE_N modules: the next one is not cached */
	for (int i = 0; i < PCACHE_N; i++)
		CHECK(!agent_ptx_get(ptx(2 + i), &held[i], err, sizeof(err)),
		      "fill");
	CHECK(!agent_ptx_get(ptx(0), &extra, err, sizeof(err)), "all held");
	for (int i = 0; i < PCACHE_N; i++)
		CHECK(extra != held[i], "a held module is not evicted");
	agent_ptx_put(extra);	/* freed here: it had no entry */
	for (int i = 0; i < PCACHE_N; i++)
		agent_ptx_put(held[i]);
	CHECK(agent_ptx_get("not ptx", &a, err, sizeof(err)) < 0 && err[0],
	      "a parse error is told");
	for (int i = 0; i < PCACHE_N; i++)
		ptx_free(ents[i].m);	/* the process's end, for ASan */
	UNIT_END();
}
