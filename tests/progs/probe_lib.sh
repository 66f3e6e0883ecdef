# SPDX-License-Identifier: MIT
# Sourced by tests/progs/uprobe_lib.sh and cuda_lib.sh: what their
# acceptance scripts share.
#
#   probe_setup NAME FILE...
#	GT: gputrace ($GPUTRACE, else build/gputrace); PROGS: the test
#	programs, next to gputrace in BUILD/progs, else build/progs (the
#	first FILE, the workload, decides); skips (77) when a FILE is
#	missing there (the workload: not executable),
#	without root, or without the uprobe PMU; T: a temporary directory
#	gt-NAME.XXXXXX, removed at exit
#   want TEXT	fail (exit 1) unless $T/out is exactly TEXT (plus newline),
#		showing the difference, $T/err and $T/werr (if any)
#   verdict NAME BRC GRC
#		a differential case: bpftrace's stdout in $T/bpftrace and
#		status BRC, gputrace's in $T/out and GRC; "ok NAME" when
#		gputrace succeeded with output identical to bpftrace's and
#		the same status, else FAIL with the difference, and failed=1

probe_setup() {
	name=$1
	shift
	GT=${GPUTRACE:-build/gputrace}
	[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
	PROGS=$(cd "$(dirname "$GT")" && pwd)/progs
	[ -x "$PROGS/$1" ] || PROGS=$(pwd)/build/progs
	for f in "$@"; do
		if [ ! -f "$PROGS/$f" ] ||
		   { [ "$f" = "$1" ] && [ ! -x "$PROGS/$f" ]; }; then
			echo "no test programs in $PROGS (run make)"
			exit 77
		fi
	done
	if [ "$(id -u)" -ne 0 ]; then
		echo "needs root"
		exit 77
	fi
	if [ ! -r /sys/bus/event_source/devices/uprobe/type ]; then
		echo "no uprobe PMU in this kernel"
		exit 77
	fi
	T=$(mktemp -d "${TMPDIR:-/tmp}/gt-$name.XXXXXX") || exit 1
	trap 'rm -rf "$T"' EXIT
}

want() {
	printf '%s\n' "$1" >"$T/want"
	cmp -s "$T/want" "$T/out" && return 0
	echo "output differs (-want +got):"
	diff -u "$T/want" "$T/out"
	echo "stderr:"
	head -n 20 "$T/err"
	cat "$T/werr" 2>/dev/null
	exit 1
}

verdict() {
	if [ "$3" -ne 0 ] || ! grep -q . "$T/out"; then
		echo "FAIL $1: gputrace status $3, output:"
		cat "$T/out" "$T/err"
		failed=1
	elif [ "$2" -ne "$3" ] || ! cmp -s "$T/bpftrace" "$T/out"; then
		echo "FAIL $1 (status bpftrace $2, gputrace $3)"
		diff -u --label bpftrace --label gputrace "$T/bpftrace" "$T/out"
		head -n 10 "$T/err"
		failed=1
	else
		echo "ok $1"
		sed 's/^/    | /' "$T/out"
	fi
}
