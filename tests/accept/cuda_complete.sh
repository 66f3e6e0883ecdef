#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: cuda:complete without a GPU.  The fake libcuda
# (agent_fakecuda.c) tells a fake libcupti (agent_fakecupti.c) of every
# kernel it runs; each run lasts 1000 ns after 250 ns in the queue.
# gputrace -c preloads the agent, which turns CUPTI's records into calls
# of gputrace_complete(), where the uprobe reads them: counts, names,
# durations, geometry and GLOBs are checked against the runs
# agent_hookprog makes (vadd 5 times plus 3 graph runs, uses_global
# once; 4 blocks of 64 threads each).  CUPTI's latency timestamps are on
# only for a clause that reads `queued`; the agent's activity buffers,
# reused, are all zeros when handed to CUPTI (the fake checks).  Needs
# root and the uprobe PMU.
. tests/progs/agent_lib.sh

[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
[ -r /sys/bus/event_source/devices/uprobe/type ] ||
	{ echo "no uprobe PMU in this kernel"; exit 77; }
. tests/progs/cupti_lib.sh

run 'cuda:complete { @n[kernel] = count(); @d[kernel] = sum(duration);
  @q = sum(queued); @t = sum(gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z);
  @s[stream] = count(); }
cuda:complete:vadd { @v = count(); }
cuda:complete:_Z11uses* { @m = count(); }
cuda:complete:nomatch* { @x[kernel] = count(); }'
# @x never fired: an empty keyed map prints an empty line, as in bpftrace
want "

@d[uses_global]: 1000
@d[vadd]: 8000
@m: 1
@n[uses_global]: 1
@n[vadd]: 8
@q: 2250
@s[7]: 9
@t: 2304
@v: 8
" "counts, names, durations, geometry, GLOBs"

# a clause reads `queued`: CUPTI's latency timestamps are on (they cost
# every launch, so only then)
grep -q 'fakecupti: latency timestamps on' "$T/err" ||
	{ cat "$T/err"; fail "latency timestamps off for a clause reading queued"; }
run 'cuda:complete { @d = sum(duration); }'
want "

@d: 9000" "durations without queued"
grep -q 'fakecupti: latency timestamps on' "$T/err" &&
	{ cat "$T/err"; fail "latency timestamps on with no clause reading queued"; }

# the probe fires on the thread that hands the records over, once each
run 'cuda:complete /duration != 1000 || queued != 250/ { @bad[kernel] = count(); }
cuda:complete { @runs = count(); }'
want "


@runs: 9" "every record's duration and queue time"
grep -q 'another CUPTI client' "$T/err" && fail "CUPTI reported held"

# another CUPTI client (torch.profiler, Nsight) holds the process: one
# line, nothing timed, the program runs as it would
FAKECUPTI_HELD=1 run 'cuda:complete { @runs = count(); }'
[ "$(grep -c 'cuda:complete: another CUPTI client holds this process' "$T/err")" = 1 ] ||
	{ cat "$T/err"; fail "no line for a CUPTI held by another client"; }
grep -qx '@runs: 0' "$T/maps" || { cat "$T/maps"; fail "records from a held CUPTI"; }
[ "$(grep -c '^cuLaunch.*: original$' "$T/out")" = 6 ] ||
	{ cat "$T/out"; fail "the program's launches changed under a held CUPTI"; }
grep -q 'no cuda:complete probe could fire\|no gpu: probe' "$T/err" &&
	{ cat "$T/err"; fail "a warning about probes the program does not have"; }
# a target without CUDA: the warning names the probes the program has
LD_LIBRARY_PATH=$T GPUTRACE_AGENT_LIB=$AGENT timeout -k 2 30 "$GT" -q -c true \
	-e 'cuda:complete { @runs = count(); }' >"$T/out" 2>"$T/err" </dev/null ||
	{ cat "$T/err"; fail "gputrace -c true"; }
grep -q 'WARNING: the target launched no CUDA kernel .*: no cuda:complete probe could fire' "$T/err" &&
	! grep -q 'gpu:' "$T/err" || { cat "$T/err"; fail "the warning without CUDA"; }

# a command that starts two CUDA processes (a launcher, as torchrun):
# each has the agent, and each one's runs are counted under its pid
LD_LIBRARY_PATH=$T HOOKPROG_GRAPH=1 GPUTRACE_AGENT_LIB=$AGENT \
	timeout -k 2 30 "$GT" -q -c "sh -c '$T/prog $T/vadd.fatbin $VADD $GLOBAL >/dev/null; $T/prog $T/vadd.fatbin $VADD $GLOBAL >/dev/null'" \
	-e 'cuda:complete { @runs = count(); @p[pid] = count(); }' >"$T/out" 2>"$T/err" </dev/null ||
	{ cat "$T/err"; fail "gputrace -c sh -c 'prog; prog'"; }
grep -qx '@runs: 18' "$T/out" && [ "$(grep -c '^@p\[[0-9]*\]: 9$' "$T/out")" = 2 ] &&
	! grep -q 'cannot fire' "$T/err" ||
	{ cat "$T/out" "$T/err"; fail "two processes of one command"; }
exit 0
