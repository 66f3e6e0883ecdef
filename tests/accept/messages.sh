#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: -d dumps go to stderr (stdout keeps only the program's
# output); without root or CAP_BPF/CAP_PERFMON gputrace says what
# tracing needs instead of failing on a map.  Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-msg.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

for st in ast types ebpf; do
	"$GT" --dry-run -d "$st" -e 'BEGIN { @x = 1; printf("hi\n"); }' \
		>"$T/out" 2>"$T/err" </dev/null
	if [ -s "$T/out" ] || [ ! -s "$T/err" ]; then
		echo "-d $st: want the dump on stderr only; stdout:"
		cat "$T/out"
		exit 1
	fi
done

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "needs root and setpriv to drop privileges"
	exit 77
fi
# a program that compiles; run as nobody, without capabilities
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$GT" -e 'BEGIN { printf("hi\n"); exit(); }' >"$T/out" 2>"$T/err" </dev/null
rc=$?
if [ "$rc" -ne 1 ] || ! grep -q 'needs root, or the CAP_BPF and CAP_PERFMON' "$T/err"; then
	echo "not root: want status 1 and the CAP_BPF/CAP_PERFMON message; got $rc:"
	cat "$T/err"
	exit 1
fi
echo ok
