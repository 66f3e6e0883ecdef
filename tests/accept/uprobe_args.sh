#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: uprobe arguments.  add10(1, ..., 10) is called once per
# round: arg0..arg5 come from registers, arg6..arg9 from the stack; func
# is the probed function; gt_done ends the trace.
. "$(dirname "$0")/../progs/uprobe_lib.sh"

trace "$GT" add10,gt_done 3 "
uprobe:$BIN:add10 {
	printf(\"%d %d %d %d %d %d %d %d %d %d %s\n\", arg0, arg1, arg2, arg3,
	       arg4, arg5, arg6, arg7, arg8, arg9, func);
}
uprobe:$BIN:gt_done { exit(); }" || { echo "gputrace failed:"; cat "$T/err"; exit 1; }
want "1 2 3 4 5 6 7 8 9 10 add10
1 2 3 4 5 6 7 8 9 10 add10
1 2 3 4 5 6 7 8 9 10 add10

"
