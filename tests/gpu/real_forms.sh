#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: every launch form on real modules (issue "Real programs, part 1").
# tests/gpu/real/launch_forms.cu runs kernels from NVRTC PTX loaded with
# cuModuleLoadDataEx, from a cuLibraryLoadData library (CUkernel
# launches), through cudaLaunchKernelEx with clusters, as a cooperative
# launch, from two threads on four streams, with 64 KB of dynamic
# shared memory (the limit raised on the original by
# cudaFuncSetAttribute) and in clusters of 16 blocks (the non-portable
# size, allowed the same way), and prints per kernel the runs and warps its
# launch configuration gives.  Checks, per kernel:
# gpu:warp count = runs x warps, gpu:kernel:exit count = runs x threads,
# cuda:complete count = runs, and the program's results identical to the
# native run.
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-forms.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -arch=sm_90 -std=c++17 -o "$T/forms" tests/gpu/real/launch_forms.cu \
	-lcuda -lnvrtc -lpthread || { echo "FAIL build"; exit 1; }
P=$T/forms
. tests/progs/gpu_expect.sh
native

run warp 'gpu:warp:f_* { @w[kernel] = count(); }'
same_results warp
for k in $kernels; do
	expect_eq "gpu:warp $k = runs x warps" "$(got "$T/warp.out" @w "$k")" "$(want "$k" warps)"
done
run thread 'gpu:kernel:f_*:exit { @t[kernel] = count(); }'
same_results thread
for k in $kernels; do
	expect_eq "gpu:kernel:exit $k = runs x threads" "$(got "$T/thread.out" @t "$k")" "$(want "$k" threads)"
done
run complete 'cuda:complete:f_* { @c[kernel] = count(); }'
same_results complete
for k in $kernels; do
	expect_eq "cuda:complete $k = runs" "$(got "$T/complete.out" @c "$k")" "$(want "$k" runs)"
done
[ "$nfail" -eq 0 ]
