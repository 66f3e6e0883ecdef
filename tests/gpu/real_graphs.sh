#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: device probes in CUDA graphs (issue "Real programs, part 1").
# tests/gpu/real/graphs.cu makes graphs in every form (stream capture in
# each mode, with a second thread launching and capturing meanwhile; by
# hand, child, clone, exec set-params, exec update, generic node, node
# set-params after a read-back) and prints, per kernel, the runs and
# warps the launch configuration gives.  Checks:
#   - the program completes with correct results under every probe
#     (its own check, and the same checksum as the native run)
#   - gpu:warp and gpu:kernel counts per kernel = runs x warps / threads
#   - a printf clause (the agent's drain thread copying while a global
#     capture is under way) prints one line per graph kernel run
#   - cuda:complete counts every run of every kernel, graph nodes too
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-graphs.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -arch=sm_90 -o "$T/graphs" tests/gpu/real/graphs.cu -lpthread ||
	{ echo "FAIL build"; exit 1; }
P=$T/graphs
. tests/progs/gpu_expect.sh
native

run warp 'gpu:warp:g_* { @w[kernel] = count(); }'
same_results warp
for k in $kernels; do
	expect_eq "gpu:warp $k = runs x warps" "$(got "$T/warp.out" @w "$k")" "$(want "$k" warps)"
done

run thread 'gpu:kernel:g_*:exit { @t[kernel] = count(); }'
same_results thread
for k in $kernels; do
	expect_eq "gpu:kernel:exit $k = runs x threads" "$(got "$T/thread.out" @t "$k")" "$(want "$k" threads)"
done

run printf 'gpu:kernel:g_cap_global,gpu:kernel:g_cap_other /blockIdx.x == 0 && threadIdx.x == 0/ { printf("run %d\n", launch); }'
same_results printf
expect_eq "printf: one line per captured run" "$(grep -c '^run ' "$T/printf.out")" \
	"$(( $(want g_cap_global runs) + $(want g_cap_other runs) ))"

# cuda:complete: every kernel run, graph nodes included, timed
run complete 'cuda:complete:g_* { @c[kernel] = count(); @z[kernel] = sum(duration == 0); }'
same_results complete
for k in $kernels; do
	expect_eq "cuda:complete $k = runs" "$(got "$T/complete.out" @c "$k")" "$(want "$k" runs)"
	expect_eq "cuda:complete $k: no zero duration" "$(got "$T/complete.out" @z "$k")" 0
done

# no line about a failed capture or an agent error
if grep -qi 'capture\|error' "$T/warp.err" "$T/thread.err" "$T/printf.err"; then
	bad "no capture errors" "$(grep -hi 'capture\|error' "$T"/*.err | head -3)"
else
	ok "no capture errors"
fi
[ "$nfail" -eq 0 ]
