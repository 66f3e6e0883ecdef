#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Device probes end to end (issue "Device probes, part 2"): gputrace -c on
# tests/gpu/gpuprog.cu workloads; every expected figure comes from the
# launch configuration (the program prints it).  Prints PASS/FAIL per
# check; exit 0 when all pass.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-dev.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -o "$T/gpuprog" tests/gpu/gpuprog.cu &
"$NVCC" -O2 -gencode arch=compute_90,code=sm_90 -o "$T/sassonly" tests/gpu/gpuprog.cu &
wait
[ -x "$T/gpuprog" ] && [ -x "$T/sassonly" ] || { echo "FAIL build"; exit 1; }
P=$T/gpuprog
nfail=0

ok() { echo "PASS $1"; }
# a failed check shows how the last run ended: its status, stderr's end
bad() {
	echo "FAIL $1: $2"
	nfail=$((nfail + 1))
	[ -n "$last" ] || return
	echo "    last run ($last): exit status $(cat "$T/$last.rc")"
	tail -n 8 "$T/$last.err" | sed 's/^/    stderr: /'
}
# val FILE NAME: the number after "NAME: " (scalar map line)
val() { sed -n "s/^$2: \\([0-9-]*\\)\$/\\1/p" "$1" | head -1; }
# run NAME PROGRAM CMD [OPTION]: gputrace -q [OPTION] -c CMD -e PROGRAM;
# out in $T/NAME.{out,err}
run() {
	last=$1
	timeout 120 "$GT" -q ${4:+"$4"} -c "$3" -e "$2" >"$T/$1.out" 2>"$T/$1.err"
	echo $? >"$T/$1.rc"
}
expect_eq() {	# NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1" "got '$2', want '$3'"; fi
}

N=1048576
ITERS=10
"$P" vadd $N $ITERS >"$T/native.out" || { echo "FAIL native run"; exit 1; }
warps=$(sed -n 's/^expect warps \([0-9]*\) .*/\1/p' "$T/native.out")
threads=$(sed -n 's/^expect .* threads \([0-9]*\) .*/\1/p' "$T/native.out")
blocks=$(sed -n 's/^expect .* blocks \([0-9]*\)$/\1/p' "$T/native.out")
sum=$(grep '^checksum' "$T/native.out")

run warp 'gpu:warp:vadd { @w = count(); }' "$P vadd $N $ITERS"
expect_eq "gpu:warp count = ITERS x warps" "$(val "$T/warp.out" @w)" "$warps"
grep -q "^$sum\$" "$T/warp.out" && ok "results identical under gpu:warp" ||
	bad "results identical under gpu:warp" "checksum differs"
# the probe builtin: a number in the device clause, named by the tracer
run probe 'gpu:warp:vadd { @p[probe] = count(); }' "$P vadd $N $ITERS"
expect_eq "@p[probe] = ITERS x warps" "$(sed -n 's/^@p\[gpu:warp:vadd\]: //p' "$T/probe.out")" "$warps"
# -v names the blocks an SM holds of the original and of the copy at the
# launch's block size: vadd's few registers let sm_90's 2048 threads
# per SM fill with blocks, before and after
run occ 'gpu:warp:vadd { @w = count(); }' "$P vadd $N $ITERS" -v
tpb=$((threads / ITERS / blocks))
expect_eq "-v: occupancy of vadd, original -> copy" \
	"$(sed -n 's/.*vadd.*: occupancy \([0-9]* -> [0-9]*\) blocks per SM ('"$tpb"' threads.*/\1/p' "$T/occ.err")" \
	"$((2048 / tpb)) -> $((2048 / tpb))"
# filters AT TAG WHAT: a thread filter and a warp filter before inline
# updates in entry (AT "") or exit (AT ":exit") clauses.  At entry the
# filter is a predicate (the lanes it drops skip), at exit a branch (they
# leave at once); either way lanes of one warp differ, and counts, hist
# buckets and smload stay exact.  Runs $T/TAGfilt and $T/wTAGfilt.
filters() {
	run "$2filt" "gpu:kernel:vadd$1 /threadIdx.x % 3 == 0/ { @c = count(); @h = hist(threadIdx.x % 7); @s = smload(1); }" "$P vadd $N $ITERS"
	expect_eq "$3: count = threads with tid % 3 == 0" "$(val "$T/$2filt.out" @c)" \
		$(( (tpb + 2) / 3 * fblk ))
	expect_eq "$3: hist [0] = threads with tid % 21 == 0" \
		"$(sed -n 's/^\[0\] *\([0-9]*\) .*/\1/p' "$T/$2filt.out")" $(( (tpb + 20) / 21 * fblk ))
	expect_eq "$3: smload total = count" \
		"$(sed -n 's/^ *SMs [0-9]*, total \([0-9]*\),.*/\1/p' "$T/$2filt.out" | head -1)" $(( (tpb + 2) / 3 * fblk ))
	run "w$2filt" "gpu:warp:vadd$1 /(threadIdx.x / 32) % 2 == 0/ { @w = count(); @h = hist(threadIdx.x / 32); }" "$P vadd $N $ITERS"
	expect_eq "$3: gpu:warp count = even warps" "$(val "$T/w$2filt.out" @w)" $((warps / 2))
	expect_eq "$3: gpu:warp hist [0] = warp 0 of each block" \
		"$(sed -n 's/^\[0\] *\([0-9]*\) .*/\1/p' "$T/w$2filt.out")" "$fblk"
	grep -q "^$sum\$" "$T/w$2filt.out" && ok "$3: results identical" ||
		bad "$3: results identical" "checksum differs"
}
fblk=$((threads / tpb))
filters "" "" filter
filters :exit x "exit filter"
# a warp clause's sum is inline (one lane): exact, and a total of 0 prints
run wsum 'gpu:warp:vadd:exit { @s = sum(threadIdx.x / 32); @z = sum(0); } gpu:warp:vadd { @e = sum(1 + threadIdx.x / 32); }' "$P vadd $N $ITERS"
expect_eq "warp sum at exit = 0+..+7 per block" "$(val "$T/wsum.out" @s)" $((28 * fblk))
expect_eq "warp sum of 0 printed" "$(val "$T/wsum.out" @z)" 0
expect_eq "warp sum at entry = 1+..+8 per block" "$(val "$T/wsum.out" @e)" $((36 * fblk))
run thread 'gpu:kernel:vadd { @t = count(); }' "$P vadd $N $ITERS"
expect_eq "gpu:kernel count = ITERS x threads" "$(val "$T/thread.out" @t)" "$threads"
run texit 'gpu:kernel:vadd:exit { @t = count(); }' "$P vadd $N $ITERS"
expect_eq "gpu:kernel:exit count = ITERS x threads" "$(val "$T/texit.out" @t)" "$threads"
run wexit 'gpu:warp:vadd:exit { @w = count(); }' "$P vadd $N $ITERS"
expect_eq "gpu:warp:exit count = ITERS x warps" "$(val "$T/wexit.out" @w)" "$warps"
run blk 'gpu:kernel:vadd /threadIdx.x == 0/ { @b[blockIdx.x % 4] = count(); }' "$P vadd $N $ITERS"
per=$((blocks / 4 * ITERS))
for k in 0 1 2 3; do
	expect_eq "@b[$k] = blocks/4 x ITERS" "$(sed -n "s/^@b\\[$k\\]: //p" "$T/blk.out")" "$per"
done

# while loops: 5 rounds per warp; tid % 4 rounds per thread (the lanes
# leave at different rounds; vadd's blocks are 256 threads)
run wloop 'gpu:warp:vadd { $i = 0; while ($i < 5) { @w = count(); $i++; } }' "$P vadd $N $ITERS"
expect_eq "while: gpu:warp count = 5 x ITERS x warps" "$(val "$T/wloop.out" @w)" $((5 * warps))
run tloop 'gpu:kernel:vadd { $i = 0; while ($i < threadIdx.x % 4) { @t = count(); @k[$i] = count(); $i++; } }' "$P vadd $N $ITERS"
expect_eq "while: gpu:kernel count = 6/4 x ITERS x threads" "$(val "$T/tloop.out" @t)" $((threads / 4 * 6))
for k in 0 1 2; do
	expect_eq "while: @k[$k] = (3 - $k)/4 x ITERS x threads" \
		"$(sed -n "s/^@k\\[$k\\]: //p" "$T/tloop.out")" $((threads / 4 * (3 - k)))
done
grep -q "^$sum\$" "$T/tloop.out" && ok "results identical under a while loop" ||
	bad "results identical under a while loop" "checksum differs"

# for ($i : A..B) (bpftrace 0.23) is a while loop for the device too:
# B - A rounds per thread, the bound read per thread (tid % 4 .. 4)
run floop 'gpu:kernel:vadd { for ($i : threadIdx.x % 4..4) { @f = count(); @g[$i] = count(); } }' "$P vadd $N $ITERS"
expect_eq "for range: count = (4+3+2+1)/4 x ITERS x threads" "$(val "$T/floop.out" @f)" $((threads / 4 * 10))
for k in 0 1 2 3; do
	expect_eq "for range: @g[$k] = ($k + 1)/4 x ITERS x threads" \
		"$(sed -n "s/^@g\\[$k\\]: //p" "$T/floop.out")" $((threads / 4 * (k + 1)))
done
grep -q "^$sum\$" "$T/floop.out" && ok "results identical under a for loop" ||
	bad "results identical under a for loop" "checksum differs"

# launch-to-start latency: microseconds to milliseconds, never negative
run lat 'gpu:warp:vadd { @lat = hist(gtime - launch_ns); @neg = sum(gtime < launch_ns); }' "$P vadd $N $ITERS"
expect_eq "gtime - launch_ns never negative" "$(val "$T/lat.out" @neg)" 0
if grep -q '^\[[0-9]*[KM]\?, ' "$T/lat.out" && ! grep -q 'G, \|(\.\.\., 0)' "$T/lat.out"; then
	ok "latency histogram within [1, 1G) ns"
else
	bad "latency histogram" "$(grep '^\[\|^(' "$T/lat.out" | head -3 | tr '\n' ' ')"
fi

# imbalance: eight clusters of duration; smload sums match
"$P" imbalanced 1056 >"$T/imb_native.out"
iblocks=$(sed -n 's/^expect blocks \([0-9]*\) warps \([0-9]*\).*/\1/p' "$T/imb_native.out")
run imb 'gpu:warp:imbalanced:exit { @d = hist(duration); @sm = smload(duration); @s = sum(duration); @lo = min(duration); @hi = max(duration); }' "$P imbalanced 1056"
smtotal=$(sed -n 's/^ *SMs [0-9]*, total \([0-9]*\),.*/\1/p' "$T/imb.out" | head -1)
expect_eq "smload(duration) total = sum(duration)" "$smtotal" "$(val "$T/imb.out" @s)"
rows=$(sed -n '/^@d: $/,/^$/p' "$T/imb.out" | grep -c '|@')
[ "$rows" -ge 2 ] && ok "duration histogram has $rows populated buckets" ||
	bad "duration histogram" "$rows populated buckets"
# spread: the longest blocks spin 8 times as long as the shortest
spread() {	# NAME FILE
	lo=$(val "$2" @lo)
	hi=$(val "$2" @hi)
	if [ -n "$lo" ] && [ -n "$hi" ] && [ "$lo" -gt 0 ] &&
	   awk "BEGIN { r = $hi / $lo; exit !(r >= 6 && r <= 10) }"; then
		ok "$1: max/min duration $hi/$lo ns, about 8"
	else
		bad "$1" "max/min duration '$hi'/'$lo' ns, want about 8"
	fi
}
spread "gpu:warp:exit duration spread" "$T/imb.out"
run imbt 'gpu:kernel:imbalanced:exit { @c = count(); @lo = min(duration); @hi = max(duration); }' "$P imbalanced 1056"
expect_eq "gpu:kernel:exit durations, one per thread" "$(val "$T/imbt.out" @c)" \
	"$((iblocks * 128))"
spread "gpu:kernel:exit duration spread" "$T/imbt.out"
run imb1 'gpu:kernel:imbalanced /threadIdx.x == 0/ { @n = smload(1); }' "$P imbalanced 1056"
expect_eq "smload(1) per block sums to blocks" \
	"$(sed -n 's/^ *SMs [0-9]*, total \([0-9]*\),.*/\1/p' "$T/imb1.out" | head -1)" "$iblocks"

# kernel as a key, kernel arguments, device printf
run multi 'gpu:kernel:* /threadIdx.x == 0 && blockIdx.x == 0/ { @k[kernel] = count(); }' "$P multi"
expect_eq "@k[vadd]" "$(sed -n 's/^@k\[vadd\]: //p' "$T/multi.out")" 3
expect_eq "@k[scale]" "$(sed -n 's/^@k\[scale\]: //p' "$T/multi.out")" 2
run args 'gpu:kernel:vadd /threadIdx.x == 0 && blockIdx.x == 0/ { @n = max(arg3); @c = count(); }' "$P vadd 4096 3"
expect_eq "arg3 = n passed by the program" "$(val "$T/args.out" @n)" 4096
run pf 'gpu:kernel:vadd /threadIdx.x == 0 && blockIdx.x < 3/ { printf("block %d of %d\n", blockIdx.x, gridDim.x); }' "$P vadd 4096 1"
expect_eq "device printf lines" "$(grep -c '^block [0-2] of 16$' "$T/pf.out")" 3

# a kernel with no PTX runs unchanged, with one line saying why
"$T/sassonly" vadd 4096 2 >"$T/sass_native.out"
run sass 'gpu:warp:vadd { @w = count(); }' "$T/sassonly vadd 4096 2"
if grep -q "$(grep '^checksum' "$T/sass_native.out")" "$T/sass.out" &&
   [ "$(grep -ci 'ptx' "$T/sass.err")" -ge 1 ]; then
	ok "SASS-only kernel runs unchanged: $(grep -i ptx "$T/sass.err" | head -1)"
else
	bad "SASS-only kernel" "$(cat "$T/sass.err" | head -3)"
fi
for f in "$T"/*.rc; do
	[ "$(cat "$f")" = 0 ] || bad "exit status $(basename "$f" .rc)" "$(cat "$f"): $(head -3 "${f%.rc}.err")"
done
# everything the tracer printed, for a look afterwards (device tool: $OUT)
if [ -n "$GT_DETAIL" ]; then
	for f in "$T"/*.out "$T"/*.err; do
		echo "== $(basename "$f")"
		head -c 4000 "$f"
	done >"$GT_DETAIL"
fi
[ $nfail -eq 0 ]
