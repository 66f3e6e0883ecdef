#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: the prompt attached to a running program.  `attach PID`,
# completion of the target's functions, a uprobe clause counting every
# call, `print @m`, `probes`, `remove`, `detach`, `quit` with status 0;
# then `gputrace -p PID` with no program: attached from the start.
. "$(dirname "$0")/../progs/prompt_lib.sh"

start_target -n 3 -w func_a -k

drive <<STEPS
expect gputrace> 
send attach $wpid
expect attached to $wpid
type uprobe:$BIN:func_
key tab
key tab
expect func_b.*func_c
key C-c
expect gputrace> 
send uprobe:$BIN:func_a { @m = count(); }
expect Attaching 1 probe \(id 1\)
sleep 1.5
send print @m
expect @m: 3\r\n
send probes
expect   1  uprobe:$BIN:func_a
send remove 1
expect gputrace> 
send remove 1
expect no probe 1
send probes
expect no probes
send detach
expect detached from $wpid
send quit
expect @m: 3\r\n
exit 0
STEPS
kill $wpid 2>/dev/null
wait $wpid 2>/dev/null

"$BIN" -n 2 -w func_b -k 2>"$T/werr" &
wpid=$!
drive -p $wpid <<STEPS
expect attached to $wpid
expect gputrace> 
send uretprobe:$BIN:func_b { @r[retval] = count(); }
sleep 1.5
send print
expect @r\[0\]: 2\r\n@r\[2\]: 2\r\n
send quit
exit 0
STEPS
