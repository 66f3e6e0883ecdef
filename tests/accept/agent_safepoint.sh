#!/bin/sh
# SPDX-License-Identifier: MIT
# gputrace -p borrows a thread of the target for the agent's start; a
# thread stopped inside malloc holds malloc's lock, and the agent's start
# allocates: a call made there would wait for itself and hang the target.
# The injector lets such a thread run on and stops it again until it is
# at a safe point (runtime/inject_safe.c).  The target here allocates and
# frees in its main thread all the time (agent_attachprog.c,
# ATTACHPROG_CHURN) while two threads launch on the fake driver.
# Checks, 12 attaches: each gputrace ends 0 within its time, cuda:launch
# counted launches, -v says how many stops the safe point took; the
# program runs on and ends normally.  Needs root.  0 pass, 1 fail, 77 skip.

. tests/progs/agent_lib.sh

[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
[ -f "$(dirname "$AGENT")/libZydis.so.4.0" ] || { echo "no libZydis next to the agent"; exit 77; }
. tests/progs/attach_build.sh
P=
trap '[ -n "$P" ] && kill -KILL $P 2>/dev/null; rm -rf "$T"' EXIT

ATTACHPROG_CHURN=1 LD_LIBRARY_PATH=$T FAKECUDA_QUIET=1 \
	"$T/aprog" _Z4vaddPKfS0_Pfi "$T/ready" >"$T/prog.out" 2>&1 &
P=$!
wait_ready "$T/ready"
stops=0
for n in 1 2 3 4 5 6 7 8 9 10 11 12; do
	__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 timeout -k 2 30 "$GT" -v -p $P \
		-e 'cuda:launch { @l = count(); }' >"$T/o$n" 2>"$T/e$n" &
	g=$!
	i=0
	while ! grep -q '^__BPFTRACE_NOTIFY_PROBES_ATTACHED$' "$T/e$n" &&
	      kill -0 $g 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 250 ] && break
		sleep 0.1
	done
	grep -q '^__BPFTRACE_NOTIFY_PROBES_ATTACHED$' "$T/e$n" ||
		fail "attach $n: probes not in place after 25 s: $(grep -v 'info:' "$T/e$n" | head -3)"
	sleep 0.3
	kill -INT $g
	wait $g || fail "attach $n: gputrace status $?: $(tail -3 "$T/e$n")"
	kill -0 $P 2>/dev/null || fail "attach $n: the program died"
	grep -Eq '^@l: [1-9]' "$T/o$n" || fail "attach $n: no launch counted: $(cat "$T/o$n")"
	s=$(sed -n 's/.*in all, \([0-9]*\) stop(s) for a safe point.*/\1/p' "$T/e$n")
	[ -n "$s" ] || fail "attach $n: no 'stop(s) for a safe point' in -v"
	stops=$((stops + s))
done
kill -TERM $P
i=0
while kill -0 $P 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 100 ] && fail "the program does not end after SIGTERM"
	sleep 0.05
done
wait $P || fail "the program's status: $(tail -2 "$T/prog.out")"
P=
echo "12 attaches to a program in malloc all the time: $stops stops for a safe point"
