#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: library kernels (issue "Real programs, part 1").
#   tests/gpu/real/thrust_cub.cu (CUB sort, reduce, scan; thrust
#   transform): results identical under every probe form; for every
#   kernel, the gpu:kernel:* count equals the threads cuda:launch saw
#   launched for it (gridDim x blockDim summed), under the same name.
#   tests/gpu/real/gemm.cu (cuBLAS, SASS only): runs with correct
#   results under gpu:kernel:*, and its kernels are named as skipped;
#   cuda:complete times them: one record per launch, total time within
#   2x of CUDA events around the GEMMs; on thrust/CUB one record per launch
#   under the name cuda:launch gives.
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-libs.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -arch=sm_90 -o "$T/thrust_cub" tests/gpu/real/thrust_cub.cu &
"$NVCC" -O2 -arch=sm_90 -o "$T/gemm" tests/gpu/real/gemm.cu -lcublas &
wait
[ -x "$T/thrust_cub" ] && [ -x "$T/gemm" ] || { echo "FAIL build"; exit 1; }
nfail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
expect_eq() {	# NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1" "got '$2', want '$3'"; fi
}
run() {	# NAME CMD PROGRAM
	timeout 300 "$GT" -q -c "$2" -e "$3" >"$T/$1.out" 2>"$T/$1.err"
	echo $? >"$T/$1.rc"
}
same_results() {	# NAME NATIVE-OUTPUT
	sum=$(grep '^checksum' "$2")
	expect_eq "$1: gputrace status" "$(cat "$T/$1.rc")" 0
	grep -q '^results ok$' "$T/$1.out" && grep -q "^$sum\$" "$T/$1.out" &&
		ok "$1: results identical" ||
		{ bad "$1: results" "$(grep -v '^@' "$T/$1.out" | head -5)"; sed 's/^/    | /' "$T/$1.err" | head -20; }
}

"$T/thrust_cub" >"$T/tc.native" || { echo "FAIL native thrust_cub"; exit 1; }
"$T/gemm" >"$T/gemm.native" || { echo "FAIL native gemm"; exit 1; }

run count "$T/thrust_cub" 'gpu:kernel:* { @t[kernel] = count(); }
cuda:launch { @l[kernel] = sum(gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z); }'
same_results count "$T/tc.native"
sed -n 's/^@t\[\(.*\)\]: \([0-9]*\)$/\1	\2/p' "$T/count.out" | sort >"$T/t"
sed -n 's/^@l\[\(.*\)\]: \([0-9]*\)$/\1	\2/p' "$T/count.out" | sort >"$T/l"
n=$(wc -l <"$T/t")
[ "$n" -ge 4 ] && ok "gpu:kernel:* counted $n kernels" || bad "kernels counted" "$n"
if cmp -s "$T/t" "$T/l"; then
	ok "gpu:kernel:* count = cuda:launch threads, per kernel, same names"
else
	bad "per-kernel counts (-device +launch)" "$(diff "$T/t" "$T/l" | head -20)"
fi

# cuda:complete: one record per launch, under the name cuda:launch gives
run complete "$T/thrust_cub" 'cuda:complete { @c[kernel] = count(); }
cuda:launch { @l[kernel] = count(); }'
same_results complete "$T/tc.native"
sed -n 's/^@c\[\(.*\)\]: \([0-9]*\)$/\1	\2/p' "$T/complete.out" | sort >"$T/c"
sed -n 's/^@l\[\(.*\)\]: \([0-9]*\)$/\1	\2/p' "$T/complete.out" | sort >"$T/l2"
if [ -s "$T/c" ] && cmp -s "$T/c" "$T/l2"; then
	ok "cuda:complete count = cuda:launch count, per kernel ($(wc -l <"$T/c") kernels)"
else
	bad "cuda:complete per kernel (-complete +launch)" "$(diff "$T/c" "$T/l2" | head -20)"
fi

run warpexit "$T/thrust_cub" 'gpu:warp:*:exit { @d = hist(duration); }'
same_results warpexit "$T/tc.native"
run keyed "$T/thrust_cub" 'gpu:warp:* { @k[kernel] = count(); @s = smload(1); }'
same_results keyed "$T/tc.native"

run gemm "$T/gemm" 'gpu:kernel:* { @t = count(); }'
same_results gemm "$T/gemm.native"
grep -q 'skipped .*SASS only' "$T/gemm.err" && ok "cuBLAS kernels skipped with a reason" ||
	bad "cuBLAS skip line" "$(head -5 "$T/gemm.err")"

# cuBLAS kernels timed by cuda:complete: one record per launch, and the
# timed GEMMs' kernel time (the untimed first GEMM's share taken out)
# within 2x of what CUDA events around them measured
run gemmtime "$T/gemm" 'cuda:complete { @n = count(); @ns = sum(duration); @us[kernel] = hist(duration / 1000); }
cuda:launch { @l = count(); }'
same_results gemmtime "$T/gemm.native"
gemms=$(sed -n 's/^gemms //p' "$T/gemmtime.out")
events=$(sed -n 's/^events_ns //p' "$T/gemmtime.out")
n=$(sed -n 's/^@n: //p' "$T/gemmtime.out")
ns=$(sed -n 's/^@ns: //p' "$T/gemmtime.out")
[ -n "$ns" ] && ns=$((ns * gemms / (gemms + 1)))
expect_eq "cuda:complete: one record per cuBLAS launch" "$n" "$(sed -n 's/^@l: //p' "$T/gemmtime.out")"
if [ -n "$ns" ] && [ -n "$events" ] && [ "$ns" -gt 0 ] &&
   [ $((ns * 2)) -ge "$events" ] && [ "$ns" -le $((events * 2)) ]; then
	ok "cuBLAS kernel time $ns ns within 2x of the events' $events ns"
else
	bad "cuBLAS kernel time" "cuda:complete $ns ns, events $events ns"
fi
grep -q '^@us\[' "$T/gemmtime.out" && ok "per-kernel histogram of cuBLAS kernels: $(grep -m1 '^@us\[' "$T/gemmtime.out")" ||
	bad "cuBLAS histogram" "none"
[ "$nfail" -eq 0 ]
