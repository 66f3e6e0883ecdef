#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: -l lists the gpu: probes of a target's kernels, one line
# per probe (gpu:kernel:NAME, gpu:warp:NAME, gpu:mem:NAME, demangled without
# parameters), SASS-only kernels marked, PATTERN filtering every form:
# a binary given after PATTERN (its kernels and those of the libraries
# it needs: nvcc builds a SASS-only library), -c CMD, and -p PID (the
# workload of the cuda tests, whose fatbin names six kernels).
. "$(dirname "$0")/../progs/cuda_lib.sh"

NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "no nvcc"; exit 77; }
"$NVCC" -Xcompiler -fPIC -c -gencode arch=compute_90,code=sm_90 \
	tests/gpu/agent_sass.cu -o "$T/sass.o" || { echo "nvcc failed"; exit 1; }
${CC:-cc} -shared -o "$T/libgtsass.so" "$T/sass.o" || exit 1
echo 'int main(void) { return 0; }' >"$T/m.c"
${CC:-cc} "$T/m.c" -o "$T/app" -Wl,--no-as-needed -L"$T" -lgtsass \
	-Wl,-rpath,"$T" -Wl,--allow-shlib-undefined || exit 1

check() {	# check WHAT WANT: $T/out must be WANT
	[ "$(cat "$T/out")" = "$2" ] ||
		{ echo "$1: got:"; cat "$T/out" "$T/err"; echo "want:"; echo "$2"; exit 1; }
}

"$GT" -l 'gpu:*' "$T/app" >"$T/out" 2>"$T/err" || { cat "$T/err"; exit 1; }
check "-l BINARY" "gpu:kernel:sass_kernel (SASS only: sm_90)
gpu:warp:sass_kernel (SASS only: sm_90)
gpu:mem:sass_kernel (SASS only: sm_90)"

"$GT" -c "$T/app" -l 'gpu:warp:*' >"$T/out" 2>"$T/err" || { cat "$T/err"; exit 1; }
check "-c CMD -l PATTERN" "gpu:warp:sass_kernel (SASS only: sm_90)"

"$GT" -l '*stencil*' "$STUB" >"$T/out" 2>"$T/err" || { cat "$T/err"; exit 1; }
check "-l '*stencil*' BINARY" \
"gpu:kernel:hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<float, 3>
gpu:kernel:hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<double, 3>
gpu:warp:hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<float, 3>
gpu:warp:hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<double, 3>
gpu:mem:hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<float, 3>
gpu:mem:hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<double, 3>"

LD_LIBRARY_PATH=$FAKE "$STUB" -n 1 -k >/dev/null 2>&1 &
wpid=$!
sleep 0.3
"$GT" -p "$wpid" -l 'gpu:kernel:gt::*' >"$T/out" 2>"$T/err"
rc=$?
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
[ "$rc" -eq 0 ] || { cat "$T/err"; exit 1; }
check "-p PID -l PATTERN" "gpu:kernel:gt::scale
gpu:kernel:gt::vadd<int>"

# without a target: the generic forms, filtered
"$GT" -l 'gpu:warp:*' >"$T/out" 2>"$T/err" || exit 1
check "-l PATTERN" "gpu:warp:GLOB:entry
gpu:warp:GLOB:exit"
exit 0
