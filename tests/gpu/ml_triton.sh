#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: device probes on a hand-written Triton kernel in a PyTorch job
# (issue 36).  tests/gpu/ml/train.py (see ml_train.sh) launches
# gt_add_kernel, a vector add with BLOCK 1024 and num_warps W, K times on
# a grid of G; Triton loads it as a cubin whose PTX rides in its
# .nv_debug_ptx_txt section.  One python process per probe set.  Checks:
#   - losses, the graph's output and the sums bit-identical to the
#     native run, gputrace exits 0
#   - gpu:warp = K x G x W; gpu:kernel = K x G x W x 32 (a count of 0:
#     the kernel was not instrumented, FAIL with gputrace's reason)
# Skips (77) where python3 cannot import torch and triton or torch sees
# no GPU.
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/ml/lib.sh
need_py torch triton
train_native

# ---- device: the Triton kernel, per warp and per thread
gt warp 'gpu:warp:gt_add_kernel { @w = count(); }' "$CMD"
same_as_native warp "$SAME"
w=$(val warp @w)
[ "${w:-0}" = 0 ] && bad "gpu:warp gt_add_kernel" "0 warps: $(why_zero warp gt_add_kernel)" ||
	expect_eq "gpu:warp gt_add_kernel = $K x $G x $W" "$w" $((K * G * W))

gt thread 'gpu:kernel:gt_add_kernel { @t = count(); }' "$CMD"
same_as_native thread "$SAME"
t=$(val thread @t)
[ "${t:-0}" = 0 ] && bad "gpu:kernel gt_add_kernel" "0 threads: $(why_zero thread gt_add_kernel)" ||
	expect_eq "gpu:kernel gt_add_kernel = $K x $G x $W x 32" "$t" $((K * G * W * 32))

[ "$nfail" -eq 0 ]
