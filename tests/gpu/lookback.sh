#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: blocks that wait on each other (issue 12, "nothing on the path of
# blocks that wait on each other").  tests/gpu/real/lookback.cu is a
# decoupled look-back scan: every block spins until the blocks before it
# publish.  Under each of bench/real's four probes it must finish (the
# run's timeout), give the native results, and count what its launch
# configuration gives: warps at warp exit and entry, threads at kernel
# entry, blocks in the smload clause (its count and smload's total).
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-lb.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -arch=sm_90 -o "$T/lookback" tests/gpu/real/lookback.cu ||
	{ echo "FAIL build"; exit 1; }
P=$T/lookback
. tests/progs/gpu_expect.sh
native
[ "$kernels" = lb_scan ] || { echo "FAIL native: no expect line"; exit 1; }

run a 'gpu:warp:*:exit { @d = hist(duration); @w = count(); }'
same_results a
expect_eq "(a) warp exits = runs x warps" "$(sed -n 's/^@w: //p' "$T/a.out")" "$(want lb_scan warps)"
grep -q '^@d:' "$T/a.out" && ok "(a) duration histogram printed" ||
	bad "(a) duration histogram" "no @d"
run b 'gpu:kernel:* { @c = count(); }'
same_results b
expect_eq "(b) kernel entries = runs x threads" "$(sed -n 's/^@c: //p' "$T/b.out")" "$(want lb_scan threads)"
run c 'gpu:warp:* { @k[kernel] = count(); }'
same_results c
expect_eq "(c) @k[lb_scan] = runs x warps" "$(got "$T/c.out" @k lb_scan)" "$(want lb_scan warps)"
run d 'gpu:kernel:* /threadIdx.x == 0/ { @s = smload(1); @b = count(); }'
same_results d
expect_eq "(d) block leaders = runs x blocks" "$(sed -n 's/^@b: //p' "$T/d.out")" "$(want lb_scan blocks)"
expect_eq "(d) smload(1) total = runs x blocks" \
	"$(sed -n 's/^ *SMs [0-9]*, total \([0-9]*\),.*/\1/p' "$T/d.out" | head -1)" "$(want lb_scan blocks)"
[ "$nfail" = 0 ]
