#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 15): a target in another mount namespace (a
# container's view): its program sits on a tmpfs that only its private
# namespace sees (unshare -m).  -p PID reaches it through /proc/PID/root
# for -l and for uprobes, and names it so, as bpftrace 0.17 does.
# Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
BT=${BPFTRACE:-bpftrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
[ -r /sys/bus/event_source/devices/uprobe/type ] || { echo "no uprobe PMU"; exit 77; }
command -v cc >/dev/null && command -v unshare >/dev/null ||
	{ echo "needs cc and unshare"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-mntns.XXXXXX") || exit 1
wpid=
trap '[ -n "$wpid" ] && kill "$wpid" 2>/dev/null; rm -rf "$T"' EXIT

cat >"$T/t.c" <<'EOF'
#include <unistd.h>
int tick(int n) { return n + 1; }
int main(void) { for (int i = 0;; i++) { tick(i); usleep(50000); } }
EOF
cc -O0 -g -o "$T/prog" "$T/t.c" || { echo "cc failed"; exit 1; }
D=$T/ns
mkdir "$D"
# the tmpfs is mounted in the child's namespace only; exec keeps the pid
unshare -m --propagation private sh -c \
	"mount -t tmpfs none '$D' && cp '$T/prog' '$D/cprog' && exec '$D/cprog'" \
	2>"$T/unshare.err" &
wpid=$!
i=0
while [ "$(readlink "/proc/$wpid/exe" 2>/dev/null)" != "$D/cprog" ]; do
	i=$((i + 1))
	if [ "$i" -gt 50 ] || ! kill -0 "$wpid" 2>/dev/null; then
		echo "unshare -m does not work here: $(head -1 "$T/unshare.err")"
		exit 77
	fi
	sleep 0.1
done
[ ! -e "$D/cprog" ] || { echo "the tmpfs is visible outside its namespace"; exit 77; }

fails=0
have_bt=0
"$BT" -p "$wpid" -l 'uprobe:*' >/dev/null 2>&1 && have_bt=1
for pat in 'uprobe:*' "uprobe:$D/cprog:t*" 'uprobe:libc:mall*'; do
	"$GT" -p "$wpid" -l "$pat" >"$T/gt" 2>"$T/gt.err"
	if ! grep -q "^uprobe:/proc/$wpid/root/" "$T/gt"; then
		echo "FAIL -l '$pat': want /proc/$wpid/root/... paths; got:"
		head -3 "$T/gt" "$T/gt.err"
		fails=$((fails + 1))
	elif [ "$have_bt" -eq 1 ]; then
		"$BT" -p "$wpid" -l "$pat" >"$T/bt" 2>/dev/null
		cmp -s "$T/bt" "$T/gt" || {
			echo "FAIL -l '$pat' differs from bpftrace's:"
			diff -u "$T/bt" "$T/gt" | head -10
			fails=$((fails + 1))
		}
	fi
	echo "-l '$pat': $(wc -l <"$T/gt") lines (bpftrace compared: $have_bt)"
done

# a live uprobe in the namespace: named through /proc/PID/root, counted
timeout -k 2 10 "$GT" -p "$wpid" -e "uprobe:$D/cprog:tick { @[probe] = count(); }
interval:ms:600 { exit(); }" >"$T/out" 2>"$T/err"
rc=$?
n=$(sed -n "s|^@\[uprobe:/proc/$wpid/root$D/cprog:tick\]: \([0-9]*\)$|\1|p" "$T/out")
if [ "$rc" -ne 0 ] || [ -z "$n" ] || [ "$n" -lt 3 ]; then
	echo "FAIL live uprobe (status $rc, count '$n'):"
	cat "$T/out" "$T/err" | head -10
	fails=$((fails + 1))
fi
if [ "$have_bt" -eq 1 ]; then
	prog="uprobe:$D/cprog:tick { printf(\"%s\\n\", probe); exit(); }"
	timeout -k 2 10 "$BT" -p "$wpid" -e "$prog" 2>/dev/null | grep '^uprobe' >"$T/bt"
	timeout -k 2 10 "$GT" -p "$wpid" -e "$prog" 2>/dev/null | grep '^uprobe' >"$T/gt"
	cmp -s "$T/bt" "$T/gt" || {
		echo "FAIL probe builtin differs from bpftrace's:"
		diff -u "$T/bt" "$T/gt"
		fails=$((fails + 1))
	}
fi
echo "live uprobe: $n hits"
[ "$fails" -eq 0 ] || exit 1
echo ok
