#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: bpftrace's --no-warnings, -B, --info and -k in JSON.  --no-warnings
# drops the compiler's warnings (and nothing else); -B takes line, none or
# full, with bpftrace 0.17's message otherwise, and -B full still writes
# everything by the end; --info answers each section.  Exit 0 pass, 1 fail.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-opts.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "$*"; cat "$T/out" "$T/err" 2>/dev/null; exit 1; }
P='BEGIN { $x = -1; @ = 10 / $x; }'

"$GT" --dry-run -e "$P" >"$T/out" 2>"$T/err" || fail "dry run"
grep -q 'WARNING: signed operands' "$T/err" || fail "no warning without --no-warnings"
"$GT" --dry-run --no-warnings -e "$P" >"$T/out" 2>"$T/err" || fail "--no-warnings run"
[ -s "$T/err" ] && fail "--no-warnings: still a message"
"$GT" --dry-run --no-warnings -e 'BEGIN { @ = nope; }' >"$T/out" 2>"$T/err" &&
	fail "--no-warnings: an error accepted"
grep -q 'error:' "$T/err" || fail "--no-warnings hid an error"

"$GT" -B bad -e 'BEGIN { }' >"$T/out" 2>"$T/err" && fail "-B bad accepted"
grep -qx "ERROR: USAGE: -B must be either 'line', 'full', or 'none'." "$T/err" ||
	fail "-B bad: bpftrace's message"
for m in line none full; do
	"$GT" --dry-run -B $m -e 'BEGIN { }' >"$T/out" 2>"$T/err" || fail "-B $m refused"
done

"$GT" --info >"$T/out" 2>"$T/err" || fail "--info failed"
for sec in System Build 'Kernel helpers' 'Kernel features' 'Probe types' GPU; do
	grep -qx "$sec" "$T/out" || fail "--info: no section $sec"
done
grep -q "^  OS: $(uname -s) $(uname -r)" "$T/out" || fail "--info: OS line"

if [ "$(id -u)" -eq 0 ]; then
	"$GT" -B full -e 'BEGIN { printf("one\n"); printf("two\n"); exit(); }' \
		>"$T/out" 2>"$T/err" </dev/null || fail "-B full run"
	[ "$(grep -c '^one$\|^two$' "$T/out")" = 2 ] || fail "-B full lost output"
	# -k in JSON: bpftrace 0.17's helper_error record
	"$GT" -k -f json -e 'BEGIN { @x[1] = 1; delete(@x[2]); exit(); }' \
		>"$T/out" 2>"$T/err" </dev/null || fail "-k -f json run"
	grep -qx '{"type": "helper_error", "helper": "map_delete_elem", "retcode": -2, "line": 1, "col": 20}' \
		"$T/out" || fail "-k -f json: no helper_error record"
	# --no-warnings drops -k's warnings too
	"$GT" -k --no-warnings -e 'BEGIN { @x[1] = 1; delete(@x[2]); exit(); }' \
		>"$T/out" 2>"$T/err" </dev/null || fail "-k --no-warnings run"
	grep -q 'WARNING' "$T/out" "$T/err" && fail "-k --no-warnings: a warning"
fi
echo ok
