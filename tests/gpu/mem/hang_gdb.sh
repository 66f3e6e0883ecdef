#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Issue 34's hang under cuda-gdb (by hand, not in `make gpu-check`):
# starts tests/gpu/mem.cu under the global clause A and the :shared
# clause B of hang_bisect.sh (B with a one-word key, variant a_b8), waits
# WAIT_S seconds, attaches cuda-gdb to the hung process and prints the
# warps, every lane's PC and state, lane 3's and lane 0's registers (the
# mask of the barrier each waits at) and the kernel's SASS; then kills
# it.  Run from the repository root: sh tests/gpu/mem/hang_gdb.sh >log
cd "$(dirname "$0")/../../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
G=$CUDA/bin/cuda-gdb
[ -x "$G" ] || { echo "SKIP: no cuda-gdb"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-memgdb.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$CUDA/bin/nvcc" -O2 -lineinfo -gencode arch=compute_90,code=compute_90 \
	-o "$T/mem" tests/gpu/mem.cu || exit 1
BODY='{ @s[kernel, store, sectors] = count(); @l[kernel, store, lanes] = count(); @n[kernel] = count(); @lo[kernel, store] = min(addr); @hi[kernel, store] = max(addr); @z[kernel, store] = sum(size * lanes); @i[kernel, insn] = count(); }'
B='gpu:mem:*:shared { @c[conflicts] = count(); }'
timeout -k 3 100 "$GT" -v -q -c "$T/mem" -e "gpu:mem:smem $BODY $B" \
	>"$T/out" 2>"$T/err" &
sleep "${WAIT_S:-9}"
pid=$(pgrep -f "^$T/mem" | head -n 1)
[ -n "$pid" ] || { echo "mem.cu is not running (no hang?)"; cat "$T/err"; exit 1; }
timeout -k 5 80 "$G" -batch -nx -p "$pid" -ex 'info cuda warps' \
	-ex 'info cuda lanes' -ex 'cuda lane 3' -ex 'info registers' \
	-ex 'cuda lane 0' -ex 'info registers' -ex 'disassemble' -ex 'detach'
kill "$pid" 2>/dev/null
wait
