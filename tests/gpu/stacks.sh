#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: user stacks of CUDA calls (issue 16).  tests/gpu/real/stacks.cu
# launches from two C++ call sites and allocates from two more; with
#   cuda:launch { @[ustack] = count(); }
#   cuda:malloc { @m[ustack] = sum(size); @m3[ustack(3)] = sum(size); }
# the launch stack through app::Solver<float>::step() counts 2, the one
# through app::warmup(int*) counts 4 (frames demangled), the allocation
# stacks through app::scratch() and app::Pool::grow(unsigned long) sum
# 1024 and 8192, and ustack(3) gives three-frame keys.  The maps are
# printed while the program still runs (it waits in stacks_done): the
# frames of a process that is gone cannot be named (as in bpftrace).
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-stacks.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
# frame pointers: bpf_get_stack walks them (as bpftrace's stacks do);
# no sibling calls: a launch ending a function would leave no frame of it
"$NVCC" -O2 -g -Xcompiler -fno-omit-frame-pointer,-fno-optimize-sibling-calls \
	-arch=sm_90 \
	-o "$T/stacks" tests/gpu/real/stacks.cu ||
	{ echo "FAIL build"; exit 1; }
nfail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }

timeout 120 "$GT" -q -c "$T/stacks" -e "cuda:launch { @[ustack] = count(); }
cuda:malloc { @m[ustack] = sum(size); @m3[ustack(3)] = sum(size); }
uprobe:$T/stacks:stacks_done { print(@); print(@m); print(@m3); clear(@); clear(@m); clear(@m3); exit(); }" >"$T/out" 2>"$T/err"
[ $? = 0 ] && ok "gputrace status" || bad "gputrace status" "$(head -3 "$T/err")"
grep -q '^results ok$' "$T/out" && ok "program results" || bad "program results" "$(head -3 "$T/out")"

# the values of map MAP's stack keys holding frame FRAME, summed (two
# call sites of one function are two stacks)
value_of() {	# MAP FRAME
	awk -v m="$1[" -v f="$2" '
		index($0, m) == 1 { inkey = 1; hit = 0; next }
		inkey && index($0, f) { hit = 1 }
		inkey && /^\]: / { if (hit) { s += $2; n++ } inkey = 0 }
		END { if (n) print s }' "$T/out"
}
want() {	# NAME MAP FRAME VALUE
	got=$(value_of "$2" "$3")
	[ "$got" = "$4" ] && ok "$1 ($got)" ||
		{ bad "$1" "got '$got', want '$4'"; sed 's/^/    | /' "$T/out" | head -60; }
}
want "launch stack through Solver<float>::step()" "@" "app::Solver<float>::step()" 2
want "launch stack through warmup(int*)" "@" "app::warmup(int*)" 4
want "allocation stack through scratch()" "@m" "app::scratch()" 1024
want "allocation stack through Pool::grow()" "@m" "app::Pool::grow(unsigned long)" 8192
n3=$(awk '/^@m3\[/ { k = 1; n = 0; next } k && /^\]: / { if (n == 3) c++; k = 0; next } k { n++ } END { print c + 0 }' "$T/out")
[ "$n3" -ge 1 ] && ok "ustack(3) keys have three frames ($n3 keys)" ||
	bad "ustack(3)" "no key of three frames"
[ $nfail = 0 ]
