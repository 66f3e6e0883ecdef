#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 31): what a new user tripped on at the prompt.  The
# example `help` shows runs; `print @`+Tab completes the map (it gave
# `print @@`); `tracep`, `kpro`, `prof`+Tab complete the probe types;
# `uprobe:`+Tab goes on without a space, and a second Tab lists no
# builtins; attached, `uprobe:libc:mallo`+Tab offers libc's functions.
. "$(dirname "$0")/../progs/prompt_lib.sh"

drive <<'STEPS'
expect gputrace> 
send help
expect   interval:s:1 \{ @n\+\+; printf\("%d\\n", @n\); \}\r\n
expect gputrace> 
send interval:s:1 { @n++; printf("%d\n", @n); }
expect Attaching 1 probe \(id 1\)\.\.\.\r\n(gputrace> \r\x1b\[K)?1\r\n
key C-c
expect stopped probe 1
send BEGIN { @abc = 1; @abd = 2; }
expect gputrace> 
type print @a
key tab
sleep 0.3
type c
key enter
expect @abc: 1\r\n
expect gputrace> 
type tracep
key tab
expect oint:
key C-c
expect gputrace> 
type kpro
key tab
expect be:
key C-c
expect gputrace> 
type prof
key tab
expect ile:
key C-c
expect gputrace> 
type uprobe:
key tab
sleep 0.3
key tab
absent 0.5 (blockDim|printf|count)
key C-c
expect gputrace> 
send quit
exit 0
STEPS
grep -q 'print @@' "$T/log" && { echo "print @ completed to @@:"; cat "$T/log"; exit 1; }

start_target -n 100 -w func_a -k
drive <<STEPS
expect gputrace> 
send attach $wpid
expect attached to $wpid
type uprobe:libc:mallo
key tab
key tab
expect uprobe:libc:malloc .*uprobe:libc:malloc_usable_size
key C-c
expect gputrace> 
send quit
exit 0
STEPS
exit 0
