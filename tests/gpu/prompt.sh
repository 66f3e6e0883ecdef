#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: the prompt attached to a running CUDA program (issue 14).
# tests/gpu/real/attach_target.cu launches attach_k (64 warps a launch)
# from two threads; the program is paused (SIGUSR1) while the prompt
# attaches and the gpu:warp clause injects the agent, resumed for a few
# seconds, paused again: `print @w` = 64 x the runtime and driver
# launches made meanwhile, exactly.  Then `detach`, `quit` with status 0,
# and the program's own end: results ok.
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (ptrace, BPF)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-gprompt.XXXXXX") || exit 1
P=
trap '[ -n "$P" ] && kill -KILL $P 2>/dev/null; rm -rf "$T"' EXIT
"$NVCC" -O2 -arch=sm_90 -o "$T/target" tests/gpu/real/attach_target.cu \
	-lcuda -lpthread || { echo "FAIL build"; exit 1; }
nfail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
npaused() { grep -c '^paused' "$T/prog.out"; }
launches() {	# runtime + driver launches on the last "paused" line
	awk '$1 == "paused" { n = $3 + $5 } END { print n }' "$T/prog.out"
}

"$T/target" "$T/ready" >"$T/prog.out" 2>"$T/prog.err" &
P=$!
i=0
while [ ! -f "$T/ready" ] && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.05; done
kill -USR1 $P
i=0
while [ "$(npaused)" -lt 1 ] && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.05; done
before=$(launches)
# resume once the agent is in the target (its library mapped, then a
# second for the hooks), pause again 3 s later
(
	i=0
	while ! grep -q libgputrace-agent "/proc/$P/maps" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 600 ] && exit 1
		sleep 0.05
	done
	sleep 1
	kill -USR2 $P
	sleep 3
	kill -USR1 $P
) &
C=$!
python3 tests/progs/pty_drive.py -t 60 -l "$T/log" -- "$GT" -v <<STEPS
expect gputrace> 
send attach $P
expect attached to $P
send gpu:warp:attach_k { @w = count(); }
expect agent attached to pid $P:
sleep 8
send print @w
expect @w: [0-9]+\r\n
send detach
expect detached from $P
send quit
exit 0
STEPS
[ $? = 0 ] && ok "prompt session (attach, gpu:warp clause, print, detach, quit 0)" ||
	{ bad "prompt session" "see the transcript"; sed 's/^/    | /' "$T/log" | tail -30; }
wait $C
i=0
while [ "$(npaused)" -lt 2 ] && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.05; done
after=$(launches)
w=$(sed -n 's/^@w: \([0-9]*\).*/\1/p' "$T/log" | head -1)
runs=$((after - before))
[ -n "$w" ] && [ "$w" = $((64 * runs)) ] && [ "$runs" -gt 0 ] &&
	ok "@w = 64 x $runs launches while attached ($w)" ||
	bad "@w" "got '$w', want 64 x $runs = $((64 * runs))"
kill -USR2 $P
sleep 0.5
kill -TERM $P
wait $P
st=$?
P=
[ $st = 0 ] && grep -q '^results ok$' "$T/prog.out" && ok "program results" ||
	bad "program results" "status $st: $(grep results "$T/prog.out"; head -3 "$T/prog.err")"
[ $nfail = 0 ]
