#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: a PyTorch training job under gputrace -c (issue 36, "The ML
# stack, part 1").  tests/gpu/ml/train.py trains a small model (Linear,
# GELU, LayerNorm, cross-entropy, Adam; deterministic), replays a CUDA
# graph of its forward pass 20 times and launches a Triton vector add
# (gt_add_kernel: grid G, num_warps W) 10 times.  One python process per
# probe set (ml_triton.sh: the device probes on the Triton kernel).
# Checks:
#   - losses, the graph's output and the Triton sums bit-identical to the
#     native run under every probe set; gputrace exits 0 (target alive)
#   - the agent's segment is not lost in a python process (no "cannot
#     map the segment")
#   - cuda:complete per kernel = launches outside the capture + 20 x the
#     launches captured (the graph's nodes: launches on the capture
#     stream inside the capture window train.py prints), every
#     duration > 0
#   - gpu:kernel:* over every kernel with kname(kernel) keys, and
#     cuda:launch with kname(kernel): results identical, the Triton
#     kernel's row exact
# Skips (77) where python3 cannot import torch and triton or torch sees
# no GPU.
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/ml/lib.sh
need_py torch triton
train_native

# ---- host: every launch (by stream) and every kernel run
# Captured launches: those on the capture stream inside the capture
# window that train.py prints (CLOCK_MONOTONIC, as nsecs).  Not every
# launch on that stream: torch.cuda.graph fills its RNG state there
# before the capture begins and after it ends (FillFunctor<long>, 4
# launches on the H100, 2026-12-06), and those are no graph nodes.
# @w keeps each launch off the default stream with its time (the
# warm-up and the capture: tens of rows).
gt host 'cuda:launch { @l[stream, kernel] = count(); }
cuda:launch /stream != 0/ { @w[nsecs, stream, kernel] = count(); }
cuda:complete { @c[kernel] = count(); @z = sum(duration == 0); }' "$CMD"
same_as_native host "$SAME"
grep -q 'cannot map the segment' "$T/host.err" &&
	bad "host: the agent's segment" "$(grep 'cannot map' "$T/host.err" | head -1)"
cap=$(sed -n 's/^capture_stream //p' "$T/host.prog")
win=$(sed -n 's/^capture_window //p' "$T/host.prog")
[ -n "$win" ] || bad "host: capture window" "train.py printed none"
map host @l >"$T/l.tsv"
map host @w >"$T/w.tsv"
map host @c >"$T/c.tsv"
# per kernel: runs seen, and launches - captured + R x captured.  Times
# compare as digit strings (awk's numbers are doubles).
awk -F '\t' -v cap="$cap" -v win="$win" -v R=$R '
function le(a, b) { a = a ""; b = b ""
	return length(a) < length(b) || (length(a) == length(b) && a <= b) }
BEGIN { split(win, W, " ") }
FILENAME ~ /l[.]tsv$/ { i = index($1, ","); k = substr($1, i + 1)
	L[k] += $2; next }
FILENAME ~ /w[.]tsv$/ { i = index($1, ","); t = substr($1, 1, i - 1)
	r = substr($1, i + 1); j = index(r, ","); s = substr(r, 1, j - 1)
	k = substr(r, j + 1)
	if (s == cap && le(W[1], t) && le(t, W[2])) { C[k] += $2; n += $2 }
	else if (s == cap) O += $2
	next }
{ c[$1] = $2 }
END {
	for (k in L) print k "\t" c[k] + 0 "\t" L[k] - C[k] + R * C[k] "\t" C[k] + 0
	for (k in c) if (!(k in L)) print k "\t" c[k] "\t0\t0"
	print n + 0, O + 0 >"/dev/stderr"
}' "$T/l.tsv" "$T/w.tsv" "$T/c.tsv" 2>"$T/ncap" | grep -v '^__gputrace' >"$T/cmp.tsv"
nk=$(wc -l <"$T/cmp.tsv")
[ "$nk" -gt 5 ] && ok "host: $nk kernels" || bad "host: kernels" "only $nk in @l/@c"
read -r ncapl nout <"$T/ncap"
ncap=$(awk -F '\t' '$4 > 0' "$T/cmp.tsv" | wc -l)
[ "$ncap" -gt 0 ] && ok "host: $ncap kernels in the graph ($ncapl launches captured, $nout on the capture stream outside the capture)" ||
	bad "host: graph nodes" "no launch on the capture stream $cap inside the capture window $win"
while IFS='	' read -r k got want captured; do
	expect_eq "cuda:complete $k = launches + $R x $captured nodes" "$got" "$want"
done <"$T/cmp.tsv"
expect_eq "cuda:complete: durations > 0" "$(val host @z)" 0

# ---- every kernel (most are SASS only: they run unchanged), short names
gt all 'gpu:kernel:* { @k[kname(kernel)] = count(); }
cuda:launch { @n[kname(kernel)] = count(); }' "$CMD"
same_as_native all "$SAME"
expect_eq "gpu:kernel:* gt_add_kernel = $K x $G x $W x 32" \
	"$(val all @k gt_add_kernel)" $((K * G * W * 32))
# Only names kname() can fold count: cuBLAS's extern "C" kernels have no
# template arguments or parameters to fold and some are over 120
# characters themselves (sm80_xmma_gemm_..._execute_kernel__5x_cublas,
# 121): kname() keeps those whole, as Nsight does.
map all @n | awk -F '\t' 'length($1) > 120 && $1 ~ /[<(]/' >"$T/long"
sed 's/^/    long: /' "$T/long"
expect_eq "kname(kernel): no folded name over 120 characters" "$(wc -l <"$T/long")" 0
expect_eq "kname(kernel): the Triton kernel launched $K times" "$(val all @n gt_add_kernel)" "$K"
[ "$nfail" -eq 0 ]
