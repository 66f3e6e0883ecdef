#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU: gpu:sample (CUPTI PC sampling) against ground truth.  Builds
# tests/gpu/sample.cu (a memory-bound stream_scale, an FMA-bound
# fma_chain, cuBLAS SGEMMs; it prints checksums) and runs it natively and
# under gputrace -c with gpu:sample and cuda:complete in one process:
#   - the checksums are identical to the native run's;
#   - every kernel cuda:complete saw has samples (the cuBLAS GEMM too);
#   - stream_scale's dominant stall is a memory one (long_scoreboard,
#     lg_throttle, tex_throttle, drain, membar), fma_chain's is not;
#   - samples(stream_scale) / samples(fma_chain) is within 20% of
#     duration(stream_scale) / duration(fma_chain);
#   - with torch (python3 -c 'import torch', a GPU): a small training
#     loop under -c: a cuBLAS GEMM and PyTorch's own kernels (at::native)
#     have samples, the losses are identical to a native run; three -p
#     cycles on one running loop sample its kernels by name and the loop
#     ends with the native losses.
# Prints PASS/FAIL per check; exit 0 when all pass, 1 otherwise, 77
# without nvcc.
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$(command -v nvcc || echo "$CUDA/bin/nvcc")}
[ -x "$NVCC" ] || { echo "no nvcc"; exit 77; }
[ -x "$GT" ] || { echo "no gputrace at $GT"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gpu_sample.XXXXXX") || exit 1
trap 'kill $tp 2>/dev/null; rm -rf "$T"' EXIT
failed=0

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; failed=1; }

"$NVCC" -O2 -arch=native -o "$T/sample" tests/gpu/sample.cu -lcublas \
	2>"$T/nvcc" ||
	"$NVCC" -O2 -arch=sm_90 -o "$T/sample" tests/gpu/sample.cu -lcublas \
		2>>"$T/nvcc" || { echo "FAIL build:"; cat "$T/nvcc"; exit 1; }
"$T/sample" >"$T/native" || { echo "FAIL sample does not run natively"; exit 1; }

timeout -k 5 240 "$GT" -q -c "$T/sample" -e '
gpu:sample { @s[kernel, stall] = sum(samples); @n[kernel] = sum(samples); }
cuda:complete { @d[kernel] = sum(duration); @c[kernel] = count(); }
' </dev/null >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || { fail "-c: gputrace status $rc"; sed 's/^/    /' "$T/err"; }
sed 's/^/    stderr: /' "$T/err"

# 1. results
grep -E '^(stream|fma|gemm) ' "$T/out" >"$T/traced"
if cmp -s "$T/native" "$T/traced"; then
	pass "checksums identical to native ($(wc -l <"$T/native") results)"
else
	fail "checksums differ (-native +traced):"
	diff -u "$T/native" "$T/traced" | sed 's/^/    /'
fi

# MAP: "KEY<TAB>VALUE" lines of @MAP
keyed() { sed -n "s/^@$1\[\(.*\)\]: \([0-9][0-9]*\)\$/\1	\2/p" "$T/out"; }
keyed n >"$T/n"
keyed d >"$T/d"
keyed c >"$T/c"
keyed s >"$T/s"
val() { awk -F '\t' -v k="$2" '$1 == k { print $2 }' "$T/$1"; }

# 2. every kernel that ran has samples
nk=$(wc -l <"$T/c")
miss=$(awk -F '\t' 'NR == FNR { n[$1] = $2; next } !(n[$1] > 0) { print $1 }' \
	"$T/n" "$T/c")
if [ "$nk" -ge 3 ] && [ -z "$miss" ]; then
	pass "all $nk kernels have samples: $(cut -f1 "$T/c" | tr '\n' ' ')"
else
	fail "kernels without samples ($nk ran): $miss"
	cat "$T/out" | grep '^@' | sed 's/^/    /'
fi
grep -qiE 'gemm|cublas|cutlass|xmma' "$T/n" &&
	pass "a cuBLAS kernel has samples: $(grep -iE 'gemm|cublas|cutlass|xmma' "$T/n" | head -1)" ||
	fail "no cuBLAS kernel among the sampled ones"

# 3. dominant stalls (no _not_issued subset may reach the probe)
top() {
	awk -F '\t' -v k="$1" '{
		n = split($1, p, ", "); st = p[n]
		kn = substr($1, 1, length($1) - length(p[n]) - 2)
		if (kn == k) s[st] += $2
	} END { for (x in s) if (s[x] > best) { best = s[x]; b = x } print b }' "$T/s"
}
mem='^(long_scoreboard|lg_throttle|tex_throttle|drain|membar)$'
st=$(top stream_scale)
fm=$(top fma_chain)
echo "$st" | grep -qE "$mem" && pass "stream_scale stalls most on $st" ||
	{ fail "stream_scale's dominant stall is '$st', not a memory one"; grep '^stream_scale' "$T/s" | sed 's/^/    /'; }
[ -n "$fm" ] && ! echo "$fm" | grep -qE "$mem" &&
	pass "fma_chain stalls most on $fm" ||
	{ fail "fma_chain's dominant stall is '$fm'"; grep '^fma_chain' "$T/s" | sed 's/^/    /'; }

grep -q '_not_issued	' "$T/s" &&
	fail "a _not_issued subset reached the probe: $(grep -m1 '_not_issued	' "$T/s")" ||
	pass "no _not_issued subset among the stalls"

# 4. samples follow the run time
ns=$(val n stream_scale); nf=$(val n fma_chain)
ds=$(val d stream_scale); df=$(val d fma_chain)
if [ -n "$ns" ] && [ -n "$nf" ] && [ -n "$ds" ] && [ -n "$df" ] &&
   awk -v a="$ns" -v b="$nf" -v c="$ds" -v d="$df" \
	'BEGIN { r = (a / b) / (c / d); printf "    ratio of ratios %.3f\n", r; exit !(r >= 0.8 && r <= 1.2) }'; then
	pass "samples $ns:$nf within 20% of durations $ds:$df ns"
else
	fail "samples $ns:$nf vs durations $ds:$df ns: not within 20%"
fi

# 5. PyTorch, when it is here
if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
	export CUBLAS_WORKSPACE_CONFIG=:4096:8
	python3 tests/gpu/sample_torch.py >"$T/tnative" 2>"$T/terr" ||
		{ fail "torch loop does not run natively"; cat "$T/terr"; }
	timeout -k 5 240 "$GT" -q -c "python3 tests/gpu/sample_torch.py" -e '
gpu:sample { @t[kernel] = sum(samples); }' </dev/null >"$T/tout" 2>"$T/terr"
	rc=$?
	[ $rc -eq 0 ] || { fail "torch -c: status $rc"; sed 's/^/    /' "$T/terr"; }
	grep '^loss ' "$T/tout" >"$T/tloss"
	if [ -s "$T/tloss" ] && grep '^loss ' "$T/tnative" | cmp -s - "$T/tloss"; then
		pass "torch: $(wc -l <"$T/tloss") losses identical to native"
	else
		fail "torch: losses differ (-native +traced)"
		grep '^loss ' "$T/tnative" | diff -u - "$T/tloss" | sed 's/^/    /'
	fi
	grep -E '^@t\[' "$T/tout" >"$T/tk"
	g=$(grep -iE 'gemm|cublas|cutlass|xmma' "$T/tk" | head -1)
	a=$(grep -E 'at::native::' "$T/tk" | head -1)
	[ -n "$g" ] && pass "torch: a cuBLAS GEMM has samples: $g" ||
		{ fail "torch: no cuBLAS GEMM sampled"; sed 's/^/    /' "$T/tk"; }
	[ -n "$a" ] && pass "torch: PyTorch's kernels have samples: $a" ||
		{ fail "torch: no at::native kernel sampled"; sed 's/^/    /' "$T/tk"; }

	# -p: three attach/detach cycles of 2 s on one running loop; each sees
	# cuBLAS's and PyTorch's kernels by name, a detach stops sampling on
	# the loop's own thread, and the loop runs on to its end with the
	# losses of a native run
	# the loop runs until the cycles are done (a stop file), then a
	# native run of as many steps gives the losses to compare
	rm -f "$T/ready" "$T/stop"
	python3 tests/gpu/sample_torch.py 10000000 "$T/ready" "$T/stop" \
		>"$T/aprog" 2>&1 &
	tp=$!
	i=0
	while [ ! -f "$T/ready" ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done
	ok=0
	for c in 1 2 3; do
		timeout -k 5 60 "$GT" -q -p $tp -e \
			'gpu:sample { @t[kernel] = sum(samples); } interval:s:2 { exit(); }' \
			</dev/null >"$T/aout" 2>"$T/aerr"
		rc=$?
		g=$(grep -E '^@t\[' "$T/aout" | grep -ciE 'gemm|cublas|cutlass|xmma')
		a=$(grep -E '^@t\[' "$T/aout" | grep -c 'at::native::')
		if [ $rc -eq 0 ] && [ "$g" -gt 0 ] && [ "$a" -gt 0 ]; then
			ok=$((ok + 1))
		else
			echo "    -p cycle $c: status $rc, $g GEMM and $a at::native kernels sampled"
			sed 's/^/    /' "$T/aerr" | tail -5
		fi
	done
	: >"$T/stop"
	i=0
	while kill -0 $tp 2>/dev/null && [ $i -lt 1200 ]; do i=$((i + 1)); sleep 0.1; done
	if kill -0 $tp 2>/dev/null; then
		fail "torch -p: the loop hung after the detach and its stop file ($(grep -c '^loss' "$T/aprog") loss lines)"
		kill -9 $tp
	fi
	wait $tp
	trc=$?
	last=$(sed -n 's/^loss \([0-9]*\) .*/\1/p' "$T/aprog" | tail -1)
	python3 tests/gpu/sample_torch.py $((${last:-0} + 1)) >"$T/anative" 2>&1 ||
		fail "torch loop of $((${last:-0} + 1)) steps does not run natively"
	grep '^loss ' "$T/anative" >"$T/aloss.n"
	grep '^loss ' "$T/aprog" >"$T/aloss.p"
	if [ $ok = 3 ] && [ $trc -eq 0 ] && [ -s "$T/aloss.n" ] &&
	   cmp -s "$T/aloss.n" "$T/aloss.p"; then
		pass "torch -p: 3 cycles sampled cuBLAS's and PyTorch's kernels, the loop's $(grep -c '^loss' "$T/aprog") losses identical to native"
	else
		fail "torch -p: $ok of 3 cycles, the loop's status $trc"
		diff -u "$T/aloss.n" "$T/aloss.p" | head -5 | sed 's/^/    /'
	fi
else
	echo "SKIP torch part: python3 cannot import torch with a GPU"
fi
exit $failed
