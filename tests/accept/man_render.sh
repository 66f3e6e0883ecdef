#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 31): the man page renders what it means: no font
# escape spilled as text (uprobe:BINR[P:GLORP, /proc/PID/root/PATHR: a
# form feed had replaced "\f"), uaddr("name") with both quotes,
# "Aggregations" a subsection, not an item under exit(); and it documents
# what works: interval:hz:N, print(@m, top[, div]).  Exit 0, 1, 77.
cd "$(dirname "$0")/../.." || exit 1
command -v groff >/dev/null || { echo "no groff"; exit 77; }
P=man/gputrace.8
fail=0
bad() { echo "FAIL: $*"; fail=1; }

for m in "$P" man/man8/*.8; do
	grep -q "$(printf '\f')" "$m" && bad "$m holds a form feed (a lost font escape)"
done
out=$(groff -man -Tutf8 -P-c -P-u -P-b "$P" 2>&1 | col -b 2>/dev/null ||
      groff -man -Tascii -P-c -P-u -P-b "$P" 2>&1)
for bad_text in 'BINR\[' 'GLORP' 'PATHR' 'uaddr("name)'; do
	echo "$out" | grep -q -- "$bad_text" && bad "renders '$bad_text'"
done
for want in 'uprobe:BIN\[:GLOB\]' '/proc/PID/root/PATH,' 'uaddr("name")' \
	    'interval:hz:N' 'print(@m, top), print(@m, top, div)'; do
	echo "$out" | grep -q -- "$want" || bad "does not render '$want'"
done
# a subsection heading sits at column 3, an item (.TP) at column 7
echo "$out" | grep -q '^   Aggregations$' || bad "Aggregations is not a subsection: $(echo "$out" | grep Aggregations)"
[ $fail -eq 0 ] && echo "man page renders: ok"
exit $fail
