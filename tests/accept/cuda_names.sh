#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: kernel names and cuda:launch:GLOB, with a fake driver
# whose cuModuleGetFunction / cuLibraryGetKernel / cuKernelGetFunction
# succeed (tests/progs/fakecuda.c).  Names come from those calls
# (CUkernel handles launched directly and the CUfunction of a CUkernel
# included); a handle never looked up is "unknown"; GLOBs match the
# demangled base name or the mangled one, through the workload's fatbin.
# Names are whole: two instantiations whose mangled names share their
# first 65 bytes stay two keys, printed in full, and a GLOB tells them
# apart; a kernel named like the agent's own (__gputrace*) never shows.
# Under -c, then -p against a workload already running.
. "$(dirname "$0")/../progs/cuda_lib.sh"

PROG='
cuda:launch { @[kernel] = count(); }
cuda:launch:gt::* { @g[kernel] = count(); }
cuda:launch:vadd { @v = count(); }
cuda:launch:_Z4vadd* { @m = count(); }
cuda:launch:reduce* { @r[probe] = count(); }
cuda:launch:_ZN2hz*IdLi3E* { @d[kernel] = count(); }
cuda:launch:__gputrace* { @agent = count(); }
cuda:malloc { @ok[retval] = count(); }'
WANT="

@[hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<double, 3>]: 2
@[hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<float, 3>]: 4
@[vadd]: 4
@[gt::scale]: 6
@[reduce_sum]: 10
@[gt::vadd<int>]: 14
@[unknown]: 18
@agent: 0
@d[hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<double, 3>]: 2
@g[gt::scale]: 6
@g[gt::vadd<int>]: 14
@m: 4
@ok[0]: 8
@r[cuda:launch:reduce*]: 10
@v: 4"

run "$FAKE" -c "$STUB -n 2" -e "$PROG" ||
	{ echo "gputrace -c failed:"; cat "$T/err"; exit 1; }
want "$WANT"

# -p: the workload waits until every probe is in, then ends with
# cuda_stub_done(), where the trace stops
# -p, both paths: the agent's (injected for these clauses: its inline
# hooks on the launch and allocation entry points, which name kernels
# themselves) and the kernel's (uprobes, the naming ones included)
L=cuLaunchKernel,cuLaunchKernel_ptsz,cuLaunchCooperativeKernel
L=$L,cuLaunchKernelEx,cuMemAlloc_v2,cuda_stub_done
# -p, the agent refused (another tracer holds the workload): the
# clauses fall back to kernel uprobes, whose namers need .cuda_match,
# read from the fatbins only then (docs/cuda-provider.md), at its size
# (not where cuda_hostpath.sh runs us with kernel uprobes only)
if command -v strace >/dev/null && [ -z "${GPUTRACE_CUDA_UPROBES:-}" ]; then
	LD_LIBRARY_PATH=$FAKE strace -f -o /dev/null "$STUB" -n 2 \
		-w "cuModuleGetFunction,cuLibraryGetKernel,cuKernelGetFunction,$L" \
		-k 2>"$T/werr" &
	spid=$!
	i=0
	until wpid=$(pgrep -P $spid) || [ $i -gt 100 ]; do
		i=$((i + 1)); sleep 0.05
	done
	run "$FAKE" -p "$wpid" -e "$PROG
uprobe:$STUB:cuda_stub_done { exit(); }"
	rc=$?
	kill "$wpid" 2>/dev/null	# strace ends with it
	wait "$spid" 2>/dev/null
	[ "$rc" -eq 0 ] || { echo "gputrace -p (fallback) failed:"; cat "$T/err" "$T/werr"; exit 1; }
	grep -q 'clauses run as kernel uprobes instead' "$T/err" ||
		{ echo "-p under strace: no fallback:"; cat "$T/err"; exit 1; }
	want "$WANT"
fi
for path in agent kernel; do
	W=$L
	[ $path = kernel ] &&
		W=cuModuleGetFunction,cuLibraryGetKernel,cuKernelGetFunction,$L
	LD_LIBRARY_PATH=$FAKE "$STUB" -n 2 -w "$W" -k 2>"$T/werr" &
	wpid=$!
	if [ $path = kernel ]; then
		GPUTRACE_CUDA_UPROBES=1 run "$FAKE" -p "$wpid" -e "$PROG
uprobe:$STUB:cuda_stub_done { exit(); }"
	else
		run "$FAKE" -p "$wpid" -e "$PROG
uprobe:$STUB:cuda_stub_done { exit(); }"
	fi
	rc=$?
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	[ "$rc" -eq 0 ] || { echo "gputrace -p ($path) failed:"; cat "$T/err" "$T/werr"; exit 1; }
	want "$WANT"
done
