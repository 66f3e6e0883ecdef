#!/bin/sh
# SPDX-License-Identifier: MIT
# Device probes on kernels loaded as cubins, instrumented from the PTX
# that -lineinfo leaves in the cubin (.nv_debug_ptx_txt): a cubin built
# with nvcc -lineinfo, loaded by tests/gpu/cubin_host.cu with
# cuModuleLoadData, cuLibraryLoadData, cuModuleLoad and
# cuLibraryLoadFromFile, and a fatbin holding only such a cubin (SASS, no
# PTX entry).  gpu:kernel and gpu:warp counts per kernel must equal
# launches x grid x block (graph launches included; one kernel uses 80 KB
# of dynamic shared memory, its limit raised by cuFuncSetAttribute), the
# results those of a native run.  On an sm_90 GPU, the Triton-like
# kernel of tests/cubin/triton_add.ptx (ptxas -lineinfo -arch=sm_90a:
# .reqntid, extern .shared) too.  A cubin without -lineinfo: the kernels
# run unchanged, and -v says why they were skipped.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-cubin.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
	head -1 | tr -d ' .')
ARCH=sm_${cc:-90}
"$NVCC" -O2 -o "$T/host" tests/gpu/cubin_host.cu -lcuda &&
	"$NVCC" -cubin -arch="$ARCH" -lineinfo tests/gpu/cubin_kernels.cu -o "$T/li.cubin" &&
	"$NVCC" -cubin -arch="$ARCH" tests/gpu/cubin_kernels.cu -o "$T/plain.cubin" &&
	"$NVCC" -fatbin -gencode "arch=compute_${cc:-90},code=$ARCH" -lineinfo \
		tests/gpu/cubin_kernels.cu -o "$T/li.fatbin" ||
	{ echo "FAIL: building"; exit 1; }
L=7
ok=0
fail() { echo "FAIL $*"; ok=1; }

"$T/host" "$T/li.cubin" module $L >"$T/native" || { echo "FAIL native run"; exit 1; }
sum=$(grep '^checksum' "$T/native")
PROG='gpu:kernel:* { @t[kernel] = count(); } gpu:warp:* { @w[kernel] = count(); }'

counts() {	# counts WHAT [NATIVE]: out has the counts and results of NATIVE
	nat=${2:-$T/native}
	for k in $(sed -n 's/^expect \([^ ]*\) threads.*/\1/p' "$nat"); do
		wt=$(sed -n "s/^expect $k threads \([0-9]*\) warps.*/\1/p" "$nat")
		ww=$(sed -n "s/^expect $k threads [0-9]* warps //p" "$nat")
		gt=$(sed -n "s/^@t\[$k\]: //p" "$T/out")
		gw=$(sed -n "s/^@w\[$k\]: //p" "$T/out")
		[ "$gt" = "$wt" ] && [ "$gw" = "$ww" ] &&
			echo "PASS $1: $k threads $gt warps $gw" ||
			fail "$1: $k: threads '$gt' warps '$gw', want $wt and $ww"
	done
	grep -qx "$(grep '^checksum' "$nat")" "$T/out" && echo "PASS $1: results identical" ||
		fail "$1: results differ from the native run"
}

for how in module library file libfile; do
	timeout 120 "$GT" -q -c "$T/host $T/li.cubin $how $L" -e "$PROG" \
		>"$T/out" 2>"$T/err"
	counts "-lineinfo cubin ($how)"
	grep -q 'skipped' "$T/err" && { cat "$T/err"; fail "-lineinfo cubin ($how): a kernel was skipped"; }
done
for how in module library; do
	timeout 120 "$GT" -q -c "$T/host $T/li.fatbin $how $L" -e "$PROG" \
		>"$T/out" 2>"$T/err"
	counts "fatbin of a -lineinfo cubin ($how)"
done

# a Triton-like sm_90a kernel, loaded as Triton loads its cubins
if [ "$ARCH" = sm_90 ]; then
	"${NVCC%/nvcc}/ptxas" -arch=sm_90a -lineinfo tests/cubin/triton_add.ptx \
		-o "$T/triton.cubin" || { echo "FAIL: ptxas"; exit 1; }
	"$T/host" "$T/triton.cubin" triton $L >"$T/native.tr" ||
		{ echo "FAIL native Triton-like run"; exit 1; }
	timeout 120 "$GT" -q -c "$T/host $T/triton.cubin triton $L" -e "$PROG" \
		>"$T/out" 2>"$T/err"
	counts "Triton-like sm_90a cubin" "$T/native.tr"
else
	echo "SKIP Triton-like sm_90a kernel: the GPU is $ARCH"
fi

# without -lineinfo: original kernels, the reason said
timeout 120 "$GT" -v -c "$T/host $T/plain.cubin module $L" -e "$PROG" \
	>"$T/out" 2>"$T/err"
grep -qx "$sum" "$T/out" && echo "PASS cubin without PTX: results identical" ||
	fail "cubin without PTX: results differ"
grep -q '^@[tw]\[' "$T/out" && fail "cubin without PTX: counted"
for k in scale_add smem_rev; do
	grep -q "skipped $k: SASS only (cubin without .nv_debug_ptx_txt)" "$T/err" &&
		echo "PASS cubin without PTX: $k skipped with the reason" ||
		fail "cubin without PTX: no reason for $k"
done
[ $ok -eq 0 ] || head -20 "$T/err"
exit $ok
