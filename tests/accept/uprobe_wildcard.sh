#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: wildcards in the function name.  func_? expands to func_a,
# func_b and func_c, called 1, 2 and 3 times a round; `probe` is the
# expanded probe's text.
. "$(dirname "$0")/../progs/uprobe_lib.sh"

trace "$GT" func_a,func_b,func_c,gt_done 3 "
uprobe:$BIN:func_? { @[func] = count(); }
uprobe:$BIN:func_c* { @p[probe] = count(); }
uprobe:$BIN:gt_done { exit(); }" || { echo "gputrace failed:"; cat "$T/err"; exit 1; }
want "

@[func_a]: 3
@[func_b]: 6
@[func_c]: 9
@p[uprobe:$BIN:func_c]: 9"
