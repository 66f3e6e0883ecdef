# SPDX-License-Identifier: MIT
# Sourced by tests/accept/agent_hooks.sh and bench/hook, from the
# repository root: finds the agent, builds the fake libcuda.so.1
# (agent_fakecuda.c) and PTX compiler (agent_fakejit.c), the program that drives it (agent_hookprog.c), the
# configuration writer (tests/gpu/agent_cfg.c), the protocol peer
# (agent_tracer.c) and the test fatbins into $T (removed at exit).
# Sets AGENT, NVCC, T, VADD, GLOBAL, SASS and fail(); exits 77 (skip)
# without the agent or nvcc.

GT=${GPUTRACE:-build/gputrace}
AGENT=${GPUTRACE_AGENT:-$(dirname "$GT")/libgputrace-agent.so}
[ -f "$AGENT" ] || AGENT=build/libgputrace-agent.so
[ -f "$AGENT" ] || { echo "no $AGENT (built without cuda.h?)"; exit 77; }
case $AGENT in /*) ;; *) AGENT=$(pwd)/$AGENT ;; esac
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "no nvcc: cannot build the test fatbins"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/gt-agent.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# wait_ready FILE: until a program started in the background made FILE
wait_ready() {
	i=0
	while [ ! -f "$1" ]; do
		i=$((i + 1))
		[ $i -gt 200 ] && fail "the program did not start"
		sleep 0.05
	done
}

# ---- build the pieces
. tests/progs/agent_tools.sh
agent_tools
$CC $W -shared -fPIC -Wl,-soname,libcuda.so.1 tests/accept/agent_fakecuda.c \
	-o "$T/libcuda.so.1" || fail "building the fake libcuda"
# the driver's PTX compiler, which the fake libcuda loads beside itself
$CC $W -shared -fPIC -Wl,-soname,libnvidia-ptxjitcompiler.so.1 \
	tests/accept/agent_fakejit.c -o "$T/libnvidia-ptxjitcompiler.so.1" ||
	fail "building the fake PTX compiler"
# a driver without cuLibrary* (before CUDA 12.0): LD_LIBRARY_PATH=$T/old
mkdir -p "$T/old"
$CC $W -DFAKECUDA_NO_LIBRARY -shared -fPIC -Wl,-soname,libcuda.so.1 \
	tests/accept/agent_fakecuda.c -o "$T/old/libcuda.so.1" ||
	fail "building the old fake libcuda"
$CC $W tests/accept/agent_hookprog.c "$T/libcuda.so.1" -ldl \
	-Wl,-rpath,"$T" -o "$T/prog" || fail "building agent_hookprog"
"$NVCC" -fatbin -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
	tests/gpu/agent_vadd.cu -o "$T/vadd.fatbin" || fail "nvcc vadd"
"$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 tests/gpu/agent_sass.cu \
	-o "$T/sass.fatbin" || fail "nvcc sass"
VADD=_Z4vaddPKfS0_Pfi
GLOBAL=_Z11uses_globalPfi
SASS=_Z11sass_kernelPfi

