#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: the BPFTRACE_* variables of bpftrace's man page that gputrace
# honours (docs/parity.md, "Environment"): MAP_KEYS_MAX bounds a map,
# MAX_PROBES refuses a program with more, CAT_BYTES_MAX cuts cat(), STRLEN
# over 200 is refused and otherwise ignored with a warning; a value that is
# no number gets bpftrace 0.17's message.  Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-btenv.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "$*"; cat "$T/out" "$T/err"; exit 1; }
run() {
	env "$@" -e 'BEGIN { @[1] = 1; @[2] = 2; @[3] = 3; cat("'"$T"'/f"); exit(); } END { }' \
		>"$T/out" 2>"$T/err" </dev/null
}
printf '0123456789' >"$T/f"

run "$GT" || fail "plain run"
grep -q '^@\[3\]: 3$' "$T/out" && grep -q '^0123456789$' "$T/out" || fail "plain run's output"
run BPFTRACE_MAP_KEYS_MAX=2 "$GT" || fail "MAP_KEYS_MAX=2"
[ "$(grep -c '^@\[' "$T/out")" = 2 ] || fail "MAP_KEYS_MAX=2: want 2 keys"
run BPFTRACE_CAT_BYTES_MAX=4 "$GT" || fail "CAT_BYTES_MAX=4"
grep -q '^0123$' "$T/out" || fail "CAT_BYTES_MAX=4: want 0123"
run BPFTRACE_MAX_PROBES=1 "$GT" && fail "MAX_PROBES=1 accepted 2 probes"
grep -q "^ERROR: Can't attach to 2 probes because it exceeds the current limit of 1 probes.$" "$T/err" ||
	fail "MAX_PROBES=1: bpftrace's message"
run BPFTRACE_MAX_PROBES=2 "$GT" || fail "MAX_PROBES=2"
run BPFTRACE_MAP_KEYS_MAX=abc "$GT" && fail "MAP_KEYS_MAX=abc accepted"
grep -q "^ERROR: Env var 'BPFTRACE_MAP_KEYS_MAX' did not contain a valid uint64_t, or was zero-valued.$" "$T/err" ||
	fail "MAP_KEYS_MAX=abc: bpftrace's message"
run BPFTRACE_STRLEN=300 "$GT" && fail "STRLEN=300 accepted"
grep -q "^ERROR: 'BPFTRACE_STRLEN' 300 exceeds the current maximum of 200 bytes.$" "$T/err" ||
	fail "STRLEN=300: bpftrace's message"
run BPFTRACE_STRLEN=128 "$GT" || fail "STRLEN=128"
grep -q 'BPFTRACE_STRLEN=128 is ignored' "$T/err" || fail "STRLEN=128: no warning"
echo ok
