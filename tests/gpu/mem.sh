#!/bin/sh
# SPDX-License-Identifier: MIT
#
# gpu:mem end to end: tests/gpu/mem.cu runs kernels with known access
# patterns (unit stride, stride 2, stride 32, a random gather, a
# transposed store, a guarded tail, shared reads with 0, 1 and 31
# conflicts) and prints, from a host replay of every warp's accesses on
# the real pointers, the exact counts gpu:mem must give: requests by
# sectors, by active lanes, per kernel, the lowest and highest request
# address, bytes, conflicts by stride, unit's source line.  Every
# expected line must be in the traced run's output, and no other key;
# `@[insn] = count()` equals the warp instructions executed; hist(sectors)
# has the replay's buckets; the program's own results (its per-kernel
# sums and checksum) are those of the native run.  The expectations are
# the traced run's own: they hold device addresses, which change per run.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-mem.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
# nvcc's default PTX (compute_75: `addr` by shuffles) and compute_90's
# (redux.sync)
"$NVCC" -O2 -lineinfo -o "$T/mem75" tests/gpu/mem.cu &&
	"$NVCC" -O2 -lineinfo -gencode arch=compute_90,code=compute_90 \
		-o "$T/mem90" tests/gpu/mem.cu || { echo "FAIL build"; exit 1; }
nfail=0
ok() { echo "PASS $TAG: $1"; }
bad() {
	echo "FAIL $TAG: $1: $2"
	nfail=$((nfail + 1))
}
for TAG in mem75 mem90; do
cp "$T/$TAG" "$T/mem"

"$T/mem" >"$T/native.out" || { echo "FAIL native run"; exit 1; }
# the program's results: "KERNEL SUM" per launch and "checksum SUM"
results() {
	grep -E '^(unit|stride2|stride32|gather|transpose|tail|smem|checksum) -?[0-9]+\.[0-9]$' "$1"
}
results "$T/native.out" >"$T/native.res"
[ "$(wc -l <"$T/native.res")" = 10 ] || { echo "FAIL: the native run printed $(wc -l <"$T/native.res") results, want 10"; exit 1; }

prog='gpu:mem:* { @s[kernel, store, sectors] = count(); @l[kernel, store, lanes] = count(); @n[kernel] = count(); @lo[kernel, store] = min(addr); @hi[kernel, store] = max(addr); @z[kernel, store] = sum(size * lanes); @i[kernel, insn] = count(); }
gpu:mem:*:shared { @c[kernel, arg1, store, conflicts] = count(); }
gpu:mem:unit { @ln[kernel, line] = count(); }'
echo "    $TAG: the traced run"
timeout -k 5 90 "$GT" -q -c "$T/mem" -e "$prog" >"$T/traced.out" 2>"$T/traced.err" &
g=$!
i=0
while kill -0 $g 2>/dev/null && [ $i -lt 120 ]; do i=$((i + 1)); sleep 0.5; done
kill -0 $g 2>/dev/null && {
	# a kernel stuck on the GPU keeps it busy; a tracer stuck does not
	echo "    $TAG: still running after 60 s; GPU busy: $(nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader)"
	ps -o pid,stat,wchan:20,etime,args --ppid $g | sed 's/^/    /'
}
wait $g
rc=$?
[ $rc -eq 0 ] && ok "gputrace -c mem exits 0" ||
	{ bad "gputrace -c mem" "exit status $rc"; tail -5 "$T/traced.err"; }

# the program's results unchanged
results "$T/traced.out" | cmp -s "$T/native.res" - &&
	ok "results identical to the native run ($(grep checksum "$T/native.res"))" ||
	bad "results identical" "native: $(tr '\n' ' ' <"$T/native.res"); traced: $(results "$T/traced.out" | tr '\n' ' ')"

# what this run must count, from its own replay (its addresses)
sed -n 's/^expect //p' "$T/traced.out" | sort >"$T/want"
[ "$(wc -l <"$T/want")" -gt 20 ] || { bad "expectations" "the traced run printed $(wc -l <"$T/want")"; continue; }

# every expected map line, exactly
missing=0
while IFS= read -r line; do
	grep -qxF "$line" "$T/traced.out" || {
		missing=$((missing + 1))
		[ $missing -le 10 ] && echo "    want: $line; got: $(grep -F "${line%%]*}]" "$T/traced.out" | grep -m1 '^@')"
	}
done <"$T/want"
[ $missing -eq 0 ] && ok "all $(wc -l <"$T/want") expected counts (sectors, lanes, requests, addresses, bytes, conflicts, line) match" ||
	bad "expected counts" "$missing of $(wc -l <"$T/want") differ"
# and no key the replay did not predict
for m in s l n lo hi z c ln; do
	got=$(grep -c "^@$m\[" "$T/traced.out")
	want=$(grep -c "^@$m\[" "$T/want")
	[ "$got" = "$want" ] || bad "keys of @$m" "$got keys printed, $want expected"
done

# @[insn] = count(): the warp instructions each memory instruction ran
for k in unit stride2 stride32 gather transpose tail; do
	total=$(sed -n "s/^@i\\[$k, [0-9]*\\]: //p" "$T/traced.out" | awk '{ s += $1 } END { print s + 0 }')
	want=$(sed -n "s/^@n\\[$k\\]: //p" "$T/want")
	[ "$total" = "$want" ] && ok "$k: @i[insn] sums to the $want warp instructions executed" ||
		bad "$k: @i[insn]" "sum $total, want $want"
done
w=$(sed -n 's/^@n\[unit\]: //p' "$T/want")
[ "$(grep -c "^@i\\[unit, [0-9]*\\]: $((w / 2))\$" "$T/traced.out")" = 2 ] &&
	ok "unit: two instructions, $((w / 2)) warps each" ||
	bad "unit: @i" "$(grep '^@i\[unit' "$T/traced.out" | tr '\n' ' ')"

# hist(sectors) on stride2: 2048 loads in [8, 16), 2048 stores in [4, 8)
timeout 120 "$GT" -q -c "$T/mem" -e 'gpu:mem:stride2 { @h = hist(sectors); }' >"$T/hist.out" 2>&1
h8=$(sed -n 's/^\[8, 16) *\([0-9]*\) .*/\1/p' "$T/hist.out")
h4=$(sed -n 's/^\[4, 8) *\([0-9]*\) .*/\1/p' "$T/hist.out")
wl=$(sed -n 's/^@s\[stride2, 0, 8\]: //p' "$T/want")
ws=$(sed -n 's/^@s\[stride2, 1, 4\]: //p' "$T/want")
[ "$h8" = "$wl" ] && [ "$h4" = "$ws" ] && ok "hist(sectors) on stride2: [8, 16) $h8, [4, 8) $h4" ||
	bad "hist(sectors) on stride2" "[8, 16) '$h8' want $wl, [4, 8) '$h4' want $ws"

# the runtime's other paths in a gpu:mem clause (printf, assignment,
# avg, stats, keyed hist, lhist, a lane's own threadIdx): gather's three
# instructions (two loads, one store) in each of its 2048 full warps,
# every clause run once per warp on lane 0's values
ops='gpu:mem:gather { printf("g %d %d\n", insn, threadIdx.x); @u[insn] = lanes; @av = avg(lanes); @st = stats(size); @h[lanes] = hist(sectors); @sm[threadIdx.x] = count(); @lh = lhist(store, 0, 2, 1); }'
timeout 120 "$GT" -q -c "$T/mem" -e "$ops" >"$T/ops.out" 2>"$T/ops.err"
wg=$(sed -n 's/^@n\[gather\]: //p' "$T/want")
np=$(grep -cE '^g [0-9]+ (0|32|64|96|128|160|192|224)$' "$T/ops.out")
ni=$(sed -n 's/^g \([0-9]*\) [0-9]*$/\1/p' "$T/ops.out" | sort | uniq -c |
	awk -v w=$((wg / 3)) '$1 == w { n++ } END { print n + 0 }')
[ "$np" = "$wg" ] && [ "$ni" = 3 ] &&
	ok "gather: $np printf lines, each instruction's $((wg / 3)), lane 0's threadIdx.x" ||
	bad "gather: printf" "$np lines of $wg, $ni instructions with $((wg / 3)): $(grep -m3 -v '^g ' "$T/ops.out" "$T/ops.err" | tr '\n' ' ')"
[ "$(grep -c '^@u\[[0-9]*\]: 32$' "$T/ops.out")" = 3 ] &&
	grep -qx '@av: 32' "$T/ops.out" &&
	grep -qx "@st: count $wg, average 4, total $((4 * wg))" "$T/ops.out" &&
	[ "$(grep -c '^@sm\[\(0\|32\|64\|96\|128\|160\|192\|224\)\]: '$((wg / 8))'$' "$T/ops.out")" = 8 ] &&
	grep -q "^\[0, 1) *$((2 * wg / 3)) " "$T/ops.out" &&
	grep -q "^\[1, 2) *$((wg / 3)) " "$T/ops.out" &&
	[ "$(sed -n '/^@h\[32\]:/,/^$/s/^\[[^]]*[])] *\([0-9]*\) |.*/\1/p' "$T/ops.out" |
		awk '{ s += $1 } END { print s + 0 }')" = "$wg" ] &&
	ok "gather: assignment, avg, stats, lhist, keyed hist and threadIdx keys exact" ||
	bad "gather: runtime paths" "$(grep '^@' "$T/ops.out" | tr '\n' ' ')"

# -v: every kernel instrumented, nothing left out
timeout 120 "$GT" -v -q -c "$T/mem" -e 'gpu:mem:* { @c = count(); }' >/dev/null 2>"$T/v.err"
grep -q 'left out of gpu:mem\|gpu:mem clauses are left out' "$T/v.err" && bad "-v" "$(grep -m1 'gpu:mem' "$T/v.err")" ||
	ok "-v: no memory instruction left out"
for k in unit stride2 stride32 gather transpose tail smem; do
	grep -q "instrumented $k \[" "$T/v.err" || bad "-v" "$k not instrumented: $(grep -m1 "$k" "$T/v.err")"
done
done

[ $nfail -eq 0 ] || exit 1
exit 0
