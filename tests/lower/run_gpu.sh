#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run lowered probes and the device runtime on a GPU (tests/lower/
# gpu_lower.c says what is checked).  Needs nvcc, gcc and a GPU; prints
# PASS/FAIL/SKIP lines and "N passed, N failed".
#
#   sh tests/lower/run_gpu.sh          build and run
#   GPU_LOWER_BIN=path sh ...          run a binary built elsewhere

cd "$(dirname "$0")/../.." || exit 1
CUDA=${CUDA_HOME:-/usr/local/cuda}
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP gpu_lower: no GPU here"
	exit 0
fi
bin=$GPU_LOWER_BIN
if [ -z "$bin" ]; then
	T=$(mktemp -d "${TMPDIR:-/tmp}/gt-lower-gpu.XXXXXX") || exit 1
	trap 'rm -rf "$T"' EXIT
	sh runtime/agent/devrt_embed.sh "$CUDA/bin/nvcc" \
		runtime/agent/devrt.cu "$T/devrt_ptx.c" || exit 1
	${CC:-gcc} -std=gnu11 -O1 -g -Wall -Wextra -Wno-unused-parameter \
		-Wno-sign-compare -I. -I"$CUDA/include" \
		tests/lower/gpu_lower.c compiler/ptx_lower.c \
		compiler/ptx_lower_an.c compiler/ptx_lower_insn.c \
		compiler/verifier.c compiler/verifier_insn.c \
		compiler/verifier_state.c compiler/dev_helpers.c \
		compiler/bpf_disasm.c gpucode/devrt_host.c gpucode/hbpf.c \
		"$T/devrt_ptx.c" -L"$CUDA/lib64/stubs" -lcuda \
		-o "$T/gpu_lower" || exit 1
	bin=$T/gpu_lower
fi
"$bin"
