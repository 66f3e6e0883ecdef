#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the fatbin reader's fixtures into OUT (tests/unit/test_fatbin.c):
# host objects from tests/cuda/fatbin_*.cu under several nvcc options, the
# matching `nvcc -ptx` references, a linked executable, a shared library
# built against tests/fatbin/shim.c, and copies whose .nv_fatbin section
# is renamed.  The nvcc jobs run in parallel; exits non-zero (with the
# failing commands' output) if any fails.  OUT/stamp records a hash of the
# inputs and the nvcc version: when it matches, OUT is reused as is.
set -u
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../cuda" && pwd)
NVCC=${NVCC:-nvcc}
MULTI="-gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=[sm_90,compute_90]"

KEY=$( (cat "$SRC"/fatbin_*.cu "$HERE/build.sh" "$HERE/shim.c" &&
	$NVCC --version) | sha1sum | cut -d' ' -f1)
[ "$(cat "$OUT/stamp" 2>/dev/null)" = "$KEY" ] && exit 0

NEW=$OUT.$$
rm -rf "$NEW"
mkdir -p "$NEW" || exit 1
cd "$NEW" || exit 1

job() {		# job NAME CMD...: run CMD in the background, log to NAME.log
	name=$1; shift
	( "$@" >"$name.log" 2>&1 || echo "$name: $*" >>failed ) &
}

B=$SRC/fatbin_basic.cu
T=$SRC/fatbin_templates.cu
job default	$NVCC -c $B -o default.o
job default.ptx	$NVCC -ptx $B -o default.ptx
job multi	$NVCC -c $MULTI $B -o multi.o
job multi.ptx	$NVCC -ptx -arch=compute_90 $B -o multi.ptx
job sass	$NVCC -c -gencode arch=compute_90,code=sm_90 $B -o sass.o
job none	$NVCC -c $MULTI --compress-mode=none $B -o none.o
job speed	$NVCC -c $MULTI --compress-mode=speed $B -o speed.o
job size	$NVCC -c $MULTI --compress-mode=size $B -o size.o
job tmpl	$NVCC -c $T -o tmpl.o
job tmpl.ptx	$NVCC -ptx $T -o tmpl.ptx
job lineinfo	$NVCC -c -lineinfo -gencode arch=compute_90,code=compute_90 $T -o lineinfo.o
job lineinfo.ptx $NVCC -ptx -lineinfo -arch=compute_90 $T -o lineinfo.ptx
job archa	$NVCC -c -gencode arch=compute_90a,code=[sm_90a,compute_90a] $B -o archa.o
job archa.ptx	$NVCC -ptx -arch=compute_90a $B -o archa.ptx
job rdc		$NVCC -c -rdc=true -arch=sm_90 $B -o rdc.o
job lto		$NVCC -c -dc -gencode arch=compute_90,code=lto_90 $B -o lto.o
job app		$NVCC -arch=sm_90 -o app $SRC/fatbin_main.cu $B $T
( gcc -shared -fPIC -o libfbshim.so "$HERE/shim.c" &&
  $NVCC -shared -Xcompiler -fPIC -cudart none $B -L. -lfbshim \
	-Xlinker '-rpath=$ORIGIN' -o libfb.so ) >so.log 2>&1 || echo "so" >>failed &
wait
# Hide .nv_fatbin under another name: only the wrappers lead to it then.
for f in multi.o app; do
	objcopy --rename-section .nv_fatbin=.hidden_fb $f hidden_$f ||
		echo "objcopy $f" >>failed
done
if [ -e failed ]; then
	cat failed
	for n in $(cut -d: -f1 failed); do cat "$n.log"; done
	exit 1
fi
echo "$KEY" >stamp
cd / && rm -rf "$OUT" && mv "$NEW" "$OUT"
