#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: SIGUSR1 prints every map (no blank pair before them) and
# tracing goes on, as in bpftrace; the -c child is killed when gputrace
# ends, whether through exit(), SIGINT or SIGTERM (bpftrace kills it);
# -p ends with its target, reaped or not.
# Exit 0 pass, 1 fail (saying why), 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
	echo "needs root"
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-signals.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# --- SIGUSR1: maps now, and again at exit
"$GT" -e 'BEGIN { @a = 1; @b[2] = count(); }
interval:ms:100 /@n < 20/ { @n++; }
interval:ms:100 /@n >= 20/ { exit(); }' >"$T/out" 2>"$T/err" &
gt=$!
sleep 1
kill -USR1 "$gt"
wait "$gt"
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "SIGUSR1: exit status $rc, want 0 (tracing goes on); stderr:"
	cat "$T/err"
	exit 1
fi
# the @a/@b lines twice: once on SIGUSR1, once at exit
if [ "$(grep -c '^@a: 1$' "$T/out")" -ne 2 ] ||
   [ "$(grep -c '^@b\[2\]: 1$' "$T/out")" -ne 2 ] ||
   [ "$(sed -n 2p "$T/out" | cut -c1-2)" != "@a" ]; then
	echo "SIGUSR1: want the maps at once (line 2) and at exit; got:"
	cat "$T/out"
	exit 1
fi

# --- -c: the child does not outlive gputrace
# run_child HOW: start gputrace -c "sleep 300" (a distinct length per
# case), end it by HOW (exit, INT or TERM), check the sleep is gone
run_child() {
	secs=$2
	if [ "$1" = exit ]; then
		prog='interval:ms:2000 { exit(); }'
	else
		prog='interval:s:30 { exit(); }'
	fi
	"$GT" -c "sleep $secs" -e "$prog" >"$T/out" 2>"$T/err" &
	gt=$!
	sleep 1
	if ! pgrep -f "^sleep $secs\$" >/dev/null; then
		echo "-c ($1): the child never ran"
		cat "$T/err"
		exit 1
	fi
	[ "$1" = exit ] || kill "-$1" "$gt"
	wait "$gt"
	sleep 0.2
	if pgrep -f "^sleep $secs\$" >/dev/null; then
		echo "-c ($1): the child still runs after gputrace ended"
		kill "$(pgrep -f "^sleep $secs\$")"
		exit 1
	fi
}
base=$((400 + $$ % 10000))
run_child exit "$base"
run_child INT "$((base + 1))"
run_child TERM "$((base + 2))"

# --- -p: gputrace ends when its target does, even while the target's
# parent has not reaped it (a zombie: kill -0 still finds it).  The
# parent, here a shell exec'd into a long sleep, never waits.
sh -c 'sleep 1 & echo $! >"$1"; exec sleep 30' sh "$T/zpid" &
parent=$!
sleep 0.3
zp=$(cat "$T/zpid")
timeout 10 "$GT" -p "$zp" -e 'BEGIN { printf("traced\n"); }' >"$T/out" 2>"$T/err"
rc=$?
kill "$parent" 2>/dev/null
wait "$parent" 2>/dev/null
if [ "$rc" -ne 0 ] || ! grep -q '^traced$' "$T/out"; then
	echo "-p: exit status $rc (124: still running 9 s after its target ended), want 0; stderr:"
	cat "$T/err"
	exit 1
fi
echo "ok"
exit 0
