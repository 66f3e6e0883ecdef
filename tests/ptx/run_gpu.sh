#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Splice probes into tests/cuda/k_*.cu kernels and run them on the GPU,
# original against instrumented (tests/ptx/gpu_check.c says what is
# checked).  Needs nvcc and a GPU; prints PASS/FAIL/SKIP lines.
#
#   sh tests/ptx/run_gpu.sh

cd "$(dirname "$0")/../.." || exit 1
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
if [ ! -x "$NVCC" ]; then
	echo "SKIP gpu/ptx: no $NVCC"
	exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-ptx-gpu.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# plain, and -G (debug sections, no optimisation)
mkdir "$T/O" "$T/G" || exit 1
for f in tests/cuda/k_*.cu; do
	arch=$(sed -n '1s|^// nvcc: ||p' "$f")
	b=$(basename "$f" .cu)
	# shellcheck disable=SC2086
	"$NVCC" -ptx $arch "$f" -o "$T/O/$b.ptx" &
	# shellcheck disable=SC2086
	"$NVCC" -ptx -G $arch "$f" -o "$T/G/$b.ptx" &
done
wait
${CC:-gcc} -std=gnu11 -O1 -g -Wall -Wextra -Wno-unused-parameter \
	-Wno-sign-compare -I. -I"$CUDA/include" tests/ptx/gpu_check.c \
	gpucode/ptx_read.c gpucode/ptx_splice.c gpucode/ptx_splice_mem.c \
	gpucode/ptx_mem.c gpucode/ptx_prune.c \
	-L"$CUDA/lib64/stubs" -lcuda -o "$T/gpu_check" || exit 1
rc=0
"$T/gpu_check" "$T/O" gpu || rc=1
"$T/gpu_check" "$T/G" gpu-G || rc=1
exit $rc
