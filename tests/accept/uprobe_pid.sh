#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: -p and -c scope uprobes to one process.  Copies of the
# workload run in a loop beside the traced one and must not be counted.
# With -p, library names are found in the target's maps: libgtdemo is
# not in the loader's cache, and libc's pause() is what the workload
# calls when it is done.
. "$(dirname "$0")/../progs/uprobe_lib.sh"

if "$GT" -p 1 --dry-run -e 'BEGIN { exit(); }' 2>&1 | grep -q "not available"; then
	echo "gputrace has no -p yet"
	exit 77
fi
(while :; do "$BIN" -n 1; done) >/dev/null 2>&1 &
noise=$!
trap 'kill $noise 2>/dev/null; rm -rf "$T"' EXIT

trace "$GT" func_a,gtdemo_run,pause 3 "
uprobe:$BIN:func_a { @a = count(); }
uprobe:libgtdemo:gtdemo_run { @run = count(); }
uprobe:libc:pause { exit(); }" -p @PID@ || { echo "gputrace -p failed:"; cat "$T/err"; exit 1; }
want "

@a: 3
@run: 3"

# -c: the child is held until the probes are attached
timeout -k 2 10 "$GT" -c "$BIN -n 4" \
	-e "uprobe:$BIN:func_b { @b = count(); }" </dev/null >"$T/raw" 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] || { echo "gputrace -c: status $rc"; cat "$T/err"; exit 1; }
sed -E '/^Attach(ing|ed) [0-9]+ probes?(\.\.\.)?$/d' "$T/raw" >"$T/out"
want "

@b: 8"
