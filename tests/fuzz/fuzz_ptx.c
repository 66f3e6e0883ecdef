// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: PTX text through the reader and the splicer: every
 * kernel instrumented (entry, exit, module declarations, %gt_t0), then
 * only the first kernel with strict arguments and pruning, as the agent
 * and the dry run ask.  Oracle: the spliced text parses again, and
 * every kernel spliced declares the context parameter (a comment after
 * the last parameter once swallowed it, issue 31).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"

static const char decls[] =
	".func __gt_probe_0(.param .b64 ctx)\n{\n\tret;\n}\n";

/* The next kernel defined in M from *I on, or NULL. */
static const struct ptx_func *next_def(const struct ptx_module *m, int *i)
{
	for (; *i < m->nfuncs; ++*i)
		if (m->funcs[*i].is_entry && m->funcs[*i].is_def)
			return &m->funcs[(*i)++];
	return NULL;
}

/* Every kernel defined in M has the context parameter in OUT, kernel by
 * kernel in order (names may repeat in a mutated module). */
static void check_ctx(const struct ptx_module *m, const char *out)
{
	const struct ptx_func *f, *g;
	struct ptx_module *o;
	char err[256];
	int i = 0, k = 0;

	/* what we write must read back: ptxas would reject it */
	if (ptx_parse(out, strlen(out), &o, err, sizeof(err))) {
		fprintf(stderr, "spliced text does not parse: %s\n", err);
		abort();
	}
	while ((f = next_def(m, &i))) {
		bool ctx = false;

		if (!(g = next_def(o, &k))) {
			fprintf(stderr, "spliced text lost kernel %s\n", f->name);
			abort();
		}
		for (int p = 0; p < g->nparams; p++)
			ctx |= !strcmp(g->params[p].name, PTX_CTX_PARAM);
		if (!ctx) {
			fprintf(stderr, "spliced %s lacks %s\n", f->name,
				PTX_CTX_PARAM);
			abort();
		}
	}
	ptx_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ptx_splice_req req = {
		.decls = decls,
		.entry = "\tcall __gt_probe_0, (%gt_ctx);\n",
		.exit = "\tcall __gt_probe_0, (%gt_ctx);\n",
		.flags = PTX_SPLICE_T0,
		.min_major = 7, .min_minor = 0,
	};
	struct ptx_module *m;
	const char *names[2] = { NULL, NULL };
	char err[256], *out = NULL;

	if (ptx_parse((const char *)data, size, &m, err, sizeof(err)))
		return 0;
	for (int i = 0; i < m->nfuncs; i++) {
		ptx_ctx_offset(&m->funcs[i]);
		if (!names[0] && m->funcs[i].is_entry)
			names[0] = m->funcs[i].name;
	}
	if (ptx_splice(m, &req, &out, err, sizeof(err)) >= 0) {
		check_ctx(m, out);
		free(out);
	}
	out = NULL;
	if (names[0]) {
		ptx_find_entry(m, names[0]);
		req.names = names;
		req.flags = PTX_SPLICE_ONLY_MATCHED | PTX_SPLICE_STRICT_ARGS |
			    PTX_SPLICE_PRUNE;
		req.entry = "\tld.param.u64 %rd1, [%gt_arg0];\n";
		if (ptx_splice(m, &req, &out, err, sizeof(err)) >= 0)
			free(out);
	}
	ptx_free(m);
	return 0;
}
