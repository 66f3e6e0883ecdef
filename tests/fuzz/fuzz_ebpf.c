// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: raw device eBPF through our verifier and, when it is
 * accepted, the lowering to PTX, as device.c chains them (vf_verify_drop
 * then pl_lower).  The input is whole instructions; a last odd byte picks
 * the lowering's mode (warp or thread, deferred updates).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ptx_lower.h"
#include "compiler/verifier.h"

/* id, key size, value size: keyed, keyless, tuples, string keys */
static const struct gt_dev_map maps[] = {
	{ 0, 8, 8 }, { 1, 0, 8 }, { 2, 16, 8 }, { 3, 0, 16 },
	{ 4, 24, 8 }, { 5, 8, 8 }, { 6, 64, 8 }, { 7, 0, 8 },
};
#define NMAPS ((int)(sizeof(maps) / sizeof(maps[0])))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = size / sizeof(struct bpf_insn);
	uint8_t opt = size % sizeof(struct bpf_insn) ? data[size - 1] : 0;
	struct pl_opts o = {
		.mode = opt & 1 ? PL_WARP : PL_THREAD,
		.defer = opt & 2,
		.no_promote = opt & 4,
	};
	struct pl_func f = { 0 };
	struct bpf_insn *p;
	char err[256];

	if (!n || n > VF_MAX_INSNS)
		return 0;
	p = malloc(n * sizeof(*p));
	if (!p)
		abort();
	memcpy(p, data, n * sizeof(*p));
	if (!vf_verify_drop(p, n, maps, NMAPS, "fuzz", NULL, err, sizeof(err),
			    NULL) &&
	    !pl_lower(p, n, maps, NMAPS, &o, &f, err, sizeof(err)))
		pl_func_free(&f);
	free(p);
	return 0;
}
