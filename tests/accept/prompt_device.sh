#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: gpu: clauses at the prompt, without a GPU (the fake driver
# of tests/accept/agent_attach.sh, which runs a warp probe counting into
# map 0: 8 warps a launch).  `attach PID`, a gpu:warp clause (the agent
# is injected), `print @w` a positive multiple of 8, a second gpu: clause
# refused while the first runs, `remove` (the agent detaches), a new
# gpu: clause (attached again), then cuda:complete (the fake CUPTI:
# @c counts kernel runs; a gpu: clause is refused while it runs),
# `detach`, `quit` with status 0; the program goes on and every launch
# it made succeeded.
. tests/progs/agent_lib.sh

[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
[ -f "$(dirname "$AGENT")/libZydis.so.4.0" ] || { echo "no libZydis next to the agent"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
DRIVE="$(pwd)/tests/progs/pty_drive.py"

$CC $W -shared -fPIC -I"${CUDA_HOME:-/usr/local/cuda}/include" \
	-Wl,-soname,libcupti.so.13 tests/accept/agent_fakecupti.c \
	-o "$T/libcupti.so.13" -lpthread || fail "building the fake libcupti"
. tests/progs/attach_prog.sh

HOME=$T/home XDG_STATE_HOME= TMPDIR=$T python3 "$DRIVE" -t 20 -l "$T/log" -- \
	"$GT" -v <<STEPS || { cat "$T/log"; fail "the prompt session"; }
expect gputrace> 
send gpu:warp:vadd { @w = count(); }
expect need a target: attach PID first
send attach $P
expect attached to $P
send gpu:warp:vadd { @w = count(); }
expect agent attached to pid $P:
sleep 0.5
send print @w
expect @w: [1-9][0-9]*\r\n
send gpu:kernel:vadd { @k = count(); }
expect running already: remove them first
send remove 1
expect gputrace> 
send gpu:warp:vadd { @v = count(); }
expect agent attached to pid $P:
sleep 0.5
send print @v
expect @v: [1-9][0-9]*\r\n
send remove 2
expect gputrace> 
send cuda:complete:vadd { @c = count(); @d = min(duration); }
expect agent attached to pid $P:
sleep 0.5
send print @c
expect @c: [1-9][0-9]*\r\n
send print @d
expect @d: 1000\r\n
send gpu:warp:vadd { @x = count(); }
expect running already: remove them first
send detach
expect detached from $P
send quit
exit 0
STEPS
for m in w v; do
	n=$(sed -n "s/^@$m: \([0-9]*\).*/\1/p" "$T/log" | tail -1)
	[ -n "$n" ] && [ $((n % 8)) = 0 ] || { cat "$T/log"; fail "@$m = '$n', not 8 warps a launch"; }
done
prog_end
echo "prompt: gpu: clauses through the agent, @w and @v counted in whole launches"
