#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: -l and --dry-run -d ptx on cubins (no GPU).  A cubin made
# with -lineinfo (nvcc -cubin, a fatbin's SASS-only entry, ptxas on a
# Triton-like PTX with .target sm_90a, .reqntid and an extern .shared
# array) carries its PTX in .nv_debug_ptx_txt: its kernels are listed as
# instrumentable and the probes are spliced into that PTX, which ptxas
# accepts for the cubin's own target.  Without -lineinfo the kernels
# stay SASS only, and a cubin whose PTX names other kernels is not used.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x "$CUDA/bin/nvcc" ] || { echo "no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-lcubin.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CUDA/bin/nvcc" -cubin -arch=sm_90 -lineinfo tests/gpu/agent_vadd.cu -o "$T/li.cubin" &&
	"$CUDA/bin/nvcc" -cubin -arch=sm_90 tests/gpu/agent_vadd.cu -o "$T/plain.cubin" &&
	"$CUDA/bin/nvcc" -c -gencode arch=compute_90,code=sm_90 -lineinfo \
		tests/gpu/agent_vadd.cu -o "$T/li.o" &&
	"$CUDA/bin/ptxas" -arch=sm_90a -lineinfo tests/cubin/triton_add.ptx -o "$T/triton.cubin" &&
	"$CUDA/bin/nvcc" -dc -arch=sm_90 -lineinfo tests/gpu/agent_sass.cu -o "$T/a.o" &&
	"$CUDA/bin/nvcc" -dc -arch=sm_90 -lineinfo tests/gpu/cubin_kernels.cu -o "$T/b.o" &&
	"$CUDA/bin/nvcc" -dlink -cubin -arch=sm_90 "$T/a.o" "$T/b.o" -o "$T/linked.cubin" ||
	fail "building the cubins"

check() {	# check WHAT WANT: $T/out must be WANT
	[ "$(cat "$T/out")" = "$2" ] ||
		{ echo "$1: got:"; cat "$T/out" "$T/err"; echo "want:"; echo "$2"; exit 1; }
}

"$GT" -l 'gpu:*' "$T/li.cubin" 2>"$T/err" | sort >"$T/out"
check "-l, -lineinfo cubin" "gpu:kernel:uses_global
gpu:kernel:vadd
gpu:mem:uses_global
gpu:mem:vadd
gpu:warp:uses_global
gpu:warp:vadd"
"$GT" -l 'gpu:kernel:*' "$T/li.o" 2>"$T/err" | sort >"$T/out"
check "-l, host object with a -lineinfo cubin" "gpu:kernel:uses_global
gpu:kernel:vadd"
"$GT" -l 'gpu:*' "$T/plain.cubin" 2>"$T/err" | sort >"$T/out"
check "-l, cubin without -lineinfo" "gpu:kernel:uses_global (SASS only: sm_90)
gpu:kernel:vadd (SASS only: sm_90)
gpu:mem:uses_global (SASS only: sm_90)
gpu:mem:vadd (SASS only: sm_90)
gpu:warp:uses_global (SASS only: sm_90)
gpu:warp:vadd (SASS only: sm_90)"
"$GT" -l 'gpu:warp:*' "$T/triton.cubin" >"$T/out" 2>"$T/err"
check "-l, Triton-like cubin" "gpu:warp:triton_poi_fused_add_0"

# a cubin linked from two -lineinfo objects: one module per object
# (.nv_debug_ptx_txt.HASH), each with its own kernels
"$GT" -l 'gpu:kernel:*' "$T/linked.cubin" 2>"$T/err" | sort >"$T/out"
check "-l, linked cubin" "gpu:kernel:sass_kernel
gpu:kernel:scale_add
gpu:kernel:smem_rev"

# PTX naming a kernel the cubin lacks: not its own, not used
python3 tests/cubin/patch.py "$T/li.cubin" "$T/bad.cubin" \
	'.entry _Z4vaddPKfS0_Pfi' '.entry _Z4vaddPKfS0_Pfj' || fail "patching a cubin"
"$GT" -l 'gpu:kernel:vadd' "$T/bad.cubin" >"$T/out" 2>"$T/err"
check "-l, cubin with another's PTX" "gpu:kernel:vadd (SASS only: sm_90)"
# PTX for a newer target than the cubin's SASS: not what it came from
python3 tests/cubin/patch.py "$T/li.cubin" "$T/newer.cubin" \
	'.target sm_90' '.target sm_99' || fail "patching a cubin"
"$GT" -l 'gpu:kernel:vadd' "$T/newer.cubin" >"$T/out" 2>"$T/err"
check "-l, cubin with PTX for a newer target" "gpu:kernel:vadd (SASS only: sm_90)"

# --dry-run -d ptx: spliced into the section's PTX, which ptxas takes
dry() {	# dry WHAT FILE ARCH PROGRAM
	"$GT" --dry-run -d ptx -e "$4" "$2" >/dev/null 2>"$T/out" ||
		{ cat "$T/out"; fail "$1: gputrace --dry-run"; }
	grep -q "^// gputrace: $2: PTX image 0 ($5, PTX [0-9.]*, a cubin's .nv_debug_ptx_txt): kernels " "$T/out" ||
		{ cat "$T/out"; fail "$1: no module from the cubin's PTX"; }
	rm -f "$T"/mod*.ptx
	awk -v d="$T" '/^\.version/ { n++ } n { print > (d "/mod" n ".ptx") }' "$T/out"
	[ -f "$T/mod1.ptx" ] && [ ! -f "$T/mod2.ptx" ] || fail "$1: not one module printed"
	"$CUDA/bin/ptxas" -arch="$3" "$T/mod1.ptx" -o /dev/null ||
		fail "$1: ptxas rejects the spliced PTX"
}
dry "-lineinfo cubin" "$T/li.cubin" sm_90 'gpu:warp:vadd { @c[kernel] = count(); } gpu:kernel:vadd:exit { @t = hist(duration); }' compute_90
grep -q '__gt_ctx\[160\]' "$T/mod1.ptx" && grep -q '// gputrace probe: entry' "$T/mod1.ptx" || fail "-lineinfo cubin: no probe spliced"
dry "host object" "$T/li.o" sm_90 'gpu:kernel:vadd { @c = count(); }' compute_90
dry "Triton-like cubin" "$T/triton.cubin" sm_90a 'gpu:kernel:triton_* { @c = count(); @s = sum(threadIdx.x); }' compute_90a
grep -q '^\.target sm_90a' "$T/mod1.ptx" && grep -q '^\.reqntid 128, 1, 1' "$T/mod1.ptx" &&
	grep -q 'global_smem' "$T/mod1.ptx" || fail "Triton-like cubin: target, .reqntid or shared array lost"

"$GT" --dry-run -d ptx -e 'gpu:kernel:scale_add, gpu:kernel:smem_rev { @c = count(); }' "$T/linked.cubin" >/dev/null 2>"$T/out" ||
	{ cat "$T/out"; fail "--dry-run, linked cubin"; }
grep -q "PTX image 1 (compute_90, PTX [0-9.]*, a cubin's .nv_debug_ptx_txt): kernels scale_add" "$T/out" ||
	{ cat "$T/out"; fail "--dry-run, linked cubin: not the second module"; }
grep -q "PTX image 0 " "$T/out" && fail "--dry-run, linked cubin: an unmatched module spliced"
awk -v d="$T" '/^\.version/ { n++ } n { print > (d "/lk" n ".ptx") }' "$T/out"
for m in "$T"/lk*.ptx; do
	"$CUDA/bin/ptxas" -arch=sm_90 "$m" -o /dev/null || fail "linked cubin: ptxas rejects the spliced PTX"
done

"$GT" --dry-run -d ptx -e 'gpu:kernel:vadd { @c = count(); }' "$T/plain.cubin" >/dev/null 2>"$T/out" ||
	{ cat "$T/out"; fail "--dry-run, cubin without -lineinfo"; }
grep -q '^// gputrace: _Z4vaddPKfS0_Pfi: no usable PTX (SASS only: sm_90)$' "$T/out" &&
	! grep -q '^\.version' "$T/out" ||
	{ cat "$T/out"; fail "--dry-run, cubin without -lineinfo: not SASS only"; }
exit 0
