#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: -l lists a binary's functions as probes, demangled, sorted
# and unique (skipped while -l is not wired up).
. "$(dirname "$0")/../progs/uprobe_lib.sh"

if "$GT" -l 'uprobe:x:y' 2>&1 | grep -q "not available"; then
	echo "-l is not available yet"
	exit 77
fi
timeout 10 "$GT" -l "uprobe:$LIB:gtdemo::*" >"$T/out" 2>"$T/err" ||
	{ echo "gputrace -l failed:"; cat "$T/err"; exit 1; }
want "uprobe:$LIB:gtdemo::Counter::bump(int)
uprobe:$LIB:gtdemo::twice(double)
uprobe:$LIB:gtdemo::twice(int)
uprobe:$LIB:int gtdemo::scale<int>(int)"
