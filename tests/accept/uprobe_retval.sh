#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: uretprobe retval and func.  add10 returns 55 each round;
# func_a(r) returns r + 1.  func is the probed function (bpftrace 0.17
# gives the caller's name there: docs/uprobes.md).
. "$(dirname "$0")/../progs/uprobe_lib.sh"

trace "$GT" add10,func_a,gt_done 3 "
uretprobe:$BIN:add10 { @sum = sum(retval); }
uretprobe:$BIN:func_a { @r[func, retval] = count(); }
uprobe:$BIN:gt_done { exit(); }" || { echo "gputrace failed:"; cat "$T/err"; exit 1; }
want "

@r[func_a, 1]: 1
@r[func_a, 2]: 1
@r[func_a, 3]: 1
@sum: 165"
