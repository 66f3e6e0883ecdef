#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: real cubins of the ML stack, captured on an H100
# (2026-12-06, Triton 3.6, PyTorch 2.11): tests/cubin/triton36_add_kernel.cubin,
# a @triton.jit vector add (num_warps=4: .reqntid 128, two hidden
# scratch parameters, .ptr .global parameters, sm_90a), and
# tests/cubin/inductor_gelu_layer_norm.cubin, torch.compile's fused GELU +
# LayerNorm.  -l lists their kernels as instrumentable, and the probes
# spliced into the PTX of their .nv_debug_ptx_txt are accepted by ptxas.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
PTXAS=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
[ -x "$PTXAS" ] || { echo "no ptxas"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-tri.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for k in triton36_add_kernel:add_kernel \
	 inductor_gelu_layer_norm:triton_per_fused_gelu_native_layer_norm_0; do
	f=tests/cubin/${k%%:*}.cubin n=${k#*:}
	"$GT" -l 'gpu:*' "./$f" >"$T/l" 2>&1 || fail "-l $f"
	printf 'gpu:kernel:%s\ngpu:warp:%s\ngpu:mem:%s\n' "$n" "$n" "$n" | cmp -s - "$T/l" ||
		{ cat "$T/l"; fail "-l $f: not listed as instrumentable"; }
	"$GT" --dry-run -d ptx -e "gpu:warp:$n { @w = count(); }
gpu:kernel:$n:exit { @e = hist(duration); } gpu:kernel:$n { @k[kernel] = count(); }" \
		"./$f" >/dev/null 2>"$T/out" || { cat "$T/out"; fail "--dry-run $f"; }
	grep -q "a cubin's .nv_debug_ptx_txt): kernels $n" "$T/out" ||
		fail "$f: not spliced from its PTX"
	awk '/^\.version/ { n++ } n' "$T/out" >"$T/mod.ptx"
	grep -q '^\.target sm_90a' "$T/mod.ptx" || fail "$f: .target sm_90a lost"
	"$PTXAS" -arch=sm_90a "$T/mod.ptx" -o "$T/mod.cubin" ||
		fail "$f: ptxas rejects the spliced PTX"
done
exit 0
