#!/bin/sh
# SPDX-License-Identifier: MIT
# The lowered probes and the device runtime on the GPU, checked against
# a host eBPF interpreter and computed totals (tests/lower/gpu_lower.c).
# Exit 0 pass, 1 fail, 77 skip.
out=$(sh tests/lower/run_gpu.sh 2>&1)
rc=$?
echo "$out"
case $out in "SKIP"*) exit 77 ;; esac
echo "$out" | tail -n 1 | grep -q ' 0 failed$' && [ $rc -eq 0 ] || exit 1
exit 0
