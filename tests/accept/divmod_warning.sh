#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: the warning bpftrace 0.17 gives for '/' and '%' on signed
# operands (it divides as unsigned), at the same place, in the same form
# and with the same words, and none where bpftrace gives none (non-negative literals,
# unsigned builtins, positional arguments).  Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
BPFTRACE=${BPFTRACE:-bpftrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
if [ "$(id -u)" -ne 0 ] ||
   ! timeout 10 "$BPFTRACE" -e 'BEGIN { exit(); }' >/dev/null 2>&1; then
	echo "needs root and a runnable $BPFTRACE"
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-divmod.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# each warning as bpftrace prints it: "stdin:LINE:COL-END: WARNING: ...",
# the source line and a '~' under the operator
warnings() {
	grep -A2 -E '^stdin:[0-9]+:[0-9]+-[0-9]+: WARNING: ' "$1"
}

failed=0
n=0
while IFS= read -r prog; do
	n=$((n + 1))
	timeout 10 "$BPFTRACE" -e "$prog" >/dev/null 2>"$T/b" </dev/null
	timeout 10 "$GT" -e "$prog" >/dev/null 2>"$T/g" </dev/null
	warnings "$T/b" >"$T/bw"
	warnings "$T/g" >"$T/gw"
	if ! cmp -s "$T/bw" "$T/gw"; then
		echo "FAIL: $prog"
		diff -u --label bpftrace --label gputrace "$T/bw" "$T/gw"
		failed=1
	fi
done <<'EOF_PROGS'
BEGIN { $a = -7; printf("%d\n", $a % 3); exit(); }
BEGIN { @m = 5; printf("%d\n", @m / 3); exit(); }
BEGIN { printf("%d\n", 7 / -3); exit(); }
BEGIN { printf("%d %d\n", 8 % 3, 9 / 2); exit(); }
BEGIN { printf("%d\n", nsecs % 3 > 5); exit(); }
BEGIN { printf("%d\n", $1 / 3); exit(); }
BEGIN { $x = 5; $x %= 2; @y = 4; @y /= 2; exit(); }
BEGIN { $x = -3; @s = (int32)$x; @c = @s % 10 + 7 / @s; exit(); }
EOF_PROGS
[ $failed -eq 0 ] && echo "ok: $n programs"
exit $failed
