// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: program text through everything `--dry-run -d all`
 * does, nothing attached: parse, AST dump, type check and dump, code
 * generation and eBPF dump, the device verifier (walk printed), the
 * lowering and the probe functions' PTX.  Dumps go to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/bpf_disasm.h"
#include "compiler/codegen.h"
#include "compiler/device.h"
#include "compiler/sema.h"
#include "lang/ast.h"
#include "probes/provider.h"
#include "runtime/dryrun.h"

static FILE *sink;

/*
 * Oracles beyond the sanitizers: every jump of the generated code lands
 * inside its program (16-bit offsets wrapped, issue 17 defect 5;
 * backward jumps are loops: while, for), and text holding a NUL byte is
 * never accepted (defect 8).
 */
static void check_jumps(const struct bpf_insn *in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned cls = BPF_CLASS(in[i].code), op = BPF_OP(in[i].code);
		long to = (long)i + 1 + in[i].off;

		if ((cls != BPF_JMP && cls != BPF_JMP32) || op == BPF_CALL ||
		    op == BPF_EXIT)
			continue;
		if (to < 0 || to >= (long)n) {
			fprintf(stderr, "fuzz_prog: insn %zu jumps to %ld of %zu\n",
				i, to, n);
			abort();
		}
	}
}

/* $1 a number, $2 a string: both kinds of positional parameter */
static char *args[] = { "42", "str", NULL };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct source src = { .name = "fuzz" };
	struct sema_opts sem = { .argv = args, .argc = 2 };
	struct cg_opts copts = { 0 };
	struct gt_object obj = { 0 };
	struct device_set ds = { 0 };
	struct program *prog = NULL;
	struct unit *u = NULL;
	char *text;
	bool dev = false;

	if (!sink)
		sink = fopen("/dev/null", "w");
	text = malloc(size + 1);
	if (!text || !sink)
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	src.text = text;
	src.len = size;
	diag_reset();
	if (ast_parse(&src, &prog))
		goto out;
	if (memchr(text, 0, size)) {
		fputs("fuzz_prog: a NUL byte was accepted\n", stderr);
		abort();
	}
	ast_dump(sink, prog);
	if (sema_check(prog, &sem, &u))
		goto out;
	sema_dump(sink, u);
	if (!cg_build(u, &copts, &obj)) {
		for (int i = 0; i < obj.nprogs; i++) {
			bpf_disasm(sink, obj.progs[i].insns, obj.progs[i].ninsns);
			check_jumps(obj.progs[i].insns, obj.progs[i].ninsns);
			dev |= obj.progs[i].probe->prov->device;
		}
		if (!device_verify(u, &obj, sink) && dev &&
		    !device_lower(u, &obj, &ds)) {
			dryrun_ptx(&ds, NULL, true, sink);
			device_set_free(&ds);
		}
	}
	cg_free(&obj);
out:
	unit_free(u);
	ast_free_all();
	free(text);
	return 0;
}
