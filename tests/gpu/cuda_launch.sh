#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU: cuda: host probes on a real driver.  Builds tests/gpu/launches.cu
# (known kernels, grids and counts through the runtime API, the driver
# API and a CUDA graph; it writes what gputrace should print) and checks:
#   -c: per-kernel launch counts exact, graph launches counted apart,
#       cuda:launch:GLOB filters, cuda:malloc sizes, cuda:sync durations
#   -p: the same launch counts for a program started before the tracer
#   -c with exit() at the first cudaFree after the launches: counts
#       exact, the lines printed before it all there
# Prints PASS/FAIL per check; exit 0 when all pass, 1 otherwise, 77
# without nvcc.
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$(command -v nvcc || echo "$CUDA/bin/nvcc")}
[ -x "$NVCC" ] || { echo "no nvcc"; exit 77; }
[ -x "$GT" ] || { echo "no gputrace at $GT"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/cuda_launch.XXXXXX") || exit 1
trap 'kill $wpid $tpid 2>/dev/null; rm -rf "$T"' EXIT
failed=0
export CUDA_MODULE_LOADING=LAZY

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; failed=1; }

"$NVCC" -O2 -arch=native -I"$CUDA/extras/CUPTI/include" -o "$T/launches" tests/gpu/launches.cu \
	-L"$CUDA/lib64/stubs" -lcuda 2>"$T/nvcc" ||
	"$NVCC" -O2 -arch=sm_90 -I"$CUDA/extras/CUPTI/include" -o "$T/launches" tests/gpu/launches.cu \
		-L"$CUDA/lib64/stubs" -lcuda 2>>"$T/nvcc" ||
	{ echo "FAIL build:"; cat "$T/nvcc"; exit 1; }
"$T/launches" -o "$T/want" || { echo "FAIL launches does not run natively"; exit 1; }

# lines LIKE in FILE, sorted
pick() { grep -E "$1" "$2" | sort; }

# same LABEL PATTERN: gputrace's lines matching PATTERN are exactly the
# expected ones
same() {
	pick "$2" "$T/want" >"$T/w"
	pick "$2" "$T/out" >"$T/g"
	if cmp -s "$T/w" "$T/g"; then
		pass "$1"
	else
		fail "$1 (-want +got):"
		diff -u "$T/w" "$T/g" | sed 's/^/    /'
	fi
}

# gt_c LABEL PROGRAM: gputrace -c the workload, output in $T/out
gt_c() {
	timeout -k 5 120 "$GT" -c "$T/launches" -e "$2" </dev/null \
		>"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$1: gputrace status $rc"
		sed 's/^/    /' "$T/err"
	fi
}

# 1. -c, everything at once
gt_c -c '
cuda:launch { @[kernel, gridDim.x, blockDim.x] = count(); }
cuda:launch:gt::vadd* { @v[kernel] = count(); }
cuda:launch:scale { @s = count(); }
cuda:graph { @graph = count(); }
cuda:malloc { @malloc[size] = count(); }
cuda:sync { @syncs = count(); }
cuda:sync /duration == 0 || duration > 10000000000/ { @badsync[duration] = count(); }
'
same "-c launch counts per kernel and grid" '^@\['
same "-c graph launches counted apart" '^@graph:'
same "-c cuda:launch:gt::vadd* filter" '^@v\['
same "-c cuda:launch:scale filter" '^@s:'
same "-c cuda:malloc sizes" '^@malloc\['
want_syncs=$(sed -n 's/^syncs: //p' "$T/want")
got_syncs=$(sed -n 's/^@syncs: //p' "$T/out")
if [ -n "$got_syncs" ] && [ "$got_syncs" -ge "$want_syncs" ] &&
   ! grep -q '^@badsync' "$T/out"; then
	pass "-c cuda:sync durations (>0, <10 s; $got_syncs syncs)"
else
	fail "-c cuda:sync: $got_syncs syncs (want >= $want_syncs), implausible durations:"
	grep '^@badsync' "$T/out" | sed 's/^/    /'
fi
[ $failed -eq 0 ] || { echo "gputrace -c output:"; sed 's/^/    /' "$T/out" "$T/err"; }

# 2. -c, exit() at the first cudaFree after the last launch and sync:
# every launch counted and every line printed before it (with the agent:
# its final snapshot and its events before the exit, docs/hostpath.md)
gt_c "-c exit()" '
cuda:launch { @[kernel, gridDim.x, blockDim.x] = count(); }
cuda:launch:scale { printf("scale %d\n", gridDim.x); }
cuda:free /arg0 != 0/ { exit(); }
'
same "-c exit(): launch counts per kernel and grid" '^@\['
n=$(grep -c '^scale 16$' "$T/out")
if [ "$n" = 30 ] && ! grep -q '^Lost' "$T/out"; then
	pass "-c exit(): the 30 lines printed before it"
else
	fail "-c exit(): $n of 30 lines printed before it"
fi

# 3. -p: the program is running (driver loaded, no launch yet)
"$T/launches" -s >"$T/pout" 2>&1 &
wpid=$!
i=0
until grep -q ready "$T/pout" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 300 ] || break
	sleep 0.1
done
timeout -k 5 120 "$GT" -v -p "$wpid" -e '
cuda:launch { @[kernel, gridDim.x, blockDim.x] = count(); }
cuda:graph { @graph = count(); }
' </dev/null >"$T/out" 2>"$T/err" &
tpid=$!
i=0
# "Attaching" comes before the uprobes are in (as in bpftrace), and the
# program exits soon after the signal: wait for -v's line of the first
# probe, attached last (the rest of its uprobes follow at once); where
# the agent runs the cuda:launch clause (injected for it, first), for
# cuda:graph's uprobe, attached after the injection
until grep -q '^gputrace: attached cuda:launch' "$T/err" 2>/dev/null ||
      { grep -q '^gputrace: agent attached to pid' "$T/err" 2>/dev/null &&
	grep -q '^gputrace: attached cuda:graph' "$T/err"; }; do
	i=$((i + 1))
	[ $i -lt 300 ] || break
	sleep 0.1
done
sleep 0.5
kill -USR1 "$wpid"
# reap the program first: gputrace -p ends when its pid is gone
wait "$wpid"
wpid=
wait "$tpid"
rc=$?
tpid=
if [ $rc -ne 0 ]; then
	fail "-p: gputrace status $rc"
	sed 's/^/    /' "$T/err"
fi
same "-p launch counts per kernel and grid" '^@\['
same "-p graph launches counted apart" '^@graph:'
exit $failed
