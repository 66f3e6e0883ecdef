#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 31): errors name their real cause.  A user who may not
# read tracefs (mounted 0700) is told so, not "tracefs is not mounted";
# -c with a command that cannot run is refused before anything is
# attached (BEGIN does not run), naming the command, as bpftrace does.
# Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
GT=$(cd "$(dirname "$GT")" && pwd)/$(basename "$GT")
fail=0
bad() { echo "FAIL: $*"; fail=1; }

for c in /nonexistent 'gt_no_such_program_anywhere arg' /etc/passwd /tmp; do
	out=$("$GT" -c "$c" -e 'BEGIN { printf("begin\n"); }' 2>&1)
	rc=$?
	word=${c%% *}
	[ $rc -eq 1 ] && echo "$out" | grep -q -- "^gputrace: -c: .*'$word'" &&
		! echo "$out" | grep -q 'begin\|Attaching' ||
		bad "-c '$c': rc $rc: $out"
done

# tracefs mounted 0700, as an unprivileged user: a private mount
# namespace gives it (the real one is left alone)
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null && command -v setpriv >/dev/null; then
	out=$(unshare -m sh -c '
		mount -t tmpfs -o mode=0700 gt_tracefs /sys/kernel/tracing &&
		mkdir /sys/kernel/tracing/events || exit 99
		for e in "tracepoint:sched:sched_switch { exit(); }" "tracepoint:sched:* { exit(); }"; do
			setpriv --reuid=65534 --regid=65534 --clear-groups "$1" -e "$e"
		done
		setpriv --reuid=65534 --regid=65534 --clear-groups "$1" -l "tracepoint:sched:*"
		exit 0' sh "$GT" 2>&1)
	if [ $? -eq 99 ]; then
		echo "SKIP part: cannot mount a tmpfs in a private namespace"
	else
		n=$(echo "$out" | grep -c 'permission denied on tracefs')
		[ "$n" -eq 3 ] && ! echo "$out" | grep -q 'not mounted' ||
			bad "tracefs 0700: $out"
	fi
fi
[ $fail -eq 0 ] && echo "error causes: ok"
exit $fail
