#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: with __BPFTRACE_NOTIFY_PROBES_ATTACHED set (to anything,
# even empty) gputrace writes that line once on stderr when every probe
# is attached, as bpftrace 0.17-0.22 do; harnesses written for bpftrace
# start their workload on it, so a uprobe must fire for a program started
# only after the line is seen.  Unset, no line.  Exit 0 pass, 1 fail, 77 skip.

. "$(dirname "$0")/../progs/uprobe_lib.sh"
L=__BPFTRACE_NOTIFY_PROBES_ATTACHED

fail() { echo "$*"; cat "$T/err"; exit 1; }

"$GPUTRACE" -e 'BEGIN { printf("hi\n"); exit(); }' >"$T/out" 2>"$T/err" </dev/null
grep -q "$L" "$T/out" "$T/err" && fail "the line without the variable"

env "$L=" "$GPUTRACE" -e 'BEGIN { printf("hi\n"); exit(); }' >"$T/out" 2>"$T/err" </dev/null
[ "$(grep -c "^$L\$" "$T/err")" = 1 ] || fail "want the line once on stderr (variable set, empty)"
grep -q "$L" "$T/out" && fail "the line on stdout"

# the harness's way: wait for the line, then run the workload.  A new
# file: the line the runs above left in $T/err would be seen before the
# background gputrace truncates it (the workload would then start before
# the probes are attached)
rm -f "$T/err"
env "$L=1" timeout -k 2 60 "$GPUTRACE" \
	-e "uprobe:$BIN:func_c { @c = count(); } uprobe:$BIN:gt_done { exit(); }" \
	>"$T/out" 2>"$T/err" </dev/null &
gpid=$!
i=0
until grep -q "^$L\$" "$T/err" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 300 ] && { kill "$gpid"; fail "no line within 30 s"; }
	sleep 0.1
done
"$BIN" -n 4 >/dev/null 2>&1
wait "$gpid" || fail "gputrace failed"
grep -q '^@c: 12$' "$T/out" || { cat "$T/out"; fail "want @c: 12 (4 rounds of 3 calls)"; }
[ "$(grep -c "^$L\$" "$T/err")" = 1 ] || fail "want the line once"
echo ok
