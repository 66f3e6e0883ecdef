#!/bin/sh
# SPDX-License-Identifier: MIT
# NVRTC cubins keep their PTX under device probes, without a GPU (the
# fake libcuda of agent_hooks.sh, the real libnvrtc of the toolkit): a
# kernel compiled with NVRTC for sm_90 without -lineinfo, as CuPy's
# RawKernel is, gets -lineinfo from the agent, so its cubin carries
# .nv_debug_ptx_txt and the kernel is instrumented from it (5 launches x
# 4 blocks x 2 warps = 40; the spliced PTX assembles), its SASS (.text)
# byte for byte that of the native compile.  NVRTC reached through dlsym
# on a dlopened libnvrtc (agent_nvrtcprog.c), through -lnvrtc (the same
# built -DLINKED), and through Python's ctypes as CuPy reaches it
# (agent_nvrtc.py); two libnvrtc in one process; and with gputrace -c.  Left alone: without device
# probes, with GPUTRACE_NVRTC_LINEINFO=0 (the kernel then skipped as SASS
# only, saying why), and where the program asked for -G or -lineinfo
# itself (the cubin identical to the native one); a cubin from a cache
# (compiled before) is skipped, the report saying so.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. tests/progs/agent_lib.sh
CUDA=${CUDA_HOME:-/usr/local/cuda}
PTXAS=$CUDA/bin/ptxas
NVRTC=
for d in "$CUDA/lib64" "$CUDA/lib"; do
	[ -f "$d/libnvrtc.so.13" ] && { NVRTC=$d/libnvrtc.so.13; break; }
	[ -z "$NVRTC" ] && [ -f "$d/libnvrtc.so" ] && NVRTC=$d/libnvrtc.so
done
[ -n "$NVRTC" ] || { echo "SKIP: no libnvrtc in $CUDA"; exit 77; }
K=gt_nvrtc_add

$CC $W tests/accept/agent_nvrtcprog.c "$T/libcuda.so.1" -ldl \
	-Wl,-rpath,"$T" -o "$T/nvprog" || fail "building agent_nvrtcprog"
$CC $W -DLINKED tests/accept/agent_nvrtcprog.c "$T/libcuda.so.1" "$NVRTC" \
	-Wl,-rpath,"$T:${NVRTC%/*}" -o "$T/nvprog_linked" ||
	fail "building agent_nvrtcprog -DLINKED"
"$T/cfg" "$T/v.cfg" -g $K -v || fail "agent_cfg -g $K"
"$T/cfg" "$T/none.cfg" -n -v || fail "agent_cfg -n"

run() {	# run CONFIG CUBIN PROG ARG...: stdout in out, stderr in err
	cfg=$1 cubin=$2
	shift 2
	rm -f "$T/spliced.ptx" "$cubin"
	GPUTRACE_AGENT_CONFIG=$cfg FAKECUDA_PTX_OUT=$T/spliced.ptx \
		LD_LIBRARY_PATH=$T LD_PRELOAD=$AGENT "$@" >"$T/out" 2>"$T/err" ||
		{ cat "$T/out" "$T/err"; fail "under the agent: $*"; }
}
has_ptx() { readelf -SW "$1" 2>/dev/null | grep -q '\.nv_debug_ptx_txt'; }
sass() { readelf -x .text.$K "$1" 2>/dev/null; }
originals() {	# WHAT: 5 launches ran unchanged
	[ "$(grep -c " $K: original$" "$T/out")" = 5 ] ||
		{ cat "$T/out" "$T/err"; fail "$1: launches changed"; }
}
lineinfo_added() { grep -q 'NVRTC compile for sm_90: -lineinfo added' "$T/err"; }

# ---- native: NVRTC's cubin has no PTX, the kernel runs as it is
"$T/nvprog" "$NVRTC" "$T/native.cubin" -arch=sm_90 >"$T/out" 2>"$T/err" ||
	{ cat "$T/out" "$T/err"; fail "agent_nvrtcprog alone"; }
originals "native"
has_ptx "$T/native.cubin" && fail "native: NVRTC's cubin carries PTX already"
sass "$T/native.cubin" | grep -q '0x00000000' || fail "native: no .text.$K"

# ---- device probes: -lineinfo added, the kernel instrumented from its PTX
for how in dlopen linked python; do
	case $how in
	dlopen)	run "$T/v.cfg" "$T/$how.cubin" "$T/nvprog" "$NVRTC" \
			"$T/$how.cubin" -arch=sm_90 ;;
	linked)	run "$T/v.cfg" "$T/$how.cubin" "$T/nvprog_linked" - \
			"$T/$how.cubin" -arch=sm_90 ;;
	python)	run "$T/v.cfg" "$T/$how.cubin" python3 tests/accept/agent_nvrtc.py \
			"$NVRTC" "$T/libcuda.so.1" "$T/$how.cubin" --std=c++17 \
			-arch=sm_90 -DFOO=1 ;;
	esac
	has_ptx "$T/$how.cubin" ||
		{ cat "$T/err"; fail "$how: the cubin has no .nv_debug_ptx_txt"; }
	lineinfo_added || { cat "$T/err"; fail "$how: -v does not say -lineinfo was added"; }
	[ "$(grep -c " $K: instrumented, " "$T/out")" = 5 ] ||
		{ cat "$T/out" "$T/err"; fail "$how: launches not instrumented"; }
	grep -qxF 'gputrace-agent: map 0 [gpu 0]: 40' "$T/err" ||
		{ cat "$T/err"; fail "$how: map total"; }
	"$PTXAS" -arch=sm_90 "$T/spliced.ptx" -o /dev/null ||
		fail "$how: ptxas rejects the spliced PTX"
	[ "$(sass "$T/$how.cubin")" = "$(sass "$T/native.cubin")" ] ||
		fail "$how: -lineinfo changed the SASS"
	[ $how = dlopen ] && { grep -qx 'compile stable' "$T/out" ||
		fail "dlopen: a second dlsym gave another function"; }
done

# two NVRTC libraries in one process (a wheel's and the toolkit's): each
# gets a wrapper of its own
ALT=${NVRTC%/*}/libnvrtc.alt.so.13
if [ -f "$ALT" ]; then
	NVRTCPROG_ALSO=$ALT run "$T/v.cfg" "$T/two.cubin" "$T/nvprog" "$NVRTC" \
		"$T/two.cubin" -arch=sm_90
	grep -qx 'also: ptx yes' "$T/out" ||
		{ cat "$T/out" "$T/err"; fail "second NVRTC: no .nv_debug_ptx_txt"; }
	has_ptx "$T/two.cubin" && grep -q 'hooked (NVRTC 1)' "$T/err" &&
		[ "$(grep -c " $K: instrumented, " "$T/out")" = 5 ] ||
		{ cat "$T/out" "$T/err"; fail "two NVRTC libraries: the first's compile"; }
fi

# ---- left alone
run "$T/none.cfg" "$T/none.cubin" "$T/nvprog" "$NVRTC" "$T/none.cubin" -arch=sm_90
has_ptx "$T/none.cubin" && fail "no device probes: -lineinfo added anyway"
originals "no device probes"

GPUTRACE_NVRTC_LINEINFO=0 run "$T/v.cfg" "$T/off.cubin" "$T/nvprog" "$NVRTC" \
	"$T/off.cubin" -arch=sm_90
has_ptx "$T/off.cubin" && fail "GPUTRACE_NVRTC_LINEINFO=0: -lineinfo added anyway"
originals "GPUTRACE_NVRTC_LINEINFO=0"
grep -q "skipped $K: SASS only (cubin without .nv_debug_ptx_txt)" "$T/err" ||
	{ cat "$T/err"; fail "GPUTRACE_NVRTC_LINEINFO=0: no skip report"; }

# a cubin compiled before (a kernel cache's): SASS only, and why
NVRTCPROG_LOAD=$T/native.cubin run "$T/v.cfg" "$T/c.cubin" "$T/nvprog" \
	"$NVRTC" "$T/c.cubin" -arch=sm_90
originals "a cached cubin"
grep -q "skipped $K: SASS only (cubin without .nv_debug_ptx_txt); not one of this process's NVRTC compiles" "$T/err" ||
	{ cat "$T/err"; fail "a cached cubin: the skip does not say why"; }

for opt in -G --device-debug -lineinfo --generate-line-info; do
	"$T/nvprog" "$NVRTC" "$T/n.cubin" -arch=sm_90 $opt >/dev/null 2>&1 ||
		fail "native compile with $opt"
	run "$T/v.cfg" "$T/a.cubin" "$T/nvprog" "$NVRTC" "$T/a.cubin" \
		-arch=sm_90 $opt
	lineinfo_added && fail "$opt: -lineinfo added to a compile that had $opt"
	cmp -s "$T/n.cubin" "$T/a.cubin" || fail "$opt: the cubin differs from the native one"
done

# ---- gputrace -c: the device count through the segment, -v saying why
"$GT" -v -c "$T/nvprog $NVRTC $T/gt.cubin -arch=sm_90" \
	-e "gpu:warp:$K { @ = count(); }" >"$T/gt" 2>"$T/gte" ||
	{ cat "$T/gt" "$T/gte"; fail "gputrace -c"; }
grep -qx '@: 40' "$T/gt" || { cat "$T/gt" "$T/gte"; fail "gputrace -c: device count"; }
grep -q 'NVRTC compile for sm_90: -lineinfo added' "$T/gte" ||
	{ cat "$T/gte"; fail "gputrace -c -v: no line about -lineinfo"; }
exit 0
