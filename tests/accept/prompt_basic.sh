#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: the interactive prompt on a pseudo-terminal.  A BEGIN
# clause prints; a syntax error shows the caret and the session goes
# on; a clause over two lines; maps shared by later clauses; Ctrl-C
# stops interval printing and returns to the prompt; a device clause is
# refused; quit leaves with status 0 after the maps; the history file.
. "$(dirname "$0")/../progs/prompt_lib.sh"

drive <<'STEPS'
expect gputrace> 
send BEGIN { printf("hello %d\n", 6 * 7); @a = count(); }
expect Attaching 1 probe \(id 1\)\.\.\.\r\nhello 42\r\n
expect gputrace> 
send BEGIN { @x = 1 +; }
expect <prompt>:1:17: error: syntax error, unexpected ';'\r\nBEGIN \{ @x = 1 \+; \}\r\n                \^\r\n
expect gputrace> 
send BEGIN { @a = count();
expect \.\.\.> $
send   printf("second\n"); }
expect Attaching 1 probe \(id 2\)\.\.\.\r\nsecond\r\n
expect gputrace> 
send BEGIN { @a = hist(5); }
expect <prompt>:1:9: error: type mismatch for @a
expect gputrace> 
send print @a
expect @a: 2\r\n
expect gputrace> 
send interval:ms:50 { @t = @t + 1; printf("tick %d\n", @t); }
expect tick 2\r\n
expect tick 3\r\n
key C-c
expect stopped probe 3\r\ngputrace> 
absent 0.5 tick
send probes
expect   1  BEGIN.*  2  BEGIN.*gputrace> 
send gpu:kernel:vadd { @k = count(); }
expect gpu: probes need a target: attach PID first
expect gputrace> 
send nosuch
expect <prompt>:1:7: error: syntax error, unexpected end of file
expect gputrace> 
send quit
expect \r\n\r\n@a: 2\r\n@t: \d+\r\n
exit 0
STEPS
grep -q 'printf("second' "$T/home/.local/state/gputrace/history" || {
	echo "history file not written:"
	cat "$T/home/.local/state/gputrace/history"
	exit 1
}

# Ctrl-D leaves too, with status 0; XDG_STATE_HOME is honoured
XDG_STATE_HOME=$T/state HOME=$T/home python3 "$DRIVE" -t 15 -l "$T/log" \
	-- "$GT" <<'STEPS' || { cat "$T/log"; exit 1; }
expect gputrace> 
send END { printf("bye\n"); }
expect gputrace> 
key C-d
expect bye
exit 0
STEPS
grep -q 'END' "$T/state/gputrace/history" || { echo "no history in XDG_STATE_HOME"; exit 1; }
