#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: device probes reading the program's memory (issue 16,
# docs/device-runtime.md "Reading device memory").  tests/gpu/real/reads.cu
# copies an int32 array with count_big three times (cudaMalloc twice,
# managed memory once) and counts its elements above 100 itself.  Checks:
#  1. a clause reading in[i] counts the elements above 100 over the three
#     launches: 3 x the program's own count, exactly;
#  2. wild reads (address 0x1000, misaligned, one past the array's end)
#     read 0, are counted and reported, and the program's results and
#     checksum stay identical to its native run.
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-reads.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -arch=sm_90 -o "$T/reads" tests/gpu/real/reads.cu ||
	{ echo "FAIL build"; exit 1; }
nfail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
expect_eq() {	# NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1" "got '$2', want '$3'"; fi
}

"$T/reads" >"$T/native" 2>&1 || { echo "FAIL native run"; cat "$T/native"; exit 1; }
big=$(awk '$1 == "expect" { print $3 }' "$T/native")
sum=$(grep '^checksum' "$T/native")

# 1. the predicate on the input, per element
timeout 300 "$GT" -q -c "$T/reads" -e '
gpu:kernel:count_big /blockIdx.x * blockDim.x + threadIdx.x < arg1/ {
	$i = blockIdx.x * blockDim.x + threadIdx.x;
	if (*(int32 *)(arg0 + 4 * $i) > 100) { @big = count(); }
	@n = count();
}' >"$T/count" 2>"$T/count.err"
expect_eq "gputrace status" $? 0
expect_eq "elements above 100 in three launches" \
	"$(sed -n 's/^@big: //p' "$T/count")" $((3 * big))
expect_eq "elements read" "$(sed -n 's/^@n: //p' "$T/count")" 300000
grep -q '^results ok$' "$T/count" && grep -qx "$sum" "$T/count" &&
	ok "results identical" || bad "results" "$(head -5 "$T/count")"
grep -q 'read 0' "$T/count.err" && bad "no bad read expected" "$(cat "$T/count.err")"

# 2. wild pointers: 0 and counted, the program unharmed
timeout 300 "$GT" -q -c "$T/reads" -e '
gpu:kernel:count_big /blockIdx.x == 0 && threadIdx.x == 0/ {
	@wild = sum(*(int64 *)0x1000);
	@odd = sum(*(int32 *)(arg0 + 2));
	@past = sum(*(int32 *)(arg0 + 4 * arg1));
	@first = sum(*(int32 *)arg0);
}' >"$T/wild" 2>"$T/wild.err"
expect_eq "gputrace status (wild reads)" $? 0
for m in wild odd past; do
	expect_eq "@$m reads 0" "$(sed -n "s/^@$m: //p" "$T/wild")" 0
done
# in[0] = -300 (reads.cu), sign-extended, three launches
expect_eq "a good read beside them" "$(sed -n 's/^@first: //p' "$T/wild")" -900
grep -q '9 device memory reads found no allocation' "$T/wild.err" &&
	ok "bad reads counted and reported (3 launches x 3)" ||
	bad "bad read report" "$(cat "$T/wild.err")"
grep -q '^results ok$' "$T/wild" && grep -qx "$sum" "$T/wild" &&
	ok "results identical after wild reads" || bad "results" "$(head -5 "$T/wild")"
[ $nfail = 0 ]
