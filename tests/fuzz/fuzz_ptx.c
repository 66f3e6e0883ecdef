// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: PTX text through the reader and the splicer: every
 * kernel instrumented (entry, exit, module declarations, %gt_t0), then
 * only the first kernel with strict arguments and pruning, as the agent
 * and the dry run ask.
 */
#include <stdint.h>
#include <stdlib.h>

#include "gpucode/ptx.h"

static const char decls[] =
	".func __gt_probe_0(.param .b64 ctx)\n{\n\tret;\n}\n";

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
	if (ptx_splice(m, &req, &out, err, sizeof(err)) >= 0)
		free(out);
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
