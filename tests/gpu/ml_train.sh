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
#     launches captured (the graph's nodes), every duration > 0
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
gt host 'cuda:launch { @l[stream, kernel] = count(); }
cuda:complete { @c[kernel] = count(); @z = sum(duration == 0); }' "$CMD"
same_as_native host "$SAME"
grep -q 'cannot map the segment' "$T/host.err" &&
	bad "host: the agent's segment" "$(grep 'cannot map' "$T/host.err" | head -1)"
cap=$(sed -n 's/^capture_stream //p' "$T/host.prog")
map host @l >"$T/l.tsv"
map host @c >"$T/c.tsv"
# per kernel: runs seen, and launches - captured + R x captured
awk -F '\t' -v cap="$cap" -v R=$R '
FNR == NR { i = index($1, ","); s = substr($1, 1, i - 1); k = substr($1, i + 1)
	    L[k] += $2; if (s == cap) C[k] += $2; next }
{ c[$1] = $2 }
END {
	for (k in L) print k "\t" c[k] + 0 "\t" L[k] - C[k] + R * C[k] "\t" C[k] + 0
	for (k in c) if (!(k in L)) print k "\t" c[k] "\t0\t0"
}' "$T/l.tsv" "$T/c.tsv" | grep -v '^__gputrace' >"$T/cmp.tsv"
nk=$(wc -l <"$T/cmp.tsv")
[ "$nk" -gt 5 ] && ok "host: $nk kernels" || bad "host: kernels" "only $nk in @l/@c"
ncap=$(awk -F '\t' '$4 > 0' "$T/cmp.tsv" | wc -l)
[ "$ncap" -gt 0 ] && ok "host: $ncap kernels in the graph" ||
	bad "host: graph nodes" "no launch on the capture stream $cap"
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
long=$(map all @n | awk -F '\t' 'length($1) > 120' | wc -l)
expect_eq "kname(kernel): no name over 120 characters" "$long" 0
expect_eq "kname(kernel): the Triton kernel launched $K times" "$(val all @n gt_add_kernel)" "$K"
[ "$nfail" -eq 0 ]
