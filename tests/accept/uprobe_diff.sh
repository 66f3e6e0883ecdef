#!/bin/sh
# SPDX-License-Identifier: MIT
# Differential: uprobe programs that bpftrace 0.17 can express, run by
# bpftrace and by gputrace on a fresh workload each; stdout must be the
# same byte for byte, "Attaching N probes..." left out.  (Not in
# tests/diff/: those run without a workload.)  func is compared in
# uprobes only: bpftrace 0.17 gives the caller's name in uretprobes.
. "$(dirname "$0")/../progs/uprobe_lib.sh"

BPFTRACE=${BPFTRACE:-bpftrace}
if ! timeout 10 "$BPFTRACE" -e 'BEGIN { exit(); }' >/dev/null 2>&1; then
	echo "$BPFTRACE is not runnable here"
	exit 77
fi

DONE="uprobe:$BIN:gt_done { exit(); }"
failed=0

# case NAME WAIT PROG
case_() {
	trace "$BPFTRACE" "$2,gt_done" 2 "$3 $DONE"
	brc=$?
	mv "$T/out" "$T/bpftrace"
	trace "$GT" "$2,gt_done" 2 "$3 $DONE"
	verdict "$1" "$brc" $?
}

case_ args add10 "uprobe:$BIN:add10 {
	printf(\"%d %d %d %d %d %d %s\n\", arg0, arg1, arg2, arg3, arg4, arg5, func);
	@s = stats(arg0 + arg5); @h = hist(arg4);
}"
case_ retval func_b,add10 "uretprobe:$BIN:func_b { @[retval] = sum(retval + 1); }
uretprobe:$BIN:add10 { @sum = sum(retval); @l = lhist(retval, 0, 100, 10); }"
case_ wildcard func_a,func_b,func_c "uprobe:$BIN:func_* {
	@[func] = count(); @p[probe] = count(); @a = sum(arg0);
}"
case_ cxx _ZN6gtdemo5twiceEi,_ZN6gtdemo7Counter4bumpEi "
uprobe:$LIB:_ZN6gtdemo5twiceEi { printf(\"%s %d\n\", func, arg0); }
uprobe:$LIB:_ZN6gtdemo7Counter4bumpEi { @[func] = sum(arg1); }"
# aliases, a quoted name and a probe by address (named in decimal)
case_ alias func_a,func_b,add10 "u:$BIN:func_b { @[probe] = count(); }
ur:$BIN:add10 { @r[probe] = sum(retval); }
uprobe:$BIN:\"func_a\" { printf(\"%s %s\n\", probe, func); }"
ADDR=$(nm "$BIN" | sed -n 's/^0*\([0-9a-f]*\) T func_c$/\1/p')
case_ address func_c "uprobe:$BIN:0x$ADDR { printf(\"%s %s %d\n\", probe, func, arg0); }"
# several probes on one function run in the order they are written
case_ order func_a "uprobe:$BIN:func_a { printf(\"first %d\n\", arg0); }
uprobe:$BIN:func_a { printf(\"second\n\"); }
u:$BIN:func_a { printf(\"third\n\"); }"
# a relative path stays as written, in probe names and in -l
GT=$(cd "$(dirname "$GT")" && pwd)/$(basename "$GT")
cd "$PROGS" || exit 1
case_ relpath func_a,func_b,func_c "uprobe:./uprobe_target:func_* { @[probe] = count(); }"
"$BPFTRACE" -l 'uprobe:./uprobe_target:func_*' >"$T/bpftrace" 2>/dev/null
"$GT" -l 'uprobe:./uprobe_target:func_*' >"$T/out" 2>"$T/err"
if ! cmp -s "$T/bpftrace" "$T/out"; then
	echo "FAIL list-relpath"
	diff -u --label bpftrace --label gputrace "$T/bpftrace" "$T/out"
	failed=1
else
	echo "ok list-relpath"
fi
exit $failed
