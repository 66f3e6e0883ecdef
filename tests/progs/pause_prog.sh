#!/bin/sh
# SPDX-License-Identifier: MIT
# pause_prog.sh PID OUT: pause tests/accept/agent_attachprog.c (SIGUSR1)
# and wait until it says so in its output OUT (up to 10 s); prints the
# launches it made so far.  Exit 1 when it does not pause.  Also a step
# of a pty_drive session (`shell`).
np=$(grep -c '^paused at' "$2")
kill -USR1 "$1"
i=0
while [ "$(grep -c '^paused at' "$2")" = "$np" ]; do
	i=$((i + 1))
	[ $i -gt 200 ] && exit 1
	sleep 0.05
done
awk '$1 == "paused" { n = $3 } END { print n }' "$2"
