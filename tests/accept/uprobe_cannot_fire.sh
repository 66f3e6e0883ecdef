#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 31): -p uprobes that cannot fire are attached with a
# warning, not in silence: the process is a kernel thread (no user
# memory), or it does not map the library (yet).  One that can fire says
# nothing.  Exit 0 pass, 1 fail, 77 skip.
. "$(dirname "$0")/../progs/uprobe_lib.sh"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# a kernel thread: empty maps, no exe (none visible in some containers)
kt=
for d in /proc/[0-9]*; do
	[ -r "$d/maps" ] && [ ! -s "$d/maps" ] && ! readlink "$d/exe" >/dev/null 2>&1 &&
		{ kt=${d#/proc/}; break; }
done
if [ -n "$kt" ]; then
	out=$(timeout 5 "$GT" -p "$kt" -e 'uprobe:libc:malloc { @ = count(); } interval:ms:200 { exit(); }' 2>&1)
	echo "$out" | grep -q "warning: uprobe:.*libc.so.6:malloc cannot fire: process $kt has no user memory (a kernel thread)" ||
		bad "kernel thread $kt: $out"
fi

"$BIN" -n 1000 -w func_a -k 2>"$T/werr" &
wpid=$!
trap 'kill $wpid 2>/dev/null; rm -rf "$T"' EXIT
sleep 0.3
out=$(timeout 10 "$GT" -p "$wpid" -e 'uprobe:libm:sin { @a = count(); } uprobe:libc:malloc { @b = count(); } uprobe:'"$BIN"':func_a { @c = count(); } interval:ms:300 { exit(); }' 2>&1)
echo "$out" | grep -q "warning: uprobe:.*libm.so.6:sin cannot fire yet: process $wpid does not map .*libm.so.6" ||
	bad "unmapped libm: $out"
[ "$(echo "$out" | grep -c 'warning')" -eq 1 ] || bad "a probe that can fire was warned of: $out"
[ $fail -eq 0 ] && echo "uprobes that cannot fire: ok"
exit $fail
