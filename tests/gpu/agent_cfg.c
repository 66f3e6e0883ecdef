// SPDX-License-Identifier: MIT
/*
 * Write an agent configuration with one device probe, for the agent's
 * tests (tests/gpu/agent_standalone.sh, tests/accept/agent_hooks.sh):
 *
 *	agent_cfg OUT [-g GLOB] [-t] [-x] [-v] [-n]
 *
 * The probe is `gpu:warp:GLOB { @n = count(); }` (-t: gpu:kernel, every
 * thread; -x: at :exit; -n: none, a configuration without device
 * probes), device map 0, compiled from hand-written device
 * eBPF by the real lowering (pl_lower, pl_decls, pl_call_text) exactly
 * as the tracer would.  Build (needs devrt_ptx.c, see agent.mk):
 *
 *	cc -I. tests/gpu/agent_cfg.c compiler/ptx_lower*.c
 *	   compiler/dev_helpers.c gpucode/agent_config.c DEVRT_PTX.c
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/dev_helpers.h"
#include "compiler/emit.h"
#include "compiler/ptx_lower.h"
#include "gpucode/agent_proto.h"

int main(int argc, char **argv)
{
	struct bpf_insn prog[] = {
		I_MOV64_IMM(BPF_REG_1, 0),	/* device map 0 */
		I_MOV64_IMM(BPF_REG_2, 0),	/* no key */
		I_CALL(GT_DH_AGG_COUNT),
		I_MOV64_IMM(BPF_REG_0, 0),
		I_EXIT(),
	};
	struct gt_dev_map dm = { .id = 0, .key_size = 0, .value_size = 8 };
	struct pl_opts o = { .index = 0, .mode = PL_WARP };
	struct devrt_map_desc map = { .kind = DEVRT_K_COUNT, .value_size = 8,
				      .nshards = 16, .capacity = 1 };
	struct agent_clause cl = { .id = 0, .warp = true, .glob = "vadd" };
	struct agent_config c = { 0 };
	struct pl_func f;
	char err[256], *out;
	int opt, r;
	bool none = false;

	while ((opt = getopt(argc, argv, "g:txvn")) != -1) {
		switch (opt) {
		case 'g':
			cl.glob = optarg;
			break;
		case 't':
			cl.warp = false;
			o.mode = PL_THREAD;
			break;
		case 'x':
			cl.exit = true;
			break;
		case 'v':
			c.verbose = true;
			break;
		case 'n':
			none = true;
			break;
		default:
			goto usage;
		}
	}
	if (optind + 1 != argc)
		goto usage;
	out = argv[optind];
	if (!pl_runtime_available()) {
		fprintf(stderr, "agent_cfg: the device runtime is empty "
			"(built without nvcc)\n");
		return 1;
	}
	if (pl_lower(prog, sizeof(prog) / sizeof(prog[0]), &dm, 1, &o, &f,
		     err, sizeof(err)) < 0) {
		fprintf(stderr, "agent_cfg: %s\n", err);
		return 1;
	}
	cl.call = pl_call_text(&f);
	c.decls = pl_decls(&f, 1);
	c.nmaps = 1;
	c.maps = &map;
	c.nclauses = none ? 0 : 1;
	c.clauses = &cl;
	c.ptx_major = PL_PTX_MIN_MAJOR;
	c.ptx_minor = PL_PTX_MIN_MINOR;
	c.nrings = 4;		/* exercised by the drain even if unused */
	c.ring_bytes = 4096;
	r = cl.call && c.decls ? agent_config_write(&c, out) : -ENOMEM;
	free(cl.call);
	free(c.decls);
	pl_func_free(&f);
	if (r < 0) {
		fprintf(stderr, "agent_cfg: %s: %s\n", out, strerror(-r));
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: agent_cfg OUT [-g GLOB] [-t] [-x] "
		"[-v] [-n]\n");
	return 2;
}
