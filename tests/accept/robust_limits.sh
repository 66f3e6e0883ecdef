#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: inputs past the compiler's limits get a located error, never
# a crash or a runaway (issue 17, defects 1, 4, 5, 6, 9): a positional
# index past 32 bits, 15,000 chained '+' (type checker recursion), an if
# around 120,000 instructions (16-bit jump offsets), four nested
# unroll(100) on the host and on the device, constant shift counts outside
# 0..63 (accepted as bpftrace 0.17 does, with a warning).
# Exit 0 pass, 1 fail (saying why), 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }

dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
failed=0

# run NAME WANT_RC PATTERN ARGS...: gputrace --dry-run ARGS must exit WANT_RC
# within 30 s, with PATTERN (grep -E) on stderr and no sanitizer report.
run() {
	name=$1 want=$2 pat=$3
	shift 3
	# no ulimit -v: ASan reserves terabytes of address space
	timeout -k 5 30 "$GT" --dry-run "$@" </dev/null >"$dir/out" 2>"$dir/err"
	rc=$?
	if grep -qE 'Sanitizer|runtime error:' "$dir/err"; then
		echo "$name: sanitizer report"
	elif [ "$rc" -ne "$want" ]; then
		echo "$name: exit status $rc, want $want"
	elif [ -n "$pat" ] && ! grep -qE -- "$pat" "$dir/err"; then
		echo "$name: no '$pat' on stderr"
	else
		return 0
	fi
	head -c 2000 "$dir/err" | head -n 20 | sed 's/^/    | /'
	failed=1
}

run posarg_past_int 0 '' -e 'BEGIN { @x = $4294967296; @y = $4294967297 + 1; }'
# unroll's count from an index past 32 bits (issue 31): was read as $1
run unroll_posarg_past_int 1 'stdin:1:16: error: unroll minimum value is 1' \
	-e 'BEGIN { unroll($4294967297) { @x = 1; } }' 3

python3 -c "print('BEGIN { @x = ' + ' + '.join(['1'] * 15000) + '; }')" \
	>"$dir/deep.bt"
run deep_expression 1 'deep\.bt:1:[0-9]+: error: nested too deeply' "$dir/deep.bt"

printf 'BEGIN {\n  if (pid > 1) {\n    unroll(100) { unroll(10) { @a[1] = 1; @a[2] = 2; @a[3] = 3; @a[4] = 4; @a[5] = 5; @a[6] = 6; @a[7] = 7; @a[8] = 8; @a[9] = 9; @a[10] = 10; } }\n  }\n}\n' \
	>"$dir/jump.bt"
run long_jump 1 'jump\.bt:2:3: error: code too long' "$dir/jump.bt"

printf 'BEGIN {\n  unroll(100) { unroll(100) { unroll(100) { unroll(100) { @x = 1; } } } }\n}\n' \
	>"$dir/unroll.bt"
run nested_unroll 1 'unroll\.bt:2:[0-9]+: error: unroll makes the clause longer' "$dir/unroll.bt"
[ "$(grep -c 'error:' "$dir/err")" -eq 1 ] ||
	{ echo "nested_unroll: reported more than once"; failed=1; }

printf 'gpu:kernel:vadd {\n  unroll(100) { unroll(100) { unroll(100) { unroll(100) { @x = 1; } } } }\n}\n' \
	>"$dir/dunroll.bt"
run device_nested_unroll 1 'dunroll\.bt:2:[0-9]+: error: unroll makes the clause longer than 4096' "$dir/dunroll.bt"

run shift_out_of_range 0 'stdin:1:16-18: WARNING: shift by 64' \
	-e 'BEGIN { @x = 1 << 64; @y = 1 >> -1; @z = 1 << 63; }'
grep -q '1:30-32: WARNING: shift by -1' "$dir/err" ||
	{ echo "shift_out_of_range: no warning for -1"; failed=1; }
[ "$(grep -c 'WARNING:' "$dir/err")" -eq 2 ] ||
	{ echo "shift_out_of_range: a warning for 63"; failed=1; }

exit $failed
