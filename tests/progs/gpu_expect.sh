# SPDX-License-Identifier: MIT
# Sourced by tests/gpu/real_forms.sh and real_graphs.sh, whose programs
# print, per kernel, "expect KERNEL runs N warps N threads N ..." (what
# their launch configurations give), "checksum ..." and "results ok".
# Needs P (the program), T (a temporary directory) and GT (gputrace).
#
#   ok NAME / bad NAME WHY / expect_eq NAME GOT WANT
#	PASS/FAIL lines; nfail counts the failures
#   run NAME PROGRAM	gputrace -c $P with PROGRAM: $T/NAME.out, .err, .rc
#   same_results NAME	gputrace's status 0, and the program's own verdict
#			and the native checksum under probe NAME
#   native		run $P alone: sum (its checksum), kernels (its kernels)
#   want KERNEL FIELD	the launch configuration's figure
#   got FILE MAP KERNEL	the map's value for the kernel in FILE
nfail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
expect_eq() {	# NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1" "got '$2', want '$3'"; fi
}
run() {	# NAME PROGRAM
	timeout 300 "$GT" -q -c "$P" -e "$2" >"$T/$1.out" 2>"$T/$1.err"
	echo $? >"$T/$1.rc"
}
same_results() {
	expect_eq "$1: gputrace status" "$(cat "$T/$1.rc")" 0
	grep -q '^results ok$' "$T/$1.out" && grep -q "^$sum\$" "$T/$1.out" &&
		ok "$1: results identical" ||
		{ bad "$1: results" "$(grep -v '^expect' "$T/$1.out" | head -5)"; sed 's/^/    | /' "$T/$1.err" | head -20; }
}
native() {
	"$P" >"$T/native.out" 2>&1 || { echo "FAIL native run"; cat "$T/native.out"; exit 1; }
	sum=$(grep '^checksum' "$T/native.out")
	kernels=$(sed -n 's/^expect \([a-z_0-9]*\) .*/\1/p' "$T/native.out")
}
want() { sed -n "s/^expect $1 \\(.* \\)*$2 \\([0-9]*\\).*/\\2/p" "$T/native.out"; }
got() { sed -n "s/^$2\\[$3\\]: //p" "$1"; }
