#!/bin/sh
# SPDX-License-Identifier: MIT
#
# gpu:sample -p on a running PyTorch loop, and where the loop hangs after
# the detach (by hand, not in `make gpu-check`; issue 33): starts
# tests/gpu/sample_torch.py, attaches with -p for
# 2 s, then watches the loop's progress for 12 s; if it stopped, prints
# every thread's stack (cuda-gdb, host side, none cut) and kills it.
# Run: sh tests/gpu/sample/attach_gdb.sh >log
cd "$(dirname "$0")/../../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
G=${CUDA_HOME:-/usr/local/cuda}/bin/cuda-gdb
python3 -c 'import torch' 2>/dev/null || { echo "SKIP: no torch"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-sampattach.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
export CUBLAS_WORKSPACE_CONFIG=:4096:8
python3 tests/gpu/sample_torch.py 1500 "$T/ready" >"$T/prog" 2>&1 &
tp=$!
i=0
while [ ! -f "$T/ready" ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done
timeout -k 5 40 "$GT" -v -q -p $tp -e \
	'gpu:sample { @t[kernel] = sum(samples); } interval:s:2 { exit(); }' \
	</dev/null >"$T/out" 2>"$T/err"
echo "gputrace status $?; $(grep -c '^@' "$T/out") kernels sampled"
grep -v 'dlsym\|no clause' "$T/err" | tail -n 12
for k in 1 2 3 4 5 6; do
	sleep 2
	echo "t+$((2 * k))s: $(grep -c '^loss' "$T/prog") loss lines"
done
if kill -0 $tp 2>/dev/null && [ -x "$G" ]; then
	timeout -k 5 90 "$G" -batch -nx -p $tp -ex 'thread apply all bt 30' \
		-ex 'detach' 2>&1 | grep -v '^\[New'
fi
kill -9 $tp 2>/dev/null
tail -n 3 "$T/prog"
