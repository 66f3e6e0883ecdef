#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: gpu:sample at the prompt, without a GPU: the fake driver of
# tests/accept/prompt_device.sh and the fake libcupti of
# tests/accept/gpu_sample.sh (each vadd run: 3 samples of
# long_scoreboard, 2 of math_pipe_throttle, 1 of selected).  `attach
# PID`, a gpu:sample clause (the agent is injected and turns PC sampling
# on at the next launch), `print @s`: the three stall reasons in the
# ratio 3:2:1; `remove` (the agent detaches), `quit` with status 0; then
# gputrace -p on the same process (the agent attached again; samples by
# stall and by the kernel's name, which the new tracer learns); the
# program goes on and every launch it made succeeded.
. tests/progs/agent_lib.sh

[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
[ -r /sys/bus/event_source/devices/uprobe/type ] ||
	{ echo "no uprobe PMU in this kernel"; exit 77; }
[ -f "$(dirname "$AGENT")/libZydis.so.4.0" ] || { echo "no libZydis next to the agent"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
DRIVE="$(pwd)/tests/progs/pty_drive.py"

. tests/progs/attach_prog.sh
. tests/progs/cupti_lib.sh

HOME=$T/home XDG_STATE_HOME= TMPDIR=$T python3 "$DRIVE" -t 20 -l "$T/log" -- \
	"$GT" -v <<STEPS || { cat "$T/log"; fail "the prompt session"; }
expect gputrace> 
send gpu:sample:vadd { @s[stall] = sum(samples); }
expect needs a target
send attach $P
expect attached to $P
send gpu:sample:vadd { @s[stall] = sum(samples); }
expect agent attached to pid $P:
sleep 1
send print @s
expect @s\\[long_scoreboard\\]: [1-9][0-9]*\r\n
send remove 1
expect gputrace> 
send detach
expect detached from $P
send quit
exit 0
STEPS
ls=$(sed -n 's/^@s\[long_scoreboard\]: \([0-9]*\).*/\1/p' "$T/log" | tail -1)
ma=$(sed -n 's/^@s\[math_pipe_throttle\]: \([0-9]*\).*/\1/p' "$T/log" | tail -1)
se=$(sed -n 's/^@s\[selected\]: \([0-9]*\).*/\1/p' "$T/log" | tail -1)
[ -n "$ls" ] && [ -n "$ma" ] && [ -n "$se" ] && [ "$se" -gt 0 ] &&
	[ $((ls)) = $((3 * se)) ] && [ $((ma)) = $((2 * se)) ] ||
	{ cat "$T/log"; fail "@s: $ls $ma $se, not 3:2:1 whole runs"; }
# -p, attaching again to the agent the prompt left (sampling on again)
timeout -k 2 20 "$GT" -q -p $P -e 'gpu:sample:vadd { @s[stall] = sum(samples); @k[kernel] = count(); }
interval:ms:800 { exit(); }' >"$T/p.out" 2>"$T/p.err" ||
	{ cat "$T/p.out" "$T/p.err"; fail "gputrace -p"; }
se=$(sed -n 's/^@s\[selected\]: \([0-9]*\).*/\1/p' "$T/p.out")
ls=$(sed -n 's/^@s\[long_scoreboard\]: \([0-9]*\).*/\1/p' "$T/p.out")
[ -n "$se" ] && [ "$se" -gt 0 ] && [ $((ls)) = $((3 * se)) ] ||
	{ cat "$T/p.out" "$T/p.err"; fail "-p: @s $ls $se"; }
# the kernel by its name: the new tracer is told each name again
grep -q '^@k\[vadd\]: [1-9]' "$T/p.out" ||
	{ cat "$T/p.out" "$T/p.err"; fail "-p: no @k[vadd] (the kernel's name not sent to a second tracer)"; }
# each detach turned sampling off on the program's launching thread
grep -q "disabled on the agent's thread" "$T/prog.out" &&
	fail "PC sampling disabled on the agent's thread at a detach"
prog_end
echo "prompt: gpu:sample through the agent, $ls:$ma:$se"
