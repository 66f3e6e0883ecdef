#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: user stacks on cuda: probes, the GPU use case, on the fake
# driver (tests/progs/fakecuda.c) with a C++ workload
# (tests/progs/cuda_stack.cpp): two call sites launching give two
# stacks, with demangled C++ frames, and allocations are summed by
# their three innermost frames.  Under -c (the workload kept alive until
# the trace ends, so its maps can still be read) and under -p.
. "$(dirname "$0")/../progs/cuda_lib.sh"
APP=$PROGS/cuda_stack
[ -x "$APP" ] || { echo "no $APP (run make)"; exit 77; }

PROG="cuda:launch { @[ustack] = count(); }
cuda:malloc { @m[ustack(3)] = sum(size); }
uprobe:$APP:cuda_stack_done { exit(); }"
# launches: step() once and warmup() twice a round.  cuda:malloc is a
# return probe (it reads the result): its stack starts in the caller.
WANT="

@[
    cuLaunchKernel+OFF
    app::Solver<float>::step()+OFF
    main+OFF
    __libc_start_call_main+OFF
]: 2
@[
    cuLaunchKernel+OFF
    app::warmup(int)+OFF
    main+OFF
    __libc_start_call_main+OFF
]: 4
@m[
    app::scratch()+OFF
    main+OFF
    __libc_start_call_main+OFF
]: 1024
@m[
    app::Pool::grow(unsigned long)+OFF
    main+OFF
    __libc_start_call_main+OFF
]: 8192"

# frame offsets depend on the compiler: only their presence is checked
fix() {
	sed -E 's/^(    .*)\+[0-9]+$/\1+OFF/' "$T/out" >"$T/fixed"
	mv "$T/fixed" "$T/out"
}

run "$FAKE" -c "$APP -n 2 -k" -e "$PROG" ||
	{ echo "gputrace -c failed:"; cat "$T/err"; exit 1; }
fix
want "$WANT"

W=cuLaunchKernel,cuMemAlloc_v2,cuda_stack_done
LD_LIBRARY_PATH=$FAKE "$APP" -n 2 -w "$W" -k 2>"$T/werr" &
wpid=$!
# until its loader has mapped the driver, -p cannot find it
for i in $(seq 100); do
	grep -q libcuda "/proc/$wpid/maps" 2>/dev/null && break
	sleep 0.05
done
run "$FAKE" -p "$wpid" -e "$PROG"
rc=$?
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
[ "$rc" -eq 0 ] || { echo "gputrace -p failed:"; cat "$T/err" "$T/werr"; exit 1; }
fix
want "$WANT"
