#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: gpu:sample without a GPU.  The fake libcuda
# (agent_fakecuda.c) tells the fake libcupti (agent_fakecupti.c) of
# every kernel it runs; while PC sampling is on, each run adds (at the
# default period, 2^20 cycles) 3 samples of long_scoreboard at PC 0x10
# and, at PC 0x20, 2 of math_pipe_throttle and 1 of selected; a period
# of 2^19 doubles them.  gputrace -c preloads the agent, which turns on
# PC sampling at the first module load or launch in the context and hands the samples
# to gputrace_sample(), where the uprobe reads them.  The hook program
# runs vadd 5 times plus 3 graph runs, uses_global once.  Also: the one
# line for another client holding PC sampling and for a GPU without it,
# the target running on; cuda:complete alongside; a full hardware
# buffer and dropped samples reported.  Needs root and the uprobe PMU.
. tests/progs/agent_lib.sh

[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
[ -r /sys/bus/event_source/devices/uprobe/type ] ||
	{ echo "no uprobe PMU in this kernel"; exit 77; }
. tests/progs/cupti_lib.sh

# 9 runs: vadd 8 x (3 + 2 + 1), uses_global 1 x (3 + 2 + 1)
run 'gpu:sample { @s[kernel, stall] = sum(samples); @pc[pc] = sum(samples);
  @g[gpu] = sum(samples); }
gpu:sample:vadd { @v = sum(samples); }
gpu:sample:_Z11uses* { @u = sum(samples); }
gpu:sample:nomatch* { @x[kernel] = count(); }'
want "

@g[0]: 54
@pc[16]: 27
@pc[32]: 27
@s[uses_global, selected]: 1
@s[uses_global, math_pipe_throttle]: 2
@s[uses_global, long_scoreboard]: 3
@s[vadd, selected]: 8
@s[vadd, math_pipe_throttle]: 16
@s[vadd, long_scoreboard]: 24
@u: 6
@v: 48
" "samples by kernel, stall reason, PC, GLOB"
grep -q . "$T/err" && { cat "$T/err"; fail "unexpected messages"; }

# the period reaches CUPTI: 2^19 cycles samples twice as often
run 'gpu:sample:vadd:19 { @v = sum(samples); }'
want "

@v: 96" "period 19"

# cuda:complete and gpu:sample in one process
run 'gpu:sample:vadd { @v = sum(samples); } cuda:complete:vadd { @n = count(); }'
want "

@n: 8
@v: 48" "with cuda:complete"

# refusals: one line, the target runs on (its 9 launches all read back)
for how in busy none; do
	FAKECUPTI_PCS=$how run 'gpu:sample { @v = sum(samples); }
cuda:complete { @n = count(); }'
	want "

@n: 9
" "FAKECUPTI_PCS=$how: no samples, the program ran"
	[ "$(grep -c . "$T/err")" -eq 1 ] || { cat "$T/err"; fail "$how: one line"; }
	grep -q "^read back" "$T/out" || fail "$how: the program did not finish"
done
grep -q '^gputrace: gpu:sample: GPU 0 or its driver has no PC sampling (CUPTI_ERROR_NOT_SUPPORTED): its kernels run unsampled$' "$T/err" ||
	{ cat "$T/err"; fail "no PC sampling: the line"; }
FAKECUPTI_PCS=busy run 'gpu:sample { @v = sum(samples); }'
grep -q '^gputrace: gpu:sample: CUPTI refused PC sampling on GPU 0 (CUPTI_ERROR_HARDWARE_BUSY): another profiler (torch.profiler, Nsight Systems or Compute, a second gputrace) may hold it; its kernels run unsampled$' "$T/err" ||
	{ cat "$T/err"; fail "busy: the line"; }
# a full hardware buffer: said once, what came is counted, drops reported
FAKECUPTI_PCS=full run 'gpu:sample:vadd { @v = sum(samples); }'
want "

@v: 48" "hardware buffer full"
printf '%s\n' "gputrace: gpu:sample: CUPTI's hardware buffer filled: samples were lost (a longer period, gpu:sample:GLOB:N, costs fewer)" \
	"gputrace: gpu:sample: 5 of 54 samples dropped by the hardware (a longer period costs fewer)" >"$T/want"
diff -u "$T/want" "$T/err" || fail "hardware buffer full: the lines"
exit 0
