#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 15): cases both tracers reject, with bpftrace 0.17's
# words: an uprobe offset inside an instruction or past the function,
# unroll bounds, a bad -p, a missing script file, a bad -f.  Offsets on
# instruction boundaries are accepted (Debian's bpftrace, built without
# its disassembler, refuses every offset: docs/parity.md).
# Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
command -v cc >/dev/null || { echo "no C compiler"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-perr.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# a function of known instructions: movabs (10 bytes), ret (1)
cat >"$T/f.c" <<'EOF'
__asm__(".globl insn_f\n.type insn_f, @function\ninsn_f:\n"
	"\tmovabsq $0x1122334455667788, %rax\n\tret\n"
	".size insn_f, .-insn_f\n");
int main(void) { return 0; }
EOF
cc -o "$T/f" "$T/f.c" || { echo "cc failed"; exit 1; }

fails=0
# expect LABEL STATUS REGEX ARG...: gputrace ARG... exits STATUS, its
# stderr matches REGEX (extended; empty: stderr must be empty)
expect() {
	label=$1 st=$2 re=$3
	shift 3
	"$GT" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	if [ "$rc" -ne "$st" ] || { [ -n "$re" ] && ! grep -Eq "$re" "$T/err"; } ||
	   { [ -z "$re" ] && [ -s "$T/err" ]; }; then
		echo "FAIL $label: want status $st and /$re/; got $rc:"
		head -5 "$T/err"
		fails=$((fails + 1))
	else
		echo "ok $label: $(head -1 "$T/err")"
	fi
}

for off in 0 10; do
	expect "offset +$off (boundary)" 0 '' --dry-run -e "uprobe:$T/f:insn_f+$off {}"
done
for off in 1 5 9; do
	expect "offset +$off (inside movabs)" 1 \
		"^stdin:1:[0-9]+: error: could not add uprobe into middle of instruction: $T/f:insn_f\\+$off\$" \
		--dry-run -e "uprobe:$T/f:insn_f+$off {}"
done
expect "offset past the end" 1 \
	"error: Offset outside the function bounds \\('insn_f' size is 11\\)" \
	--dry-run -e "uprobe:$T/f:insn_f+11 {}"
grep -q '^ *\^$' "$T/err" || { echo "FAIL: no caret"; fails=$((fails + 1)); }

expect "unroll 0" 1 '^stdin:1:16: error: unroll minimum value is 1$' \
	--dry-run -e 'BEGIN { unroll(0) { @x = 1; } }'
expect "unroll 101" 1 '^stdin:1:16: error: unroll maximum value is 100$' \
	--dry-run -e 'BEGIN { unroll(101) { @x = 1; } }'
expect "-p word" 1 "^ERROR: pid '12x' is not a valid decimal number\$" -p 12x -e 'BEGIN {}'
expect "-p range" 1 "^ERROR: pid '-5' out of valid pid range \\[1,4194304\\]\$" -p -5 -e 'BEGIN {}'
expect "-p gone" 1 '^ERROR: pid 4194303: No such process$' -p 4194303 -e 'BEGIN {}'
expect "no file" 1 "^ERROR: failed to open file '$T/none.bt': No such file or directory\$" "$T/none.bt"
expect "-f" 1 "^ERROR: Invalid output format \"xml\"\$" -f xml -e 'BEGIN {}'
grep -q "^Valid formats: 'text', 'json'\$" "$T/err" || { echo "FAIL: -f: no list of formats"; fails=$((fails + 1)); }
expect "address" 1 "^stdin:1:[0-9]+: error: Could not resolve address: $T/f:0x1\$" \
	--dry-run -e "uprobe:$T/f:1 {}"
[ "$fails" -eq 0 ] || exit 1
echo ok
