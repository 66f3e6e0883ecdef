#!/bin/sh
# SPDX-License-Identifier: MIT
# Differential, language features that read user memory: str(), buf()
# and %r, casts and '*', C structs with '->', '.', arrays and indexing,
# join(), strncmp() of read strings.  bpftrace 0.17 and gputrace each
# trace a fresh tests/progs/lang_target; stdout must be the same byte
# for byte ("Attaching N probes..." left out).
. "$(dirname "$0")/../progs/probe_lib.sh"
probe_setup lang lang_target
BIN=$PROGS/lang_target

BPFTRACE=${BPFTRACE:-bpftrace}
if ! timeout 10 "$BPFTRACE" -e 'BEGIN { exit(); }' >/dev/null 2>&1; then
	echo "$BPFTRACE is not runnable here"
	exit 77
fi

CFG='struct cfg { int a; long b; char name[8]; int arr[4];
	struct cfg *next; unsigned char small; short neg; }'
DONE="uprobe:$BIN:lt_done { exit(); }"
failed=0

# run TRACER WAIT PROG: a fresh workload, its output in $T/out
run() {
	"$BIN" -w "$2,lt_done" -k 2>"$T/werr" &
	wpid=$!
	timeout -k 2 10 "$1" -e "$3 $DONE" </dev/null >"$T/raw" 2>"$T/err"
	rc=$?
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	sed -E '/^Attach(ing|ed) [0-9]+ probes?(\.\.\.)?$/d' "$T/raw" >"$T/out"
	return "$rc"
}

# case NAME WAIT PROG
case_() {
	run "$BPFTRACE" "$2" "$3"
	brc=$?
	mv "$T/out" "$T/bpftrace"
	run "$GT" "$2" "$3"
	verdict "$1" "$brc" $?
}

case_ str lt_str "uprobe:$BIN:lt_str { printf(\"[%s] [%s] %d\n\", str(arg0), str(arg0, 4), arg1); }"
case_ str_len lt_str "uprobe:$BIN:lt_str { printf(\"[%s]\n\", str(arg0, arg1)); }"
case_ str_keys lt_str "uprobe:$BIN:lt_str { @[str(arg0)] = sum(arg1); @last = str(arg0, 8); }"
case_ str_cmp lt_str "uprobe:$BIN:lt_str { \$s = str(arg0); printf(\"%d %d %d\n\", strncmp(\$s, \"hello\", 5), strncmp(\$s, \"help\", 4), \$s == \"hello world\"); }"
case_ buf lt_buf "uprobe:$BIN:lt_buf { printf(\"%r|%r|%r\n\", buf(arg0, arg1), buf(arg0, 2), buf(arg0, 0)); @b = buf(arg0, 5); }"
case_ deref lt_buf "uprobe:$BIN:lt_buf { printf(\"%d %d %d %d\n\", *(uint8 *)arg0, *(int8 *)(arg0 + 5), *(uint16 *)arg0, (uint8)*(int32 *)(arg0 + 4)); }"
case_ ptr_arith lt_buf "uprobe:$BIN:lt_buf { \$p = (uint8 *)arg0; printf(\"%d %d %d\n\", *(\$p + 1), \$p[6], *((uint16 *)\$p + 1)); }"
case_ struct lt_cfg "$CFG uprobe:$BIN:lt_cfg { \$c = (struct cfg *)arg0; printf(\"%d %d %s %d %d %d\n\", \$c->a, \$c->b, \$c->name, \$c->arr[3], \$c->small, \$c->neg); }"
case_ struct_next lt_cfg "$CFG uprobe:$BIN:lt_cfg { \$n = ((struct cfg *)arg0)->next; printf(\"%d %d %s %d %d\n\", \$n->a, \$n->b, \$n->name, \$n->arr[0], \$n->neg); @[\$n->name] = count(); }"
case_ struct_dot lt_cfg "$CFG uprobe:$BIN:lt_cfg { \$c = (struct cfg *)arg0; printf(\"%d %d %d\n\", (*\$c).a, (*\$c).arr[1], sizeof(*\$c)); }"
case_ struct_loop lt_cfg "$CFG uprobe:$BIN:lt_cfg { \$p = (int32 *)(arg0 + 24); \$i = 0; \$s = 0; while (\$i < 4) { \$s += *(\$p + \$i); \$i++; } print(\$s); print(((struct cfg *)arg0)->arr[2]); }"
case_ join lt_argv "uprobe:$BIN:lt_argv { join(arg0); join(arg0, \",\"); }"
exit $failed
