# SPDX-License-Identifier: MIT
# Sourced by tests/accept/prompt_*.sh: the uprobe setup (GT, PROGS, T,
# skips without root or uprobes), python3 for the pseudo-terminal
# driver, and
#
#   drive [GTOPT...] < STEPS
#	run gputrace GTOPT... on a pseudo-terminal and play STEPS
#	(tests/progs/pty_drive.py); HOME and XDG_STATE_HOME point into $T,
#	the transcript is in $T/log; fails the test (exit 1) showing it;
#   start_target ARGS...
#	the uprobe target in the background, its pid in $wpid.
. "$(dirname "$0")/../progs/uprobe_lib.sh"

command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
DRIVE="$(cd "$(dirname "$0")/../progs" && pwd)/pty_drive.py"

drive() {
	HOME=$T/home XDG_STATE_HOME= python3 "$DRIVE" -t 15 -l "$T/log" -- \
		"$GT" "$@" || {
		echo "--- transcript ---"
		cat "$T/log"
		exit 1
	}
}

# start_target ARGS...: the uprobe target ($BIN ARGS) in the background,
# its pid in $wpid, killed at exit
start_target() {
	"$BIN" "$@" 2>"$T/werr" &
	wpid=$!
	trap 'kill $wpid 2>/dev/null; rm -rf "$T"' EXIT
}
