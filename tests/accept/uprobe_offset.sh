#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: uprobe:BIN:FUNC+OFF.  OFF is the second instruction of
# add10 (objdump), in hex and in decimal; the registers still hold the
# arguments there.  +0 is the entry.  Offsets outside the function and
# on a uretprobe are errors that name the problem.
. "$(dirname "$0")/../progs/uprobe_lib.sh"

command -v objdump >/dev/null || { echo "no objdump"; exit 77; }
# addresses of add10's first two instructions
# shellcheck disable=SC2046
set -- $(objdump -d --no-show-raw-insn "$BIN" |
	awk '/^[0-9a-f]+ <add10>:$/ { f = 1; next }
	     f && /^ *[0-9a-f]+:/ { sub(":", "", $1); print $1; if (++n == 2) exit }')
[ $# -eq 2 ] || { echo "cannot disassemble add10"; exit 1; }
off=$((0x$2 - 0x$1))
[ "$off" -gt 0 ] || { echo "bad offset $off"; exit 1; }
hex=$(printf '0x%x' "$off")

trace "$GT" "add10+$off,add10,gt_done" 2 "
uprobe:$BIN:add10+$hex { printf(\"hex %d %d %s\n\", arg0, arg5, func); }
uprobe:$BIN:add10+$off { @dec = count(); }
uprobe:$BIN:add10+0 { @zero = count(); }
uprobe:$BIN:gt_done { exit(); }" || { echo "gputrace failed:"; cat "$T/err"; exit 1; }
want "hex 1 6 add10
hex 1 6 add10


@dec: 2
@zero: 2"

check_error() {
	timeout 10 "$GT" --dry-run -e "$1 { @ = count(); }" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -ne 1 ] || ! grep -qF -- "$2" "$T/err"; then
		echo "'$1': status $rc, want 1 and '$2' on stderr:"
		cat "$T/err"
		exit 1
	fi
}
check_error "uretprobe:$BIN:add10+$off" "uretprobe cannot take an offset"
check_error "uprobe:$BIN:add10+100000" "outside the function bounds ('add10' size is"
exit 0
