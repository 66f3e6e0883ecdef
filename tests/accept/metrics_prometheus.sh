#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance against the real thing: `promtool check metrics` accepts the
# page (format and Prometheus' naming rules), then Debian's prometheus
# scrapes two gputrace instances ("two hosts", two ports on 127.0.0.1)
# every second, and its HTTP API answers, after two scrapes of each:
#   sum(gputrace_kernels_total{key="gemm"})      = 3 + 5, the two counts
#   histogram_quantile(0.5, sum by (le) (gputrace_latency_bucket)) = 6:
#     hist(5) x4 on one host, hist(100) x2 on the other; the rank 3 of 6
#     falls in bucket [4, 8), le 7 (cumulative 0 up to le 3, then 4),
#     interpolated 3 + (7 - 3) * 3/4 = 6.
#   sum(gputrace_latency_sum) = 4 x 5 + 2 x 100 = 220, the values given
#     (not bucket bounds), and / sum(..._count) their mean, 220 / 6;
#   the rate of _sum over the rate of _count of a hist that each host's
#     interval probe feeds 1000 each tick: 1000 (within 10%: a tick may
#     fall between the reads of a bucket and of the sum).
# Skipped (with the reason) where prometheus or promtool is missing.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. "$(dirname "$0")/../progs/metrics_lib.sh"
for t in prometheus promtool python3; do
	command -v $t >/dev/null ||
		{ echo "$t is missing (tests/install-deps.sh installs it)"; exit 77; }
done

metrics_start a -e 'BEGIN { @kernels["gemm"] = count(); @kernels["gemm"] = count();
	@kernels["gemm"] = count(); @kernels["copy"] = count();
	@latency = hist(5); @latency = hist(5); @latency = hist(5); @latency = hist(5); }
	interval:ms:100 { @ticks = count(); @tick_work = hist(1000); }'
pa=$MPORT
pida=$MPID
metrics_start b -e 'BEGIN { @kernels["gemm"] = count(); @kernels["gemm"] = count();
	@kernels["gemm"] = count(); @kernels["gemm"] = count(); @kernels["gemm"] = count();
	@latency = hist(100); @latency = hist(100); }
	interval:ms:100 { @ticks = count(); @tick_work = hist(1000); }'
pb=$MPORT
pidb=$MPID

metrics_get "$pa" >"$MDIR/page" || { echo "scrape of a failed"; exit 1; }
if ! promtool check metrics <"$MDIR/page" >"$MDIR/lint" 2>&1; then
	echo "promtool check metrics rejects the page:"
	cat "$MDIR/lint" "$MDIR/page"
	exit 1
fi

pp=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$MDIR/prom.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gputrace
    static_configs:
      - targets: ["127.0.0.1:$pa", "127.0.0.1:$pb"]
YML
prometheus --config.file="$MDIR/prom.yml" --storage.tsdb.path="$MDIR/tsdb" \
	--web.listen-address="127.0.0.1:$pp" >"$MDIR/prom.log" 2>&1 &
MPIDS="$MPIDS $!"

python3 - "$pp" "$pa" "$pb" <<'PY' || { tail -n 20 "$MDIR/prom.log"; exit 1; }
import json, sys, time, urllib.parse, urllib.request

pp, pa, pb = sys.argv[1:]

def query(q):
    url = "http://127.0.0.1:%s/api/v1/query?%s" % (
        pp, urllib.parse.urlencode({"query": q}))
    r = json.load(urllib.request.urlopen(url, timeout=5))
    if r.get("status") != "success":
        sys.exit("%s: %s" % (q, r))
    return r["data"]["result"]

# three scrapes of each instance (rate() needs two), within 25 s
deadline = time.time() + 25
while True:
    try:
        res = query('count_over_time(up{job="gputrace"}[1m])')
        n = {s["metric"]["instance"]: float(s["value"][1]) for s in res}
        ups = query('up{job="gputrace"}')
        if (len(n) == 2 and min(n.values()) >= 3 and
                all(s["value"][1] == "1" for s in ups)):
            break
    except OSError:
        pass            # prometheus is still starting
    if time.time() > deadline:
        sys.exit("prometheus did not scrape both instances twice in 25 s")
    time.sleep(0.3)

res = query('sum(gputrace_kernels_total{key="gemm"})')
if len(res) != 1 or float(res[0]["value"][1]) != 8:
    sys.exit("sum across instances: %s, want 8" % res)
res = query('count(gputrace_kernels_total{key="gemm"})')
if float(res[0]["value"][1]) != 2:
    sys.exit("gemm series: %s, want one per instance" % res)
res = query('sum by (instance) (gputrace_kernels_total{key="copy"})')
if [(s["metric"]["instance"], s["value"][1]) for s in res] != \
        [("127.0.0.1:" + pa, "1")]:
    sys.exit("copy: %s, want 1 on the first instance only" % res)
res = query('histogram_quantile(0.5, sum by (le) (gputrace_latency_bucket))')
if len(res) != 1 or abs(float(res[0]["value"][1]) - 6) > 1e-9:
    sys.exit("median across instances: %s, want 6" % res)
res = query('sum(gputrace_latency_sum)')
if len(res) != 1 or float(res[0]["value"][1]) != 220:
    sys.exit("sum of hist values across instances: %s, want 220" % res)
res = query('sum(gputrace_latency_sum) / sum(gputrace_latency_count)')
if len(res) != 1 or abs(float(res[0]["value"][1]) - 220 / 6) > 1e-9:
    sys.exit("mean of hist values: %s, want 220/6" % res)
q = ('sum(rate(gputrace_tick_work_sum[1m])) / '
     'sum(rate(gputrace_tick_work_count[1m]))')
res = query(q)
if len(res) != 1 or abs(float(res[0]["value"][1]) - 1000) > 100:
    sys.exit("%s: %s, want 1000" % (q, res))
res = query('sum(rate(gputrace_tick_work_sum[1m]))')
if len(res) != 1 or float(res[0]["value"][1]) <= 0:
    sys.exit("rate of _sum: %s, want > 0" % res)
PY
metrics_end "$pida" a
metrics_end "$pidb" b
exit 0
