#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: cuda:launch:GLOB for kernels loaded from memory
# (docs/hostpath.md).  agent_hookprog hands the fake driver a PTX, a
# cubin and a fatbin image read from files, none of them in a fatbin of
# the program, as Triton, Inductor and NVRTC do: under -c the agent
# matches the GLOBs itself at each kernel's first sight, so the counts
# are exact (vadd 5 launches, uses_global 1); the kernel path, which
# matches through the fatbins' names, sees none of them (by design: the
# system-wide path).  Needs root and the uprobe PMU.
. tests/progs/agent_lib.sh

[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
[ -r /sys/bus/event_source/devices/uprobe/type ] ||
	{ echo "no uprobe PMU in this kernel"; exit 77; }
"$NVCC" -ptx -arch=compute_90 tests/gpu/agent_vadd.cu -o "$T/vadd.ptx" ||
	fail "nvcc -ptx"
"$NVCC" -cubin -arch=sm_90 tests/gpu/agent_vadd.cu -o "$T/vadd.cubin" ||
	fail "nvcc -cubin"

PROG='cuda:launch:vadd { @v = count(); }
cuda:launch:_Z11uses* { @u[kernel] = count(); }
cuda:launch:*add* { @a[gridDim.x, blockDim.x] = count(); }
cuda:launch:nomatch* { @x = count(); }
cuda:launch { @n[kernel] = count(); }'

# run IMAGE [ENV...]: gputrace -c on the hook program loading IMAGE
run() {
	img=$1
	shift
	env "$@" LD_LIBRARY_PATH=$T GPUTRACE_AGENT_LIB=$AGENT \
		timeout -k 2 30 "$GT" -v -c "$T/prog $T/$img $VADD $GLOBAL" \
		-e "$PROG" >"$T/out" 2>"$T/err" </dev/null ||
		{ cat "$T/out" "$T/err"; fail "gputrace -c failed ($img)"; }
	grep '^@' "$T/out" >"$T/maps"
}
want() {
	printf '%s\n' "$1" >"$T/want"
	diff -u "$T/want" "$T/maps" || { cat "$T/err"; fail "$2"; }
}

for img in vadd.ptx vadd.cubin vadd.fatbin; do
	run "$img"
	grep -q '^gputrace: cuda:launch:vadd@cuLaunchKernel runs in the agent$' "$T/err" ||
		{ cat "$T/err"; fail "-v: the GLOB clause is not in the agent ($img)"; }
	want "@a[4, 64]: 5
@n[uses_global]: 1
@n[vadd]: 5
@u[uses_global]: 1
@v: 5
@x: 0" "GLOBs on kernels loaded from $img"
done

# the kernel path: the names are known, the GLOBs match no loaded image
run vadd.ptx GPUTRACE_CUDA_UPROBES=1
want "@n[uses_global]: 1
@n[vadd]: 5
@v: 0
@x: 0" "the kernel path on kernels loaded from memory"
exit 0
