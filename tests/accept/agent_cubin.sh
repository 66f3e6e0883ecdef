#!/bin/sh
# SPDX-License-Identifier: MIT
# The agent on modules loaded as cubins, without a GPU (the fake libcuda
# of agent_hooks.sh): a cubin made with -lineinfo carries its PTX in
# .nv_debug_ptx_txt, and its kernel is instrumented from it, loaded with
# cuModuleLoadData or cuLibraryLoadData, alone or inside a fatbin; counts
# exact (5 launches x 4 blocks x 2 warps), the spliced PTX assembles.  A
# Triton-like kernel (tests/cubin/triton_add.ptx through ptxas -lineinfo:
# sm_90a, .reqntid, extern .shared) keeps its target.  A kernel whose
# load was not seen finds it in such a cubin in the program's .nv_fatbin.  A cubin without
# the section runs unchanged and the skip says why.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. tests/progs/agent_lib.sh
PTXAS=${NVCC%/nvcc}/ptxas

"$NVCC" -cubin -arch=sm_90 -lineinfo tests/gpu/agent_vadd.cu -o "$T/li.cubin" &&
	"$NVCC" -cubin -arch=sm_90 tests/gpu/agent_vadd.cu -o "$T/plain.cubin" &&
	"$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -lineinfo \
		tests/gpu/agent_vadd.cu -o "$T/li.fatbin" &&
	"$PTXAS" -arch=sm_90a -lineinfo tests/cubin/triton_add.ptx -o "$T/triton.cubin" ||
	fail "building the cubins"
TRITON=triton_poi_fused_add_0
"$T/cfg" "$T/v.cfg" -g vadd -v || fail "agent_cfg -v"
"$T/cfg" "$T/all.cfg" -g '*' || fail "agent_cfg -g '*'"
"$T/cfg" "$T/tr.cfg" -g "$TRITON" -v || fail "agent_cfg -g $TRITON"

run() {	# run CONFIG IMAGE KERNEL: stdout in out, stderr in err
	rm -f "$T/spliced.ptx"
	GPUTRACE_AGENT_CONFIG=$1 FAKECUDA_PTX_OUT=$T/spliced.ptx \
		LD_PRELOAD=$AGENT "$T/prog" "$2" "$3" >"$T/out" 2>"$T/err" ||
		{ cat "$T/out" "$T/err"; fail "prog under the agent: $*"; }
}

counted() {	# counted WHAT KERNEL: 5 launches instrumented, 40 warps
	[ "$(grep -c " $2: instrumented, " "$T/out")" = 5 ] ||
		{ cat "$T/out" "$T/err"; fail "$1: launches not instrumented"; }
	grep -qxF 'gputrace-agent: map 0 [gpu 0]: 40' "$T/err" ||
		{ cat "$T/err"; fail "$1: map total"; }
	"$PTXAS" -arch="${3:-sm_90}" "$T/spliced.ptx" -o /dev/null ||
		fail "$1: ptxas rejects the spliced PTX"
}

for how in module library; do
	lib=
	[ $how = library ] && lib=1
	HOOKPROG_LIBRARY=$lib run "$T/v.cfg" "$T/li.cubin" $VADD
	counted "-lineinfo cubin ($how)" $VADD
	HOOKPROG_LIBRARY=$lib run "$T/v.cfg" "$T/li.fatbin" $VADD
	counted "fatbin of a -lineinfo cubin ($how)" $VADD
	HOOKPROG_LIBRARY=$lib run "$T/all.cfg" "$T/plain.cubin" $VADD
	[ "$(grep -c ': original$' "$T/out")" = 5 ] ||
		{ cat "$T/out"; fail "cubin without PTX ($how): launches changed"; }
	[ "$(grep -c "skipped $VADD: SASS only (cubin without .nv_debug_ptx_txt)" "$T/err")" = 1 ] ||
		{ cat "$T/err"; fail "cubin without PTX ($how): no skip report"; }
	HOOKPROG_LIBRARY=$lib run "$T/tr.cfg" "$T/triton.cubin" $TRITON
	counted "Triton-like cubin ($how)" $TRITON sm_90a
	grep -q '^\.target sm_90a' "$T/spliced.ptx" &&
		grep -q '^\.reqntid 128, 1, 1' "$T/spliced.ptx" &&
		grep -q '^\.extern \.shared \.align 16 \.b8 global_smem\[\];' "$T/spliced.ptx" ||
		{ cat "$T/spliced.ptx"; fail "Triton-like cubin ($how): target, .reqntid or shared array lost"; }
done

# a fatbin with both a -lineinfo cubin and PTX for the same target (nvcc's
# default build): the PTX entry, whose .loc lines the cubin's copy lacks
# (gpu:mem's `line` was 0 on the GPU with the cubin's)
"$NVCC" -fatbin -gencode arch=compute_90,code=[sm_90,compute_90] -lineinfo \
	tests/gpu/agent_vadd.cu -o "$T/both.fatbin" || fail "building both.fatbin"
run "$T/v.cfg" "$T/both.fatbin" $VADD
counted "fatbin with cubin and PTX" $VADD
grep -q '^[[:space:]]*\.loc[[:space:]]' "$T/spliced.ptx" ||
	fail "fatbin with cubin and PTX: the cubin's PTX (no .loc) was taken"

# a cubin whose PTX does not belong to it (another kernel's): unused
python3 tests/cubin/patch.py "$T/li.cubin" "$T/bad.cubin" \
	'.entry _Z4vaddPKfS0_Pfi' '.entry _Z4vaddPKfS0_Pfj' || fail "patching a cubin"
run "$T/all.cfg" "$T/bad.cubin" $VADD
[ "$(grep -c ': original$' "$T/out")" = 5 ] ||
	{ cat "$T/out"; fail "mismatched PTX: launches changed"; }
grep -q "skipped $VADD: SASS only (its .nv_debug_ptx_txt: its kernels are not the cubin's" "$T/err" ||
	{ cat "$T/err"; fail "mismatched PTX: no skip report"; }

# a module image the agent cannot read: the kernel's PTX comes from the
# program's own .nv_fatbin, whose only entry is the -lineinfo cubin
printf 'not a fatbin' >"$T/opaque.img"
ld -r -b binary -o "$T/fb.o" "$T/li.fatbin" &&
	objcopy --rename-section .data=.nv_fatbin,alloc,load,readonly,data,contents \
		--set-section-alignment .nv_fatbin=8 "$T/fb.o" &&
	$CC $W tests/accept/agent_hookprog.c "$T/fb.o" "$T/libcuda.so.1" -ldl \
		-Wl,-z,noexecstack -Wl,-rpath,"$T" -o "$T/prog_fb" ||
	fail "building agent_hookprog with .nv_fatbin"
rm -f "$T/spliced.ptx"
GPUTRACE_AGENT_CONFIG=$T/v.cfg FAKECUDA_PTX_OUT=$T/spliced.ptx LD_PRELOAD=$AGENT \
	"$T/prog_fb" "$T/opaque.img" $VADD >"$T/out" 2>"$T/err" || fail "prog_fb"
counted "the program's .nv_fatbin with a -lineinfo cubin" $VADD

# gputrace -c: the device count through the segment
"$GT" -c "$T/prog $T/triton.cubin $TRITON" -e "gpu:warp:$TRITON { @ = count(); }" \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gt" "$T/gte"; fail "gputrace -c, Triton-like cubin"; }
grep -qx '@: 40' "$T/gt" || { cat "$T/gt" "$T/gte"; fail "gputrace -c: device count"; }
exit 0
