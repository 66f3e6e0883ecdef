#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU: cuda:complete's CUPTI set-up (issue 32) on a real driver.  An
# empty kernel launched in a loop for 2 s (tests/gpu/launches.cu -b,
# which prints how many launches it made; one warm-up launch more):
#   queued read: every launch gives one record (@n = launches + 1) and
#     every record a queue time (queued > 0: CUPTI's latency timestamps,
#     turned on before CUDA starts because a clause reads queued)
#   queued not read: @n = launches + 1 again, no record lost, durations
#     > 0; -v says the activity buffers went out zeroed from the pool
#     (a CUPTI that refuses the attribute is reported, not failed)
# Prints PASS/FAIL per check; exit 0 when all pass, 1 otherwise, 77
# without nvcc.
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$(command -v nvcc || echo "$CUDA/bin/nvcc")}
[ -x "$NVCC" ] || { echo "no nvcc"; exit 77; }
[ -x "$GT" ] || { echo "no gputrace at $GT"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/complete_records.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; failed=1; }

"$NVCC" -O2 -arch=sm_90 -I"$CUDA/extras/CUPTI/include" -o "$T/launches" \
	tests/gpu/launches.cu -L"$CUDA/lib64/stubs" -lcuda 2>"$T/nvcc" ||
	{ echo "FAIL build:"; cat "$T/nvcc"; exit 1; }

# trace PROGRAM: gputrace -v -c on the loop; sets $want (launches + 1)
trace() {
	timeout -k 5 120 "$GT" -v -c "$T/launches -b 2" -e "$1" </dev/null \
		>"$T/out" 2>"$T/err" || { fail "gputrace status $?"; sed 's/^/    /' "$T/err"; return 1; }
	want=$(($(sed -n 's/^\([0-9][0-9]*\) launches in.*/\1/p' "$T/out") + 1))
}
val() { sed -n "s/^@$1: //p" "$T/out"; }

if trace 'cuda:complete { @n = count(); }
cuda:complete /queued > 0/ { @q = count(); }
cuda:complete /queued == 0/ { @z = count(); }'; then
	[ "$(val n)" = "$want" ] && pass "queued read: $want records for $want launches" ||
		fail "queued read: @n $(val n), launches $want"
	# a keyless count() that never fired prints 0, as in bpftrace
	z=$(val z)
	[ "$(val q)" = "$want" ] && [ "${z:-0}" = 0 ] &&
		pass "queued read: every record has a queue time" ||
		fail "queued read: queued > 0 in $(val q) records, 0 in $(val z) (latency timestamps)"
fi
if trace 'cuda:complete { @n = count(); }
cuda:complete /duration == 0/ { @d0 = count(); }'; then
	d0=$(val d0)
	[ "$(val n)" = "$want" ] && [ "${d0:-0}" = 0 ] &&
		pass "queued not read: $want records, every duration > 0" ||
		fail "queued not read: @n $(val n) of $want, $(val d0) of zero duration"
	grep -q 'kernel records lost' "$T/err" &&
		fail "records lost: $(grep 'kernel records lost' "$T/err")"
	if grep -q 'activity buffers, handed out zeroed from a pool' "$T/err"; then
		pass "activity buffers handed out zeroed from the pool"
	else
		echo "INFO $(grep 'activity buffers' "$T/err" || echo 'no buffer line from the agent')"
	fi
fi
exit $failed
