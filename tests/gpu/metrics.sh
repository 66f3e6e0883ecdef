#!/bin/sh
# SPDX-License-Identifier: MIT
# --metrics on a GPU: a program (metrics_prog.cu) launches mvadd ITERS
# times and waits; while it waits, the page served by gputrace -c must
# say what the launch configuration implies: gpu:warp's count (device
# map, merged by the tracer) = ITERS x blocks x 8 warps, cuda:complete's
# runs and hist count = ITERS, cuda:launch's count by kernel summed over
# its keys = ITERS; then the exit dump prints the same numbers.  Device
# hist()/lhist() maps, each on one path of the device runtime, have the
# _count and the _sum (the word after the buckets) the threads imply:
# a gpu:warp hist(lanes) (inline, one lane), an entry hist (inline,
# deferred: the lanes of a bucket add their values up by shuffles), the
# same behind a filter, a hist kept per kernel (the launch's slot), a
# keyed hist (__gt_rt_agg8) and an lhist (__gt_rt_agg0) at exit.
# Skipped (with the reason) without nvcc, curl or libmicrohttpd.so.12.
cd "$(dirname "$0")/../.." || exit 1
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
. tests/progs/metrics_lib.sh

N=1048576
ITERS=10
"$NVCC" -O2 -o "$MDIR/mprog" tests/gpu/metrics_prog.cu || { echo "FAIL build"; exit 1; }

metrics_start gpu -q -c "$MDIR/mprog $N $ITERS $MDIR/go" -e '
gpu:warp:mvadd { @warps = count(); @wlanes = hist(lanes); }
gpu:kernel:mvadd { @tmod = hist(threadIdx.x % 8); }
gpu:kernel:mvadd /threadIdx.x % 3 == 0/ { @tf = hist(threadIdx.x); }
gpu:kernel:mvadd:exit { @pk[kernel] = hist(threadIdx.x % 4);
	@bk[blockIdx.x % 2] = hist(threadIdx.x); @l = lhist(threadIdx.x, 0, 256, 32); }
cuda:complete:mvadd { @runs = count(); @run_microseconds = hist(duration / 1000); }
cuda:launch { @launches[kernel] = count(); }'
p=$MPORT

num() { sed -n "s/^$2 \\([0-9]*\\)\$/\\1/p" "$1"; }
# until the program has said it is done and cuda:complete saw every run
i=0
while [ $i -lt 300 ]; do
	metrics_get "$p" >"$MDIR/page" 2>/dev/null
	grep -q '^expect' "$MDIR/gpu.out" &&
		[ "$(num "$MDIR/page" gputrace_runs_total)" = $ITERS ] && break
	sleep 0.1
	i=$((i + 1))
done
sleep 1.1	# one more device snapshot, after the last kernel
metrics_get "$p" >"$MDIR/page" || { echo "FAIL: scrape"; exit 1; }
warps=$(sed -n 's/^expect launches [0-9]* warps \([0-9]*\)$/\1/p' "$MDIR/gpu.out")
nfail=0
check() {	# NAME GOT WANT
	if [ "$2" = "$3" ] && [ -n "$3" ]; then
		echo "PASS $1 ($2)"
	else
		echo "FAIL $1: got '$2', want '$3'"
		nfail=$((nfail + 1))
	fi
}
check "page: gpu:warp count = ITERS x blocks x 8" "$(num "$MDIR/page" gputrace_warps_total)" "$warps"
check "page: cuda:complete runs = ITERS" "$(num "$MDIR/page" gputrace_runs_total)" $ITERS
check "page: hist count = ITERS" "$(num "$MDIR/page" gputrace_run_microseconds_count)" $ITERS
check "page: hist +Inf = ITERS" \
	"$(sed -n 's/^gputrace_run_microseconds_bucket{le="+Inf"} //p' "$MDIR/page")" $ITERS
check "page: launches over kernels >= ITERS" \
	"$(awk '/^gputrace_launches_total\{/ { s += $NF } END { print (s >= '$ITERS') }' "$MDIR/page")" 1
check "page: a launches key names mvadd" \
	"$(grep -c '^gputrace_launches_total{key="[^"]*mvadd[^"]*"} '$ITERS'$' "$MDIR/page")" 1
# device hist sums: mvadd<<<N/256, 256>>> ITERS times, every thread in
blocks=$((N / 256))
threads=$((ITERS * blocks * 256))
# sum over a family's series (keyed maps): SERIES is the name with `{`
total() { awk -v s="$2" 'index($0, s) == 1 { t += $NF; n++ } END { if (n) printf "%d\n", t }' "$1"; }
check "page: hist(lanes) _count = warps" "$(num "$MDIR/page" gputrace_wlanes_count)" "$warps"
check "page: hist(lanes) _sum = 32 x warps" "$(num "$MDIR/page" gputrace_wlanes_sum)" $((32 * warps))
check "page: entry hist(tid % 8) _count = threads" "$(num "$MDIR/page" gputrace_tmod_count)" $threads
check "page: entry hist(tid % 8) _sum = threads / 8 x 28" "$(num "$MDIR/page" gputrace_tmod_sum)" $((threads / 8 * 28))
# tid % 3 == 0: 86 threads a block, 0 + 3 + ... + 255 = 3 x 85 x 86 / 2
check "page: filtered hist _count" "$(num "$MDIR/page" gputrace_tf_count)" $((ITERS * blocks * 86))
check "page: filtered hist _sum" "$(num "$MDIR/page" gputrace_tf_sum)" $((ITERS * blocks * 10965))
check "page: per-kernel hist _count" "$(total "$MDIR/page" 'gputrace_pk_count{')" $threads
check "page: per-kernel hist _sum = threads / 4 x 6" "$(total "$MDIR/page" 'gputrace_pk_sum{')" $((threads / 4 * 6))
check "page: keyed hist _sum, even blocks" "$(sed -n 's/^gputrace_bk_sum{key="0"} //p' "$MDIR/page")" $((ITERS * blocks / 2 * 32640))
check "page: keyed hist _sum, odd blocks" "$(sed -n 's/^gputrace_bk_sum{key="1"} //p' "$MDIR/page")" $((ITERS * blocks / 2 * 32640))
check "page: keyed hist _count, odd blocks" "$(sed -n 's/^gputrace_bk_count{key="1"} //p' "$MDIR/page")" $((threads / 2))
check "page: lhist _count" "$(num "$MDIR/page" gputrace_l_count)" $threads
check "page: lhist _sum = blocks x (0 + ... + 255)" "$(num "$MDIR/page" gputrace_l_sum)" $((ITERS * blocks * 32640))

: >"$MDIR/go"
wait "$MPID"
check "gputrace exit status" $? 0
check "exit dump @warps = page" "$(sed -n 's/^@warps: //p' "$MDIR/gpu.out")" "$warps"
check "exit dump @runs = page" "$(sed -n 's/^@runs: //p' "$MDIR/gpu.out")" $ITERS
if [ $nfail -ne 0 ]; then
	cat "$MDIR/page" "$MDIR/gpu.err"
	exit 1
fi
exit 0
