#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: tools/coalescing.gt on Triton kernels (issue 34, with the PTX of
# their cubins' .nv_debug_ptx_txt, issue 36): bench/workloads/
# triton_kernels.py, a fused row softmax (ROWS x COLS float32, one
# program per row, every row's load and store contiguous and aligned)
# and an fp16 matmul with a float32 C, each launched L times, and no
# other kernel in the process.  Checks:
#   - gputrace exits 0, the program's results and checksums as natively
#   - rows for both kernels, every row plausible (mem/coalescing.sh)
#   - softmax: every instruction 100% efficient (each request touches
#     the ideal sectors: ceil(lanes x size / 32), 4 for 32 lanes of one
#     float, 16 for 32 lanes of float4), and the sectors of all requests
#     (requests x average, summed) = L x ROWS x COLS x 4 bytes x 2 (the
#     load of x, the store of y) / 32: whatever vector width Triton
#     picked, every byte once, nothing counted twice or missed
#   - matmul: sectors (bounded: avg is printed truncated) at least C's,
#     L x 2048^2 x 4 / 32 (its loads go through cp.async, not counted,
#     or plain loads, counted)
# Skips (77) without a GPU or where python3 cannot import torch and
# triton.
cd "$(dirname "$0")/../.." || exit 1
PY=${PYTHON:-python3}
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
for m in torch triton; do
	"$PY" -c "import $m" >/dev/null 2>&1 || { echo "SKIP: $PY cannot import $m"; exit 77; }
done
"$PY" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' ||
	{ echo "SKIP: torch sees no GPU"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-memtriton.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
export TRITON_CACHE_DIR="$T/triton"
. tests/gpu/mem/coalescing.sh
CMD="$PY bench/workloads/triton_kernels.py 3"

$CMD >"$T/native.out" 2>"$T/native.err" ||
	{ cat "$T/native.err"; echo "FAIL native run"; exit 1; }
grep -q '^results ok$' "$T/native.out" || { echo "FAIL native: results"; exit 1; }
sed -n 's/^triton \([^ ]*\) launches .*/\1/p' "$T/native.out" >"$T/launched"
set -- $(sed -n 's/^triton gt_softmax_kernel launches \([0-9]*\) .*/\1/p' "$T/native.out") \
	$(sed -n 's/^shape gt_softmax_kernel \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$T/native.out") \
	$(sed -n 's/^triton gt_matmul_kernel launches \([0-9]*\) .*/\1/p' "$T/native.out")
L=$1 ROWS=$2 COLS=$3 LM=$4
[ -n "$LM" ] || { echo "FAIL native: no triton/shape lines"; cat "$T/native.out"; exit 1; }

coalescing triton "$CMD"
same_output triton '^\(checksum\|results\) '
rows_per_kernel triton "$T/launched"
plausible triton

# softmax: exact
awk -F'\t' '$1 == "gt_softmax_kernel"' "$T/triton.rows" >"$T/sm"
eff=$(cut -f6 "$T/sm" | sort -u | tr '\n' ' ')
expect_eq "gt_softmax_kernel: every instruction's efficiency (%)" "$eff" "100 "
expect_eq "gt_softmax_kernel: sectors = $L x $ROWS x $COLS x 4 x 2 / 32" \
	"$(awk -F'\t' '{ s += $4 * $5 } END { print s + 0 }' "$T/sm")" \
	$((L * ROWS * COLS * 4 * 2 / 32))
echo "    gt_softmax_kernel (insn, line, requests, sectors, %):"
cut -f2- "$T/sm" | sort -n | sed 's/^/      /'

# matmul: at least C's sectors.  avg() prints a truncated integer, so a
# row's own total lies in [requests x avg, requests x (avg + 1)): the
# upper end must reach C's sectors (on the H100 the lower end summed to
# 97.7% of them, its stores having uneven sector counts)
awk -F'\t' '$1 == "gt_matmul_kernel"' "$T/triton.rows" >"$T/mm"
s=$(awk -F'\t' '{ s += $4 * ($5 + 1) } END { print s + 0 }' "$T/mm")
want=$((LM * 2048 * 2048 * 4 / 32))
[ "$s" -gt "$want" ] && ok "gt_matmul_kernel: up to $s sectors, more than C's $want" ||
	bad "gt_matmul_kernel: sectors" "at most $s, want more than $want"
echo "    gt_matmul_kernel (insn, line, requests, sectors, %):"
cut -f2- "$T/mm" | sort -n | sed 's/^/      /'
grep -h 'gt_.*kernel' "$T/triton.err" | grep -i 'instrumented\|left out\|skipped' | head -6 | sed 's/^/    | /'

[ "$nfail" -eq 0 ]
