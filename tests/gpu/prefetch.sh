#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: instrumenting ahead (GPUTRACE_PREFETCH=1) when the program exits
# while workers compile.  The case that aborted targets (docs/agent.md):
# the program's own module comes from the driver's JIT cache, the copies
# do not, so the first compile that loads the driver's PTX compiler is a
# worker's.  Each round has a cache of its own (CUDA_CACHE_PATH): the
# program alone first (it fills the cache with its module), then traced:
# `gpu:kernel:*` on tests/gpu/gpuprog.cu's multi (5 kernels, vadd 3 times
# and scale twice, then exit; the others made ahead).  Every traced run
# must end with status 0, its agent's final snapshot, and the counts.
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-pf.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -o "$T/gpuprog" tests/gpu/gpuprog.cu || { echo "FAIL build"; exit 1; }
P=$T/gpuprog
nfail=0
ROUNDS=${ROUNDS:-5}

for i in $(seq 1 "$ROUNDS"); do
	export CUDA_CACHE_PATH="$T/cache$i"
	"$P" multi >/dev/null || { echo "FAIL round $i: native run"; exit 1; }
	GPUTRACE_PREFETCH=1 timeout 120 "$GT" -q -v -c "$P multi" \
		-e 'gpu:kernel:* /threadIdx.x == 0 && blockIdx.x == 0/ { @k[kernel] = count(); }' \
		>"$T/out" 2>"$T/err"
	rc=$?
	v=$(sed -n 's/^@k\[vadd\]: //p' "$T/out")
	s=$(sed -n 's/^@k\[scale\]: //p' "$T/out")
	if [ $rc = 0 ] && [ "$v" = 3 ] && [ "$s" = 2 ] &&
	   ! grep -q 'without a final snapshot' "$T/err" &&
	   grep -q 'instrumenting ahead [1-9][0-9]* more kernels' "$T/err"; then
		echo "PASS round $i: status 0, @k[vadd] 3, @k[scale] 2, kernels made ahead"
	else
		echo "FAIL round $i: status $rc, @k[vadd] '$v', @k[scale] '$s'"
		grep -v 'info: dlsym\|cuGetProcAddress' "$T/err" | tail -n 30 |
			sed 's/^/    /'
		nfail=$((nfail + 1))
	fi
done
[ "$nfail" -eq 0 ]
