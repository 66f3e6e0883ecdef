#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: --metrics merges device map parts with host parts as the
# exit dump does, without a GPU: the fake libcuda (agent_fakecuda.c) runs
# agent_hookprog's vadd launches and adds each one's warps to device map
# 0, as a gpu:warp count would; cuda:launch counts the launches on the
# host into that map (@both) and into @host.  Once the program has
# launched everything (it waits for a file before exiting), a scrape
# must give each map the value the exit dump then prints, and @both more
# than @host: its device part is there.  @grid, a hist the agent's host
# path keeps (its sum in the word after the buckets), has the _sum of
# the values it was given: @grid_total's, a sum() of the same values,
# and as many as @host counted.  Without --metrics (no sum updated) the
# exit dump's @grid, @grid_total and @host are the same.  Needs root and
# the uprobe PMU.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. tests/progs/agent_lib.sh
. tests/progs/metrics_lib.sh

[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
[ -r /sys/bus/event_source/devices/uprobe/type ] ||
	{ echo "no uprobe PMU in this kernel"; exit 77; }

export LD_LIBRARY_PATH="$T" HOOKPROG_WAIT_FILE="$T/go" GPUTRACE_AGENT_LIB="$AGENT"
metrics_start dev -q -c "$T/prog $T/vadd.fatbin $VADD" -e '
gpu:warp:vadd { @both = count(); }
cuda:launch { @both = count(); @host = count();
	@grid = hist(gridDim.x); @grid_total = sum(gridDim.x); }'
p=$MPORT

# num PAGE FAMILY: the value of the keyless sample FAMILY
num() { sed -n "s/^$2 \\([0-9]*\\)\$/\\1/p" "$1"; }

# the launches are done when both parts show; then one more scrape after
# a second, which takes a fresh snapshot from the agent
i=0
while [ $i -lt 100 ]; do
	metrics_get "$p" >"$MDIR/page" 2>/dev/null
	h=$(num "$MDIR/page" gputrace_host_total)
	[ "${h:-0}" -gt 0 ] 2>/dev/null &&
		[ "$(num "$MDIR/page" gputrace_both_total)" -gt "$h" ] 2>/dev/null && break
	sleep 0.1
	i=$((i + 1))
done
sleep 1.1
metrics_get "$p" >"$MDIR/page" || { echo "scrape failed"; exit 1; }
: >"$T/go"
metrics_end "$MPID" dev wait

for m in host both; do
	got=$(num "$MDIR/page" "gputrace_${m}_total")
	want=$(sed -n "s/^@$m: //p" "$MDIR/dev.out")
	if [ -z "$want" ] || [ "$got" != "$want" ]; then
		echo "@$m: the page says '$got', the exit dump '$want'"
		cat "$MDIR/page" "$MDIR/dev.out" "$MDIR/dev.err"
		exit 1
	fi
done
h=$(num "$MDIR/page" gputrace_host_total)
[ "$(num "$MDIR/page" gputrace_both_total)" -gt "$h" ] ||
	{ echo "@both has no device part:"; cat "$MDIR/page"; exit 1; }
gs=$(num "$MDIR/page" gputrace_grid_sum)
gt=$(num "$MDIR/page" gputrace_grid_total_total)
if [ -z "$gs" ] || [ "$gs" != "$gt" ] || [ "$gs" -le 0 ] ||
   [ "$(num "$MDIR/page" gputrace_grid_count)" != "$h" ]; then
	echo "@grid: _sum '$gs' _count '$(num "$MDIR/page" gputrace_grid_count)';" \
		"want @grid_total's '$gt' and @host's '$h'"
	cat "$MDIR/page"
	exit 1
fi

# without --metrics the host path keeps no sum (one map operation per
# update, docs/fleet.md) and does the rest the same: the exit dump's
# @grid buckets, @grid_total and @host are the --metrics run's
timeout -k 5 60 "$GT" -q -c "$T/prog $T/vadd.fatbin $VADD" -e '
gpu:warp:vadd { @both = count(); }
cuda:launch { @both = count(); @host = count();
	@grid = hist(gridDim.x); @grid_total = sum(gridDim.x); }' \
	>"$MDIR/plain.out" 2>"$MDIR/plain.err" </dev/null ||
	{ echo "gputrace without --metrics failed:"; cat "$MDIR/plain.err"; exit 1; }
# the lines of map NAME in an exit dump, up to the blank line after it
dump_map() { awk -v m="@$2:" 'index($0, m) == 1 { p = 1 } p && $0 == "" { exit } p' "$1"; }
for m in grid grid_total host; do
	a=$(dump_map "$MDIR/dev.out" $m)
	b=$(dump_map "$MDIR/plain.out" $m)
	if [ -z "$a" ] || [ "$a" != "$b" ]; then
		echo "@$m with --metrics:"; echo "$a"
		echo "@$m without:"; echo "$b"
		exit 1
	fi
done
exit 0
