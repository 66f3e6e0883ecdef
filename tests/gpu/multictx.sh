#!/bin/sh
# SPDX-License-Identifier: MIT
# Device probes in two contexts of one process: one instrumented copy per
# context, device maps per context merged by the tracer; both contexts
# are destroyed before the program ends, so the maps come from the
# copies the agent keeps of them (a map kept per kernel: its slots in use).
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-mctx.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -o "$T/multictx" tests/gpu/multictx.cu -lcuda || exit 1
"$T/multictx" >"$T/native" || { echo "FAIL native run"; exit 1; }
want=$(sed -n 's/^expect warps //p' "$T/native")
timeout 120 "$GT" -q -c "$T/multictx" \
	-e 'gpu:warp:vadd { @w = count(); @g[gpu] = count(); @k[kernel] = count(); }' \
	>"$T/out" 2>"$T/err"
got=$(sed -n 's/^@w: //p' "$T/out")
gpu0=$(sed -n 's/^@g\[0\]: //p' "$T/out")
kv=$(sed -n 's/^@k\[vadd\]: //p' "$T/out")
ok=0
[ "$got" = "$want" ] && echo "PASS warps over both contexts ($got)" ||
	{ echo "FAIL warps: got '$got', want '$want'"; ok=1; }
[ "$gpu0" = "$want" ] && echo "PASS @g[0] ($gpu0)" ||
	{ echo "FAIL @g[0]: got '$gpu0'"; ok=1; }
[ "$kv" = "$want" ] && echo "PASS @k[vadd] ($kv)" ||
	{ echo "FAIL @k[vadd]: got '$kv'"; ok=1; }
grep -q "$(grep checksum "$T/native")" "$T/out" && echo "PASS results identical" ||
	{ echo "FAIL results differ"; ok=1; }
[ $ok -eq 0 ] || { cat "$T/out" "$T/err" | head -20; }
exit $ok
