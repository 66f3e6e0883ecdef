#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: a CuPy RawKernel (issue 36), tests/gpu/ml/cupy_add.py: a vector
# add, grid G x block 256, launched 10 times; NVRTC gives CuPy a cubin by
# default and PTX with CUPY_COMPILE_WITH_PTX=1 (each mode with a kernel
# cache of its own).  Checks, in both modes:
#   - results bit-identical to the native run, gputrace exits 0
#   - gpu:warp = launches x G x 8; gpu:kernel = launches x G x 256 (a
#     count of 0: FAIL with gputrace's reason)
# In cubin mode NVRTC's cubin carries no PTX unless compiled -lineinfo,
# which the agent adds under device probes (docs/fatbin.md, "NVRTC"):
# the native run's cached cubin must lack .nv_debug_ptx_txt and a traced
# run's have it.  CuPy keys its kernel cache on its own options, so a
# traced run given the native run's cache would load that cubin without
# compiling: each traced run gets an empty cache of its own.
# Skips (77) where python3 cannot import cupy.
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/ml/lib.sh
need_py cupy
CMD="$PY $ML/cupy_add.py --launches 10"
for mode in cubin ptx; do
	if [ $mode = ptx ]; then
		CUPY_COMPILE_WITH_PTX=1
		export CUPY_COMPILE_WITH_PTX
	else
		unset CUPY_COMPILE_WITH_PTX
	fi
	CUPY_CACHE_DIR=$T/cache-$mode
	export CUPY_CACHE_DIR
	$CMD >"$T/native.prog" 2>"$T/native.err" ||
		{ cat "$T/native.err"; bad "$mode: native run" "failed"; continue; }
	grep -q '^results ok$' "$T/native.prog" || bad "$mode: native" "sums wrong"
	set -- $(sed -n 's/^cupy gt_cupy_add launches \([0-9]*\) grid \([0-9]*\) block \([0-9]*\)$/\1 \2 \3/p' "$T/native.prog")
	K=$1 G=$2 B=$3

	CUPY_CACHE_DIR=$T/cache-$mode-warp
	gt warp-$mode 'gpu:warp:gt_cupy_add { @w = count(); }' "$CMD"
	if [ $mode = cubin ]; then
		has_ptx() { grep -rlaq '\.nv_debug_ptx_txt' "$1"; }
		has_ptx "$T/cache-$mode" &&
			bad "cubin: native" "CuPy's cubin carries its PTX already: not the case this tests"
		has_ptx "$T/cache-$mode-warp" &&
			ok "cubin: the traced run's cubin carries .nv_debug_ptx_txt" ||
			bad "cubin: traced" "its cubin has no .nv_debug_ptx_txt (NVRTC not reached?)"
	fi
	same_as_native warp-$mode '\(checksum\|results ok\)'
	w=$(val warp-$mode @w)
	[ "${w:-0}" = 0 ] && bad "$mode: gpu:warp" "0: $(why_zero warp-$mode gt_cupy_add)" ||
		expect_eq "$mode: gpu:warp = $K x $G x $((B / 32))" "$w" $((K * G * B / 32))

	CUPY_CACHE_DIR=$T/cache-$mode-thread
	gt thread-$mode 'gpu:kernel:gt_cupy_add { @t = count(); }' "$CMD"
	same_as_native thread-$mode '\(checksum\|results ok\)'
	t=$(val thread-$mode @t)
	[ "${t:-0}" = 0 ] && bad "$mode: gpu:kernel" "0: $(why_zero thread-$mode gt_cupy_add)" ||
		expect_eq "$mode: gpu:kernel = $K x $G x $B" "$t" $((K * G * B))
done
[ "$nfail" -eq 0 ]
