#!/bin/sh
# SPDX-License-Identifier: MIT
# The agent on a real GPU, standalone (no tracer: reports and map totals
# on stderr) and then under the protocol test tracer.  The target
# (agent_vadd.cu + agent_sass.cu) launches vadd through the runtime API
# (<<<>>>, which reaches the driver only through cuGetProcAddress) and the
# driver API (kernelParams and `extra`), a kernel using a __device__
# variable and a SASS-only kernel.  Checks: results bit-identical with
# and without the agent; vadd instrumented (JIT, then the driver's JIT cache);
# the other two skipped once each with the reason; the probe
# `gpu:warp:* { @n = count() }` counted launches x warps, which needs
# the runtime-API launches to have been seen.
# Exit 0 pass, 1 fail, 77 skip.  Prints the agent's report lines.

NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || NVCC=$(command -v nvcc) || { echo "no nvcc"; exit 77; }
AGENT=$(pwd)/build/libgputrace-agent.so
[ -f "$AGENT" ] || { echo "FAIL: no $AGENT (make)"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-agent-gpu.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

. tests/progs/agent_tools.sh
agent_tools
# vadd and uses_global: SASS and PTX for sm_90; sass_kernel: SASS only
"$NVCC" -O2 -c -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
	tests/gpu/agent_vadd.cu -o "$T/vadd.o" || fail "nvcc agent_vadd.cu"
"$NVCC" -O2 -c -gencode arch=compute_90,code=sm_90 tests/gpu/agent_sass.cu \
	-o "$T/sass.o" || fail "nvcc agent_sass.cu"
# the stub resolves to the driver's libcuda.so.1 at run time
"$NVCC" -o "$T/prog" "$T/vadd.o" "$T/sass.o" \
	-L"$(dirname "$(dirname "$NVCC")")/lib64/stubs" -lcuda || fail "nvcc link"
"$T/cfg" "$T/agent.cfg" -g '*' -v || fail "config"

"$T/prog" >"$T/out0" 2>&1 || { cat "$T/out0"; fail "the program alone"; }
sum0=$(grep '^checksum' "$T/out0")
set -- $(sed -n 's/^vadd launches \([0-9]*\) warps \([0-9]*\)$/\1 \2/p' "$T/out0")
want=$(($1 * $2))

check_run() {	# check_run NAME: out/err of one run under the agent
	sum=$(grep '^checksum' "$T/out")
	[ -n "$sum0" ] && [ "$sum" = "$sum0" ] ||
		{ cat "$T/out" "$T/err"; fail "$1: results differ ($sum vs $sum0)"; }
	[ "$(grep -c 'skipped uses_global(float\*, int): uses module-scope variables' "$T/err")" = 1 ] ||
		{ cat "$T/err"; fail "$1: module-scope kernel not reported once"; }
	[ "$(grep -c 'skipped sass_kernel(float\*, int): SASS only' "$T/err")" = 1 ] ||
		{ cat "$T/err"; fail "$1: SASS-only kernel not reported once"; }
}

GPUTRACE_AGENT_CONFIG=$T/agent.cfg LD_PRELOAD=$AGENT "$T/prog" \
	>"$T/out" 2>"$T/err" || { cat "$T/out" "$T/err"; fail "under the agent"; }
check_run first
grep -q 'instrumented vadd(float const\*, float const\*, float\*, int) \[gpu [0-9]*\]: jit' "$T/err" ||
	{ cat "$T/err"; fail "vadd not instrumented"; }
# how the runtime reached us (informational: the count below is the proof)
grep -E 'dlsym\(|cuGetProcAddress\(' "$T/err" | head -n 5
grep -qxF "gputrace-agent: map 0 [gpu 0]: $want" "$T/err" ||
	{ cat "$T/err"; fail "count: want $want ($1 launches x $2 warps)"; }
grep -E 'instrumented|skipped|map 0' "$T/err"

GPUTRACE_AGENT_CONFIG=$T/agent.cfg LD_PRELOAD=$AGENT "$T/prog" \
	>"$T/out" 2>"$T/err" || { cat "$T/out" "$T/err"; fail "cached run"; }
check_run cached
grep -qxF "gputrace-agent: map 0 [gpu 0]: $want" "$T/err" ||
	{ cat "$T/err"; fail "cached count: want $want"; }
grep -E 'instrumented' "$T/err"

# the same through the tracer protocol: map total from the segment
"$T/tracer" "$T/sock" "$AGENT" "$T/agent.cfg" "$T/prog" >"$T/tr" 2>&1 ||
	{ cat "$T/tr"; fail "under agent_tracer"; }
grep -qF "segment: map 0 gpu 0: $want" "$T/tr" ||
	{ cat "$T/tr"; fail "segment count: want $want"; }
grep -q "^snapshot 1 done" "$T/tr" || { cat "$T/tr"; fail "no snapshot reply"; }
echo "agent: $1 vadd launches x $2 warps = $want counted; results identical"
exit 0
