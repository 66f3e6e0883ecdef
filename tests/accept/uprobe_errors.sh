#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: uprobe errors name the bad part and point at it (the caret
# under BIN or FUNC, or at the builtin a probe type lacks).
. "$(dirname "$0")/../progs/uprobe_lib.sh"

# check PROG MESSAGE CARET-COLUMN
check() {
	timeout 10 "$GT" --dry-run -e "$1" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -ne 1 ] || ! grep -qF -- "stdin:1:$3: error: $2" "$T/err"; then
		echo "'$1': status $rc, want 1 and 'stdin:1:$3: error: $2':"
		cat "$T/err"
		exit 1
	fi
}
n=$((${#BIN} + 9))	# column of FUNC in "uprobe:BIN:FUNC"
check "uprobe:$BIN:gt_nope { }" "no function 'gt_nope' in $BIN" "$n"
check "uprobe:libgt_nope:f { }" "cannot find library 'libgt_nope'" 8
check "uprobe:$BIN:gt_nope* { }" "no probe matches" 1
check "uprobe:$BIN:add10 { @ = retval; }" "builtin 'retval'" "$((n + 12))"
check "uretprobe:$BIN:add10 { @ = arg0; }" "builtin 'arg0'" "$((n + 15))"

exit 0
