#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: tools/coalescing.gt on library kernels (issue 34): CUB sort,
# reduce, scan and thrust transform (tests/gpu/real/thrust_cub.cu).
# Checks:
#   - gputrace exits 0, the program's results and checksum as natively
#   - coalescing.gt printed rows (requests, average sectors, efficiency)
#     for every kernel the program launched (cuda:launch names them, the
#     same names the device keys use; all carry PTX: built for sm_90)
#   - every row plausible: requests > 0, 1 <= average sectors <= 64
#     (32 lanes of at most 32 bytes, each in at most 2 sectors),
#     efficiency (ideal sectors over sectors, %) between 1 and 3200
#     (a load all lanes share touches 1 sector for an ideal of up to 32)
# The Triton kernels under coalescing.gt, with exact figures: mem_triton.sh.
# Prints PASS/FAIL per check; exit 0 when all pass, 77 without nvcc or GPU.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-memreal.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -arch=sm_90 -o "$T/thrust_cub" tests/gpu/real/thrust_cub.cu ||
	{ echo "FAIL build"; exit 1; }
. tests/gpu/mem/coalescing.sh

"$T/thrust_cub" >"$T/native.out" || { echo "FAIL native thrust_cub"; exit 1; }
grep -q '^results ok$' "$T/native.out" || { echo "FAIL native: results"; exit 1; }

# the kernels the program launches, by the name device keys use
timeout 120 "$GT" -q -c "$T/thrust_cub" -e 'cuda:launch { @l[kernel] = count(); }' \
	>"$T/launch.out" 2>"$T/launch.err"
sed -n 's/^@l\[\(.*\)\]: [0-9]*$/\1/p' "$T/launch.out" | sort >"$T/launched"
n=$(wc -l <"$T/launched")
[ "$n" -ge 4 ] && ok "cuda:launch names $n kernels" ||
	bad "kernels launched" "$n: $(head -5 "$T/launch.err")"

coalescing thrust_cub "$T/thrust_cub"
same_output thrust_cub '^\(checksum\|results\) '
rows_per_kernel thrust_cub "$T/launched"
plausible thrust_cub

[ "$nfail" -eq 0 ]
