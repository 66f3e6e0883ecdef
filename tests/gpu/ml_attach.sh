#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: -p on a running PyTorch training job (issue 36).
# tests/gpu/ml/train.py --loop trains (one step, then one Triton add
# gt_add_kernel, grid G x num_warps W, a step) until a stop file exists.
# 20 times: gputrace -p attaches with cuda:launch, cuda:complete and
# gpu:warp on the Triton kernel for 2 seconds, then Ctrl-C detaches.
# The Triton kernel is loaded before the first attach: the agent finds its
# PTX in the cubin Triton keeps in memory (docs/attach.md, "Cubins in
# memory").
# Checks:
#   - -l 'gpu:*' -p lists gt_add_kernel as instrumentable (from memory)
#   - cycle 1 (with -v): the PTX came "from a cubin in memory"; the scan's
#     time is printed (INFO line)
#   - every cycle: gputrace exits 0; the Triton kernel launched; gpu:warp
#     = its launches seen by cuda:launch x G x W (exact: the agent sees
#     both); cuda:complete timed kernel runs
#   - the job never dies, and after the 20 cycles ends normally; its
#     losses are bit-identical to a native run (its model starts again
#     from the seed every 100 steps: a native run of 100 steps has every
#     loss it prints)
# Skips (77) where python3 cannot import torch and triton, torch sees no
# GPU, or this user may not ptrace the job.
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/ml/lib.sh
need_py torch triton
CYCLES=${ML_CYCLES:-20}
$PY $ML/train.py --loop "$T/stop" --ready "$T/ready" >"$T/job.prog" 2>"$T/job.err" &
P=$!
trap 'kill -KILL $P 2>/dev/null; ml_done' EXIT
i=0
while [ ! -f "$T/ready" ]; do
	i=$((i + 1))
	kill -0 $P 2>/dev/null || { cat "$T/job.err"; echo "FAIL the job did not start"; exit 1; }
	[ $i -gt 1200 ] && { echo "FAIL the job is not ready after 120 s"; exit 1; }
	sleep 0.1
done
G=$($PY -c "import triton; print(triton.cdiv(1000000, 1024))")
W=4
PROBES='cuda:launch:gt_add_kernel { @l = count(); }
cuda:complete { @c = count(); }
gpu:warp:gt_add_kernel { @w = count(); }'
"$GT" -l 'gpu:*' -p $P >"$T/list" 2>&1
if grep -qx 'gpu:warp:gt_add_kernel' "$T/list"; then
	ok "-l -p: gt_add_kernel listed as instrumentable"
else
	bad "-l -p" "$(grep gt_add_kernel "$T/list" | head -3 | tr '\n' ' ')"
fi
n=1
while [ $n -le "$CYCLES" ]; do
	# 2 s from the moment every probe is in place and the agent in
	# (starting on a torch process takes seconds: a SIGINT before the
	# probes are in ends gputrace as it ends bpftrace, with 130)
	__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 "$GT" -v -q -f json -o "$T/p$n.out" \
		-p $P -e "$PROBES" >/dev/null 2>"$T/p$n.err" &
	g=$!
	i=0
	while ! grep -q '^__BPFTRACE_NOTIFY_PROBES_ATTACHED$' "$T/p$n.err" &&
	      kill -0 $g 2>/dev/null && [ $i -lt 600 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	echo "    cycle $n: attached after $((i / 10)).$((i % 10)) s;" \
		"$(sed -n 's/.*agent attached to pid [0-9]*: //p' "$T/p$n.err")"
	if [ $i -ge 600 ]; then
		# where the job's main thread and gputrace are
		echo "    job main thread: $(cat /proc/$P/syscall 2>&1) wchan $(cat /proc/$P/wchan 2>&1)"
		echo "    gputrace: $(cat /proc/$g/syscall 2>&1) wchan $(cat /proc/$g/wchan 2>&1)"
		grep -v 'info:' "$T/p$n.err" | tail -5 | sed 's/^/    /'
	fi
	sleep 2
	kill -INT $g 2>/dev/null
	t0=$(date +%s%N)
	# a detach that hangs: KILL after 30 s (the job must survive that too)
	( sleep 30; kill -KILL $g 2>/dev/null ) &
	wd=$!
	wait $g
	rc=$?
	kill $wd 2>/dev/null
	echo "    cycle $n: detached in $((($(date +%s%N) - t0) / 1000000)) ms"
	l=$(val p$n @l) c=$(val p$n @c) w=$(val p$n @w)
	if [ $rc -ne 0 ]; then
		bad "cycle $n: gputrace status" "$rc: $(head -3 "$T/p$n.err" | tr '\n' ' ')"
	elif [ "${l:-0}" = 0 ]; then
		bad "cycle $n: cuda:launch gt_add_kernel" "no launch seen: $(head -3 "$T/p$n.err" | tr '\n' ' ')"
	elif [ "${w:-0}" = 0 ]; then
		bad "cycle $n: gpu:warp" "0 for $l launches: $(why_zero p$n gt_add_kernel)"
	else
		expect_eq "cycle $n: gpu:warp = $l launches x $G x $W" "$w" $((l * G * W))
		[ "${c:-0}" -gt 0 ] && ok "cycle $n: cuda:complete ($c runs)" ||
			bad "cycle $n: cuda:complete" "no kernel run timed"
	fi
	if [ $n = 1 ]; then
		grep -h 'memory scan' "$T/p1.err" | sed 's/^/INFO /'
		grep -q 'gt_add_kernel: PTX from a cubin in memory' "$T/p1.err" &&
			ok "cycle 1: PTX from a cubin in memory" ||
			bad "cycle 1: -v" "no 'PTX from a cubin in memory': $(why_zero p1 gt_add_kernel)"
	fi
	kill -0 $P 2>/dev/null || { bad "cycle $n" "the job died"; break; }
	n=$((n + 1))
done
touch "$T/stop"
i=0
while kill -0 $P 2>/dev/null && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done
kill -0 $P 2>/dev/null && { bad "the job" "still running 60 s after its stop file"; kill -KILL $P; }
wait $P
expect_eq "the job's exit status after $CYCLES attaches" $? 0
# the job's model starts again every PERIOD steps: each of its losses is
# the native run's loss of that step number, bit for bit
PERIOD=100
steps=$(grep -c '^loss ' "$T/job.prog")
$PY $ML/train.py --steps $PERIOD --replays 0 --adds 0 >"$T/native.prog" 2>&1 ||
	bad "native run" "$(tail -3 "$T/native.prog")"
differ=$(awk 'NR == FNR { if ($1 == "loss") want[$2] = $3; next }
	$1 == "loss" && want[$2] != $3 { n++ } END { print n + 0 }' \
	"$T/native.prog" "$T/job.prog")
if [ "$steps" -gt $PERIOD ] && [ "$differ" = 0 ] &&
   [ "$(grep -c '^loss ' "$T/native.prog")" = $PERIOD ]; then
	ok "losses of $steps steps ($((steps / PERIOD)) restarts) bit-identical to a native run"
else
	bad "losses" "$differ of $steps differ from the native run's"
fi
[ "$nfail" -eq 0 ]
