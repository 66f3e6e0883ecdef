#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: -o FILE.  Output goes to FILE except the blank pair before
# the maps at exit, which bpftrace 0.17 writes to stdout; both streams
# must match bpftrace's, in text and JSON.  Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
BPFTRACE=${BPFTRACE:-bpftrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
if [ "$(id -u)" -ne 0 ] ||
   ! timeout 10 "$BPFTRACE" -e 'BEGIN { exit(); }' >/dev/null 2>&1; then
	echo "needs root and a runnable $BPFTRACE"
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-ofile.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

PROG='BEGIN { @a = 1; @h = hist(5); printf("x\n"); exit(); }'
for fmt in text json; do
	for t in bpftrace gputrace; do
		bin=$GT
		[ $t = bpftrace ] && bin=$BPFTRACE
		timeout 10 "$bin" -f "$fmt" -o "$T/$t.file" -e "$PROG" \
			>"$T/$t.out" 2>"$T/$t.err" </dev/null
	done
	for s in out file; do
		if ! cmp -s "$T/bpftrace.$s" "$T/gputrace.$s"; then
			echo "-f $fmt: the $s differs from bpftrace's:"
			diff -u "$T/bpftrace.$s" "$T/gputrace.$s"
			exit 1
		fi
	done
done
echo ok
