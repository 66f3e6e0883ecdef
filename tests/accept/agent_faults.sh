#!/bin/sh
# SPDX-License-Identifier: MIT
# Faults around the agent, without a GPU (the fake libcuda of
# agent_hooks.sh; issue 17): the tracer's socket closed under the agent
# right after its hello, and the tracer SIGKILLed at the same point.  Each
# time the target must go on and make all its launches (5 of vadd, 1 of
# the other kernel) and exit 0.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. tests/progs/agent_lib.sh

"$T/cfg" "$T/f.cfg" -g vadd || fail "agent_cfg"

# launches FILE: the target's launch lines in FILE
launches() {
	grep -cE "^cuLaunchKernel(_ptsz)? ($VADD|$GLOBAL): " "$1"
}

# ---- the socket closed under the agent
AGENT_TRACER_FAULT=close timeout -k 5 60 "$T/tracer" "$T/sock" "$AGENT" \
	"$T/f.cfg" "$T/prog" "$T/vadd.fatbin" $VADD $GLOBAL >"$T/c.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { cat "$T/c.out"; fail "socket closed: target exit status $rc"; }
grep -qx closed "$T/c.out" || { cat "$T/c.out"; fail "socket closed: never closed"; }
[ "$(launches "$T/c.out")" -eq 6 ] ||
	{ cat "$T/c.out"; fail "socket closed: not every launch made"; }

# ---- the tracer SIGKILLed: the orphaned target finishes on its own
AGENT_TRACER_FAULT=kill timeout -k 5 60 "$T/tracer" "$T/sock2" "$AGENT" \
	"$T/f.cfg" "$T/prog" "$T/vadd.fatbin" $VADD $GLOBAL >"$T/k.out" 2>&1
rc=$?
[ "$rc" -eq 137 ] || { cat "$T/k.out"; fail "tracer not killed (status $rc)"; }
child=$(sed -n 's/^child //p' "$T/k.out")
[ -n "$child" ] || { cat "$T/k.out"; fail "no child pid"; }
i=0
while kill -0 "$child" 2>/dev/null && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -0 "$child" 2>/dev/null && { kill -9 "$child"; fail "target hangs without its tracer"; }
[ "$(launches "$T/k.out")" -eq 6 ] ||
	{ cat "$T/k.out"; fail "tracer killed: not every launch made"; }
exit 0
