# SPDX-License-Identifier: MIT
# Sourced by tests/accept/uprobe_*.sh: finds gputrace ($GPUTRACE) and
# the test programs (next to it in BUILD/progs, else build/progs), skips
# (77) without root or the uprobe PMU, and gives:
#
#   trace TRACER WAIT ROUNDS PROG [OPTION...]
#	Start a fresh uprobe_target that waits until breakpoints sit at
#	each of WAIT (SYM[+OFF],...; see tests/progs/uprobe_target.c),
#	then runs ROUNDS rounds and calls gt_done() and stays alive; run
#	TRACER (gputrace or bpftrace) OPTION... -e PROG, at most 10 s; an
#	OPTION "@PID@" becomes the workload's pid.  Then kill the
#	workload.  Stdout without "Attaching N probes..." in $T/out,
#	stderr in $T/err; returns the tracer's exit status.
#	Programs end with `uprobe:$BIN:gt_done { exit(); }`: every call
#	has happened by then, so maps are complete and deterministic.
#   want TEXT	fail (exit 1) unless $T/out is exactly TEXT (plus newline)

. "$(dirname "$0")/../progs/probe_lib.sh"
probe_setup uprobe uprobe_target libgtdemo.so
BIN=$PROGS/uprobe_target
LIB=$PROGS/libgtdemo.so

trace() {
	tracer=$1
	wait=$2
	rounds=$3
	prog=$4
	shift 4
	"$BIN" -n "$rounds" -w "$wait" -k 2>"$T/werr" &
	wpid=$!
	opts=
	for o in "$@"; do
		[ "$o" = "@PID@" ] && o=$wpid
		opts="$opts $o"
	done
	# shellcheck disable=SC2086
	timeout -k 2 10 "$tracer" $opts -e "$prog" </dev/null \
		>"$T/raw" 2>"$T/err"
	rc=$?
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	sed -E '/^Attach(ing|ed) [0-9]+ probes?(\.\.\.)?$/d' "$T/raw" >"$T/out"
	return "$rc"
}
