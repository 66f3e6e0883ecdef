#!/bin/sh
# SPDX-License-Identifier: MIT
# The splicer on real kernels: tests/ptx/run_gpu.sh runs every
# tests/cuda/k_*.cu kernel original and instrumented and compares.
out=$(sh tests/ptx/run_gpu.sh 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit 1
echo "$out" | grep -q '^FAIL' && exit 1
echo "$out" | grep -q '^PASS' || exit 77
exit 0
