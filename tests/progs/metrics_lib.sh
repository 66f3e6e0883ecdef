# SPDX-License-Identifier: MIT
# Helpers of the --metrics tests (tests/accept/metrics_*.sh), sourced.
# Every loop is bounded; only loopback addresses are used.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
command -v curl >/dev/null || { echo "curl is missing (tests/install-deps.sh)"; exit 77; }

MDIR=$(mktemp -d) || exit 1
MPIDS=
trap 'metrics_cleanup' EXIT

metrics_cleanup() {
	for p in $MPIDS; do
		kill "$p" 2>/dev/null
	done
	for p in $MPIDS; do
		wait "$p" 2>/dev/null
	done
	# and agent_lib.sh's folder, whose trap this one replaced
	rm -rf "$MDIR" ${T:+"$T"}
}

# metrics_start NAME ARGS...: gputrace --metrics 127.0.0.1:0 ARGS in the
# background (stdout NAME.out, stderr NAME.err in $MDIR); sets MPID and
# MPORT once it says where it serves.  Exits 77 without libmicrohttpd.
metrics_start() {
	name=$1
	shift
	timeout -k 5 60 "$GT" --metrics 127.0.0.1:0 "$@" \
		>"$MDIR/$name.out" 2>"$MDIR/$name.err" </dev/null &
	MPID=$!
	MPIDS="$MPIDS $MPID"
	MPORT=
	i=0
	while [ $i -lt 100 ]; do
		MPORT=$(sed -n 's|^gputrace: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' \
			"$MDIR/$name.err")
		[ -n "$MPORT" ] && return 0
		if ! kill -0 "$MPID" 2>/dev/null; then
			if grep -q 'needs libmicrohttpd' "$MDIR/$name.err"; then
				echo "libmicrohttpd.so.12 is missing (libmicrohttpd12)"
				exit 77
			fi
			echo "gputrace $name ended before serving; stderr:"
			cat "$MDIR/$name.err"
			exit 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
	echo "gputrace $name did not say where it serves in 10 s; stderr:"
	cat "$MDIR/$name.err"
	exit 1
}

# metrics_end PID NAME [wait]: SIGINT (the exit dump follows) unless
# "wait" (the program ends by itself); then gputrace NAME must exit 0
# with no sanitizer report on its stderr (the ASan build of make check).
metrics_end() {
	[ "$3" = wait ] || kill -INT "$1" 2>/dev/null
	wait "$1"
	rc=$?
	if [ $rc -ne 0 ] || grep -q 'Sanitizer' "$MDIR/$2.err"; then
		echo "gputrace $2: exit status $rc; stderr:"
		cat "$MDIR/$2.err"
		exit 1
	fi
}

# metrics_get PORT [PATH]: the page's body (5 s at most).
metrics_get() {
	curl -sS -m 5 "http://127.0.0.1:$1${2:-/metrics}"
}

# want_line FILE LINE: FILE holds LINE exactly, else say so and fail.
want_line() {
	if ! grep -qxF -- "$2" "$1"; then
		echo "no line '$2' in the page:"
		cat "$1"
		exit 1
	fi
}
