#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: probes in a shared library (libgtdemo.so), C++ functions
# named by their demangled names (with or without the parameter list)
# or mangled ones, wildcards over demangled names, func demangled.
. "$(dirname "$0")/../progs/uprobe_lib.sh"

W=_ZN6gtdemo7Counter4bumpEi,_ZN6gtdemo5twiceEd,_ZN6gtdemo5twiceEi,_ZN6gtdemo5scaleIiEET_S1_,gt_done
trace "$GT" "$W" 2 "
uprobe:$LIB:gtdemo::Counter::bump { printf(\"%s %d\n\", func, arg1); }
uprobe:$LIB:gtdemo::* { @[func] = count(); }
uretprobe:$LIB:_ZN6gtdemo5twiceEi { @twice = sum(retval); }
uprobe:$BIN:gt_done { exit(); }" || { echo "gputrace failed:"; cat "$T/err"; exit 1; }
want "gtdemo::Counter::bump(int) 1
gtdemo::Counter::bump(int) 2


@[gtdemo::Counter::bump(int)]: 2
@[gtdemo::twice(double)]: 2
@[gtdemo::twice(int)]: 2
@[int gtdemo::scale<int>(int)]: 2
@twice: 2"

# an overloaded base name is ambiguous
timeout 10 "$GT" --dry-run -e "uprobe:$LIB:gtdemo::twice { }" >"$T/out" 2>"$T/err"
if [ $? -ne 1 ] || ! grep -q "names several functions" "$T/err"; then
	echo "gtdemo::twice should be ambiguous:"
	cat "$T/err"
	exit 1
fi
exit 0
