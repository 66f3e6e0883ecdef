#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: --metrics serves every map on /metrics in the Prometheus
# text format while the program runs: counters, gauges, histograms with
# cumulative `le` buckets and the sum of the values given, stats() as a
# summary and an average, keys as labels (tuples as key0, key1; quotes,
# backslashes, line feeds escaped, bytes that are not UTF-8 replaced), a map the program keeps updating
# grows between scrapes, and the text output at exit is what it is
# without --metrics.  Every expected number follows from the program.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. "$(dirname "$0")/../progs/metrics_lib.sh"

prog='BEGIN {
	@launches["gemm"] = count(); @launches["gemm"] = count();
	@launches["gemm"] = count(); @launches["a\"b\\c\nd"] = count();
	@launches["\xff\x41"] = count();
	@payload[1, "in"] = sum(5); @payload[1, "in"] = sum(7);
	@payload[2, "out"] = sum(-3);
	@latency = hist(0); @latency = hist(1); @latency = hist(5);
	@latency = hist(5); @latency = hist(100); @latency = hist(-4);
	@sizes = lhist(7, 0, 10, 3); @sizes = lhist(12, 0, 10, 3);
	@sizes = lhist(2, 0, 10, 3); @sizes = lhist(-1, 0, 10, 3);
	@wait["rx"] = hist(3); @wait["tx"] = hist(1000); @wait["tx"] = hist(24);
	@durations = stats(10); @durations = stats(20);
	@lowest = min(4); @lowest = min(2); @highest = max(9);
	@mean = avg(3); @mean = avg(5); @answer = 42; @label = "hello";
}'

metrics_start page -e "$prog interval:ms:100 { @ticks = count(); @tickh = hist(7); }"
p=$MPORT
metrics_get "$p" >"$MDIR/page1" || { echo "first scrape failed"; exit 1; }
sleep 0.5
metrics_get "$p" >"$MDIR/page2" || { echo "second scrape failed"; exit 1; }
page=$MDIR/page2

# types
for l in '# TYPE gputrace_launches_total counter' \
	 '# TYPE gputrace_payload_total counter' \
	 '# TYPE gputrace_latency histogram' '# TYPE gputrace_sizes histogram' \
	 '# TYPE gputrace_durations summary' '# TYPE gputrace_durations_avg gauge' \
	 '# TYPE gputrace_lowest gauge' '# TYPE gputrace_highest gauge' \
	 '# TYPE gputrace_mean gauge' '# TYPE gputrace_answer gauge' \
	 '# TYPE gputrace_label gauge' '# TYPE gputrace_ticks_total counter' \
	 '# HELP gputrace_latency gputrace map @latency: hist()'; do
	want_line "$page" "$l"
done
# keys, escaping; 0xff is not UTF-8: U+FFFD
want_line "$page" 'gputrace_launches_total{key="gemm"} 3'
want_line "$page" 'gputrace_launches_total{key="a\"b\\c\nd"} 1'
want_line "$page" "$(printf 'gputrace_launches_total{key="\357\277\275A"} 1')"
want_line "$page" 'gputrace_payload_total{key0="1",key1="in"} 12'
want_line "$page" 'gputrace_payload_total{key0="2",key1="out"} -3'
# hist: -4 | 0 | 1 | 5 5 | 100; bucket 2+k holds [2^k, 2^(k+1)), so its
# largest integer 2^(k+1)-1 is `le`
for l in 'le="-1"} 1' 'le="0"} 2' 'le="1"} 3' 'le="3"} 3' 'le="7"} 5' \
	 'le="63"} 5' 'le="127"} 6' 'le="2147483647"} 6' 'le="+Inf"} 6'; do
	want_line "$page" "gputrace_latency_bucket{$l"
done
want_line "$page" 'gputrace_latency_count 6'
# _sum: the values given, 0 + 1 + 5 + 5 + 100 - 4 (not a bucket bound's)
want_line "$page" 'gputrace_latency_sum 107'
[ "$(grep -c '^gputrace_latency_bucket' "$page")" = 34 ] ||
	{ echo "want 34 latency buckets (33 bounds and +Inf)"; cat "$page"; exit 1; }
# lhist(0, 10, 3): -1 below, 2 in [0,3), 7 in [6,9), 12 at/above 9
for l in 'le="-1"} 1' 'le="2"} 2' 'le="5"} 2' 'le="8"} 3' 'le="+Inf"} 4'; do
	want_line "$page" "gputrace_sizes_bucket{$l"
done
want_line "$page" 'gputrace_sizes_count 4'
want_line "$page" 'gputrace_sizes_sum 20'
# keyed: a _sum per key, between +Inf and _count
want_line "$page" 'gputrace_wait_sum{key="rx"} 3'
want_line "$page" 'gputrace_wait_sum{key="tx"} 1024'
want_line "$page" 'gputrace_wait_count{key="tx"} 2'
grep -A2 '^gputrace_wait_bucket{key="tx",le="+Inf"} 2$' "$page" | tr '\n' '|' |
	grep -q '|gputrace_wait_sum{key="tx"} 1024|gputrace_wait_count{key="tx"} 2|' ||
	{ echo "want +Inf, _sum, _count in a row for key tx"; cat "$page"; exit 1; }
# buckets are cumulative: never smaller than the one before
awk '/_bucket\{/ { n = $2 + 0; k = $1; sub(/le=.*/, "", k);
	if (k == last && n < prev) { print "not cumulative: " $0; bad = 1 }
	last = k; prev = n } END { exit bad }' "$page" || exit 1
want_line "$page" 'gputrace_durations_sum 30'
want_line "$page" 'gputrace_durations_count 2'
want_line "$page" 'gputrace_durations_avg 15'
want_line "$page" 'gputrace_lowest 2'
want_line "$page" 'gputrace_highest 9'
want_line "$page" 'gputrace_mean 4'
want_line "$page" 'gputrace_answer 42'
want_line "$page" 'gputrace_label{value="hello"} 1'

# live: @ticks grew between the scrapes (10 a second)
t1=$(sed -n 's/^gputrace_ticks_total \([0-9]*\)$/\1/p' "$MDIR/page1")
t2=$(sed -n 's/^gputrace_ticks_total \([0-9]*\)$/\1/p' "$page")
if [ -z "$t2" ] || [ "${t1:-0}" -ge "$t2" ]; then
	echo "@ticks did not grow between scrapes: '$t1' then '$t2'"
	exit 1
fi
# a hist fed 7 each tick: its _sum is 7 times its _count (a tick may
# land between the read of its bucket and of its sum: one either way)
c=$(sed -n 's/^gputrace_tickh_count \([0-9]*\)$/\1/p' "$page")
s=$(sed -n 's/^gputrace_tickh_sum \([0-9]*\)$/\1/p' "$page")
if [ -z "$c" ] || [ -z "$s" ] || [ $((s % 7)) != 0 ] || [ "$c" -lt 3 ] ||
   [ $((s / 7 - c)) -gt 1 ] || [ $((c - s / 7)) -gt 1 ]; then
	echo "@tickh: _sum '$s' is not 7 x _count '$c'"
	exit 1
fi

# the exit output is the same with --metrics as without
metrics_end "$MPID" page
timeout -k 5 20 "$GT" -e "$prog BEGIN { exit(); }" </dev/null >"$MDIR/plain" 2>&1
timeout -k 5 20 "$GT" --metrics 127.0.0.1:0 -e "$prog BEGIN { exit(); }" \
	</dev/null >"$MDIR/served" 2>/dev/null
if ! cmp -s "$MDIR/plain" "$MDIR/served"; then
	echo "the output differs with --metrics:"
	diff "$MDIR/plain" "$MDIR/served"
	exit 1
fi
grep -q '^@launches\[gemm\]: 3$' "$MDIR/plain" ||
	{ echo "the exit dump lacks @launches[gemm]: 3"; cat "$MDIR/plain"; exit 1; }
exit 0
