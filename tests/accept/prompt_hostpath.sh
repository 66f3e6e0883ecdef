#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: a prompt line that brings the agent in (a gpu: clause) runs
# its cuda: clauses in the agent, as -p does (docs/hostpath.md), without
# a GPU (the fake driver of tests/accept/agent_attach.sh: 8 warps a
# launch).  The program is paused around the line's life, so the counts
# are exact: @w = 8 x the launches made, @l (cuda:launch in the agent) =
# those launches, @k[kernel] names them; -v says where each clause runs;
# `clear @k` and `clear @w` empty the agent's part too (the prompt's
# `clear` cleared only the kernel's before), `detach`, `quit` with
# status 0; the program goes on and every launch it made succeeded.  Before, such a line put its uprobes on
# the driver's entry points, where the agent's hooks then found no room
# and the line failed.
. tests/progs/agent_lib.sh

[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
[ -f "$(dirname "$AGENT")/libZydis.so.4.0" ] || { echo "no libZydis next to the agent"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
DRIVE="$(pwd)/tests/progs/pty_drive.py"
. tests/progs/attach_prog.sh

# in the agent, then (GPUTRACE_CUDA_UPROBES=1) as kernel uprobes on the
# agent's wrappers: the same counts
for up in 0 1; do
	if [ $up = 0 ]; then where='cuda:launch@cuLaunchKernel runs in the agent'
	else where='attached cuda:launch'; fi
	pause_prog
	before=$PAUSED_AT
	GPUTRACE_CUDA_UPROBES=$up HOME=$T/home XDG_STATE_HOME= TMPDIR=$T python3 "$DRIVE" -t 20 -l "$T/log" -- \
		"$GT" -v <<STEPS || { cat "$T/log"; fail "the prompt session"; }
expect gputrace> 
send attach $P
expect attached to $P
send gpu:warp:vadd { @w = count(); } cuda:launch { @l = count(); @k[kernel] = count(); }
expect $where
expect agent attached to pid $P:
shell kill -USR2 $P
sleep 1
shell sh $PWD/tests/progs/pause_prog.sh $P $T/prog.out >/dev/null
send print @k
expect @k\\[vadd\\]: [1-9]
send clear @k
send print @k
absent 0.5 @k\\[
send print @w
expect @w: [1-9]
send clear @w
send print @w
expect @w: 0\r\n
send detach
expect detached from $P
send quit
exit 0
STEPS
	after=$(awk '$1 == "paused" { n = $3 } END { print n }' "$T/prog.out")
	runs=$((after - before))
	[ "$runs" -gt 100 ] || { cat "$T/log"; fail "too few launches: $runs"; }
	# printed before `clear @w`, which empties the device's part: 0 after
	w=$(sed -n 's/^@w: \([0-9]*\).*/\1/p' "$T/log" | head -1)
	[ "$(sed -n 's/^@w: \([0-9]*\).*/\1/p' "$T/log" | tail -1)" = 0 ] ||
		{ cat "$T/log"; fail "@w after clear"; }
	l=$(sed -n 's/^@l: \([0-9]*\).*/\1/p' "$T/log" | tail -1)
	[ "$w" = $((8 * runs)) ] || { cat "$T/log"; fail "@w $w != 8 x $runs launches"; }
	[ "$l" = "$runs" ] || { cat "$T/log"; fail "@l $l for $runs launches"; }
	grep -q "^@k\[vadd\]: $runs" "$T/log" || { cat "$T/log"; fail "@k[vadd] is not $runs"; }
	# `clear @k` emptied the agent's part too: not printed at the end
	[ "$(grep -c '^@k\[' "$T/log")" = 1 ] || { cat "$T/log"; fail "@k after clear"; }
	grep -q "cannot hook" "$T/log" && { cat "$T/log"; fail "the agent's hooks failed"; }
	kill -USR2 $P
done
prog_end
echo "prompt: a gpu: line's cuda: clauses in the agent and as uprobes, exact counts"
