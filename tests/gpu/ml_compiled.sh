#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU: a model under torch.compile (issue 36): Inductor generates Triton
# kernels (triton_poi_*, triton_per_*, ...), loaded as cubins.
# tests/gpu/ml/compiled.py runs the compiled forward pass 10 times.  The
# native run compiles once and fills Inductor's and Triton's caches; the
# traced run (one python process, one probe set) loads from them.
# Checks:
#   - outputs bit-identical to the native run, gputrace exits 0
#   - per Inductor kernel, gpu:kernel's count = the sum over its launches
#     of grid x block that cuda:launch saw, with the same kernel names on
#     both sides (-f json); a count of 0: FAIL with gputrace's reason
# Skips (77) where python3 cannot import torch and triton or torch sees
# no GPU.
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/ml/lib.sh
need_py torch triton
CMD="$PY $ML/compiled.py --calls 10"
timeout 280 $CMD >"$T/native.prog" 2>"$T/native.err" ||
	{ cat "$T/native.err"; echo "FAIL native run"; exit 1; }
grep -q '^compiled ok$' "$T/native.prog" || { echo "FAIL native: compiled output wrong"; exit 1; }

gt dev 'cuda:launch:triton_* {
	@n[kernel] = sum(gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z);
}
gpu:kernel:triton_* { @t[kernel] = count(); }' "$CMD"
same_as_native dev '\(out \|compiled ok\)'
map dev @n >"$T/n.tsv"
map dev @t >"$T/t.tsv"
nk=$(wc -l <"$T/n.tsv")
[ "$nk" -gt 0 ] && ok "cuda:launch: $nk Inductor kernels" ||
	bad "cuda:launch:triton_*" "no Inductor kernel launched"
while IFS='	' read -r k n; do
	t=$(awk -F '\t' -v k="$k" '$1 == k { print $2 }' "$T/t.tsv")
	if [ "${t:-0}" = 0 ]; then
		bad "gpu:kernel $k" "0 threads for $n launched: $(why_zero dev "$k")"
	else
		expect_eq "gpu:kernel $k = grid x block of its launches" "$t" "$n"
	fi
done <"$T/n.tsv"
# a device name that cuda:launch never saw: the two sides name apart
while IFS='	' read -r k t; do
	grep -q "^$k	" "$T/n.tsv" 2>/dev/null ||
		bad "gpu:kernel $k" "a name cuda:launch did not give"
done <"$T/t.tsv"
[ "$nfail" -eq 0 ]
