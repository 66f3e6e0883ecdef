#!/bin/sh
# SPDX-License-Identifier: MIT
# Faults around the tracer with -c (issue 17), host probes only:
#  - the tracer SIGKILLed mid-run: the target runs on to completion;
#  - the target SIGKILLed mid-run: the tracer prints its maps and exits 0
#    within a second or two, as bpftrace 0.17 does;
#  - the target crashing (SIGABRT): the same, and stderr names the signal;
#    a target ended by SIGTERM is not named.
# (The GPU side, the agent losing its tracer, is agent_faults.sh.)
# Exit 0 pass, 1 fail (saying why), 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }

dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT

# wait_gone PID TENTHS: wait until PID is gone; 1 if it outlives TENTHS/10 s
wait_gone() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		[ $i -ge "$2" ] && return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 0
}

# child_of PID: the first child of PID, waiting up to 10 s for it
child_of() {
	i=0
	while [ $i -lt 100 ]; do
		c=$(ps -o pid= --ppid "$1" 2>/dev/null | head -n 1 | tr -d ' ')
		[ -n "$c" ] && { echo "$c"; return 0; }
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# wait_attached FILE: until the tracer says it attached (10 s)
wait_attached() {
	i=0
	until grep -q '^Attaching' "$1" 2>/dev/null; do
		[ $i -ge 100 ] && return 1
		sleep 0.1
		i=$((i + 1))
	done
}

# ---- the tracer killed: the target finishes its work
"$GT" -c "/bin/sh -c 'sleep 1; echo done >$dir/done'" \
	-e 'interval:ms:100 { @t = count(); }' >"$dir/k.out" 2>&1 &
gt=$!
wait_attached "$dir/k.out" || { cat "$dir/k.out"; kill -9 $gt; exit 1; }
kill -9 $gt
wait $gt
i=0
while [ ! -s "$dir/done" ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ "$(cat "$dir/done" 2>/dev/null)" = done ] ||
	{ echo "target did not finish after the tracer was killed"; exit 1; }

# ---- the target killed: the tracer reports and exits cleanly
"$GT" -c "/bin/sleep 30" -e 'interval:ms:50 { @t = count(); }' \
	>"$dir/t.out" 2>"$dir/t.err" &
gt=$!
wait_attached "$dir/t.out" || { cat "$dir/t.out" "$dir/t.err"; kill -9 $gt; exit 1; }
sleep 0.5
child=$(child_of $gt) || { kill -9 $gt; echo "no target under the tracer"; exit 1; }
kill -9 "$child"
if ! wait_gone $gt 50; then
	kill -9 $gt
	echo "tracer still running 5 s after its target was killed"
	exit 1
fi
wait $gt
rc=$?
[ "$rc" -eq 0 ] || { cat "$dir/t.out" "$dir/t.err"; echo "tracer exit status $rc"; exit 1; }
grep -qE '^@t: [1-9][0-9]*$' "$dir/t.out" ||
	{ cat "$dir/t.out"; echo "no map printed"; exit 1; }
if grep -qE 'Sanitizer|runtime error:' "$dir/t.err"; then
	cat "$dir/t.err"
	exit 1
fi

# a crash is named, an ordinary signal is not
for sig in ABRT TERM; do
	timeout 20 "$GT" -c "sh -c 'kill -$sig \$\$'" -e 'BEGIN { @b = 1; }' \
		>"$dir/s.out" 2>"$dir/s.err"
	rc=$?
	[ "$rc" -eq 0 ] && grep -qx '@b: 1' "$dir/s.out" ||
		{ cat "$dir/s.out" "$dir/s.err"; echo "SIG$sig: status $rc"; exit 1; }
	named=$(grep -c '^gputrace: process [0-9]* was killed by signal' "$dir/s.err")
	want=0
	[ $sig = ABRT ] && want=1
	[ "$named" = $want ] && { [ $want = 0 ] ||
		grep -q 'killed by signal 6 (Aborted)' "$dir/s.err"; } ||
		{ cat "$dir/s.err"; echo "SIG$sig: named $named times, want $want"; exit 1; }
done
exit 0
