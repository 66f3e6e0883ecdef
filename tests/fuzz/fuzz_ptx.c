// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: PTX text through the reader and the splicer: every
 * kernel instrumented (entry, exit, module declarations, %gt_t0), then
 * only the first kernel with strict arguments and pruning, as the agent
 * and the dry run ask.  Oracle: when the spliced text parses, every
 * kernel spliced declares the context parameter (a comment after the last
 * parameter once swallowed it, issue 31).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/ptx.h"

static const char decls[] =
	".func __gt_probe_0(.param .b64 ctx)\n{\n\tret;\n}\n";

/* Every kernel defined in M has the context parameter in OUT. */
static void check_ctx(const struct ptx_module *m, const char *out)
{
	struct ptx_module *o;
	char err[256];

	if (ptx_parse(out, strlen(out), &o, err, sizeof(err)))
		return;
	for (int i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i], *g;
		bool ctx = false;

		if (!f->is_entry || !f->is_def ||
		    !(g = ptx_find_entry(o, f->name)))
			continue;
		for (int k = 0; k < g->nparams; k++)
			ctx |= !strcmp(g->params[k].name, PTX_CTX_PARAM);
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
