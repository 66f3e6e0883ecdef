#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: gputrace -p on a running CUDA program (issue 13, docs/attach.md).
# tests/gpu/real/attach_target.cu launches attach_k (64 warps a launch)
# every ~2 ms from two threads: runtime API <<<>>>, a graph instantiated at
# start (every 4th launch of thread 1), and driver API cuLaunchKernel.
#  1. exact: the program is paused around attach and detach (SIGUSR1 /
#     SIGUSR2), probes live for 3 s: @w = 64 x @l, and @l = the runtime
#     and driver launches made meanwhile (the graph was instantiated
#     before the attach: its kernel node keeps the original kernel, and
#     cuda:launch does not see graph launches);
#  2. 50 attach/detach cycles while it runs, each with live probes;
#  3. the tracer SIGKILLed while attached;
#  4. the program's own check: every buffer as its launch count says, its
#     thread count unchanged, and its free device memory not shrinking
#     cycle after cycle (first cycle vs last; slack for one instrumented
#     module per attach, which is kept: graphs may use it);
#  5. the pause under ptrace and the time to live probes (-v), printed.
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (ptrace, BPF)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-attach.XXXXXX") || exit 1
P=
trap '[ -n "$P" ] && kill -KILL $P 2>/dev/null; rm -rf "$T"' EXIT
"$NVCC" -O2 -arch=sm_90 -o "$T/target" tests/gpu/real/attach_target.cu \
	-lcuda -lpthread || { echo "FAIL build"; exit 1; }
nfail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
expect_eq() {	# NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1" "got '$2', want '$3'"; fi
}
wait_for() {	# FILE PATTERN [COUNT]: until COUNT lines match (20 s)
	i=0
	while [ "$(grep -c "$2" "$1" 2>/dev/null)" -lt "${3:-1}" ]; do
		i=$((i + 1))
		[ $i -gt 400 ] && return 1
		sleep 0.05
	done
}
field() {	# the value after word $1 on the last "paused" line
	awk -v k="$1" '$1 == "paused" { for (i = 2; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$T/prog.out"
}
pause() {	# pause the program, wait until it says so
	np=$(grep -c '^paused' "$T/prog.out")
	kill -USR1 $P
	wait_for "$T/prog.out" '^paused' $((np + 1)) || { echo "FAIL: the program does not pause"; exit 1; }
}
PROBES='gpu:warp:attach_k { @w = count(); } cuda:launch:attach_k { @l = count(); }'

"$T/target" "$T/ready" >"$T/prog.out" 2>"$T/prog.err" &
P=$!
i=0
while [ ! -f "$T/ready" ]; do
	i=$((i + 1))
	[ $i -gt 400 ] && { cat "$T/prog.err"; echo "FAIL: the program did not start"; exit 1; }
	sleep 0.05
done

# ---- 1. exact counts, the program quiet around attach and detach
pause
rt0=$(field rt)
drv0=$(field drv)
free0=$(field free)
thr0=$(field threads)
"$GT" -v -p $P -e "$PROBES" >"$T/gt1" 2>"$T/gte1" &
G=$!
# live once the agent's hooks are armed (-v says so), not at "Attaching"
wait_for "$T/gte1" 'agent attached to pid [0-9]*: ' || { cat "$T/gte1"; bad "attach" "no probes live"; }
kill -USR2 $P
sleep 3
pause
kill -INT $G
wait $G
expect_eq "gputrace -p status" $? 0
runs=$(( $(field rt) - rt0 + $(field drv) - drv0 ))
w=$(awk '$1 == "@w:" { print $2 }' "$T/gt1")
l=$(awk '$1 == "@l:" { print $2 }' "$T/gt1")
expect_eq "@l = runtime + driver launches while attached" "$l" "$runs"
expect_eq "@w = 64 x @l" "$w" "$((64 * ${l:-0}))"
sed -n 's/^gputrace: agent attached to pid [0-9]*: /attach (-v): /p' "$T/gte1"
grep 'skipped\|cannot' "$T/gte1" | sed 's/^/    | /'
kill -USR2 $P
sleep 0.5

# ---- 2. 50 attach/detach cycles while it runs
pause
free1=$(field free)
thr1=$(field threads)
kill -USR2 $P
cyc_bad=0
for c in $(seq 50); do
	"$GT" -p $P -e "$PROBES" >"$T/gtc" 2>"$T/gtec" &
	G=$!
	if ! wait_for "$T/gtc" 'Attaching'; then
		cyc_bad=$((cyc_bad + 1))
		sed 's/^/    | /' "$T/gtec" | head -5
		kill -KILL $G 2>/dev/null
		wait $G
		continue
	fi
	sleep 0.2
	kill -INT $G
	wait $G || cyc_bad=$((cyc_bad + 1))
	awk '$1 == "@l:" && $2 > 0 { f = 1 } END { exit !f }' "$T/gtc" ||
		cyc_bad=$((cyc_bad + 1))
done
expect_eq "50 attach/detach cycles, each counting" "$cyc_bad" 0

# ---- 3. the tracer SIGKILLed while attached
"$GT" -p $P -e "$PROBES" >"$T/gtk" 2>"$T/gtek" &
G=$!
wait_for "$T/gtk" 'Attaching' || bad "attach before SIGKILL" "$(head -3 "$T/gtek")"
sleep 0.5
kill -KILL $G
wait $G 2>/dev/null
sleep 1
kill -0 $P 2>/dev/null && ok "the program survives a SIGKILLed tracer" ||
	bad "SIGKILLed tracer" "the program died"

# ---- 4. the program's own end: results, threads, memory
pause
free2=$(field free)
thr2=$(field threads)
expect_eq "threads after 52 attaches = before the first" "$thr2" "$thr0"
echo "free device memory: before $free0, after attach 1 $free1, after 52 $free2"
drop=$(( free1 - free2 ))
[ "$drop" -le $((64 << 20)) ] && ok "no device memory leak over 50 cycles ($drop bytes)" ||
	bad "device memory" "$drop bytes less free after 50 cycles"
kill -USR2 $P
sleep 0.5
kill -TERM $P
wait $P
expect_eq "program status" $? 0
P=
grep -q '^results ok$' "$T/prog.out" && ok "program results" ||
	bad "program results" "$(grep results "$T/prog.out"; head -5 "$T/prog.err")"
[ $nfail = 0 ]
