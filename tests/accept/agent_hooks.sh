#!/bin/sh
# SPDX-License-Identifier: MIT
# The agent (build/libgputrace-agent.so) without a GPU: a fake libcuda.so.1
# (agent_fakecuda.c) and a program that drives it like the CUDA runtime
# (dlsym + cuGetProcAddress) and like -lcuda programs (agent_hookprog.c).
# Checks the exports, that preloading into other programs is harmless,
# that every launch form reaches the agent, the real PTX pipeline (fatbin
# from nvcc, splice, ptxas on the result; the JIT through cuLibraryLoadData,
# and through cuModuleLoadDataEx on a driver without it), the skips
# (module-scope variables, SASS only), the map total through the launch
# parameter, the tracer protocol (agent_tracer.c), and gputrace -c with
# the agent: device counts, warnings when no gpu: probe can fire or a
# probe reads an argument the kernel lacks.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. tests/progs/agent_lib.sh

# ---- what the library exports: the hooks, dlsym and _exit, nothing else
want="_exit cuCtxDestroy_v2 cuDevicePrimaryCtxReset_v2 cuGetProcAddress
cuGetProcAddress_v2 cuGraphAddKernelNode cuGraphAddKernelNode_v2
cuGraphAddNode cuGraphAddNode_v2 cuGraphExecKernelNodeSetParams
cuGraphExecKernelNodeSetParams_v2 cuGraphExecNodeSetParams
cuGraphKernelNodeGetParams cuGraphKernelNodeGetParams_v2
cuGraphKernelNodeSetParams cuGraphKernelNodeSetParams_v2
cuGraphNodeSetParams cuKernelGetFunction cuLaunchCooperativeKernel
cuLaunchCooperativeKernel_ptsz cuLaunchKernel cuLaunchKernelEx
cuLaunchKernelEx_ptsz cuLaunchKernel_ptsz cuLibraryGetKernel
cuLibraryLoadData cuLibraryLoadFromFile cuLibraryUnload
cuMemAllocAsync cuMemAllocAsync_ptsz cuMemAllocFromPoolAsync
cuMemAllocFromPoolAsync_ptsz cuMemAllocManaged cuMemAllocPitch_v2
cuMemAlloc_v2 cuMemFreeAsync cuMemFreeAsync_ptsz cuMemFree_v2
cuMemAllocHost_v2 cuMemHostAlloc cuMemFreeHost cuMemcpyHtoD_v2
cuMemcpyHtoD_v2_ptds cuMemcpyHtoDAsync_v2 cuMemcpyHtoDAsync_v2_ptsz
cuMemcpyDtoH_v2 cuMemcpyDtoH_v2_ptds cuMemcpyDtoHAsync_v2
cuMemcpyDtoHAsync_v2_ptsz cuMemcpyDtoD_v2 cuMemcpyDtoD_v2_ptds
cuMemcpyDtoDAsync_v2 cuMemcpyDtoDAsync_v2_ptsz cuMemcpy cuMemcpy_ptds
cuMemcpyAsync cuMemcpyAsync_ptsz cuCtxSynchronize cuCtxSynchronize_v2
cuStreamSynchronize cuStreamSynchronize_ptsz cuEventSynchronize
cuGraphLaunch cuGraphLaunch_ptsz
cuModuleGetFunction
cuModuleLoad cuModuleLoadData cuModuleLoadDataEx cuModuleLoadFatBinary
cuModuleUnload dlsym gputrace_arm gputrace_attach gputrace_attach_why
gputrace_seen_cuLaunchCooperativeKernel gputrace_seen_cuLaunchCooperativeKernel_ptsz
gputrace_seen_cuLaunchKernel gputrace_seen_cuLaunchKernelEx
gputrace_seen_cuLaunchKernelEx_ptsz gputrace_seen_cuLaunchKernel_ptsz
gputrace_complete gputrace_sample nvrtcCompileProgram"
got=$(nm -D --defined-only "$AGENT" | awk '$2 == "T" || $2 == "W" || $2 == "D" || $2 == "B" { print $3 }' | sort | tr '\n' ' ')
[ "$got" = "$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')" ] ||
	fail "exports differ: $got"
readelf -d "$AGENT" | grep NEEDED | grep -vE 'libc\.so|ld-linux' &&
	fail "depends on more than libc"

# ---- harmless in programs that are not CUDA programs
"$T/cfg" "$T/quiet.cfg" -g vadd || fail "agent_cfg"
for cfg in "" "$T/quiet.cfg"; do
	out=$(GPUTRACE_AGENT_CONFIG=$cfg LD_PRELOAD=$AGENT sh -c 'ls / >/dev/null && echo ok' 2>&1)
	[ "$out" = ok ] || fail "preloaded into sh (config '$cfg'): $out"
done

# ---- without the agent everything is original
"$T/prog" "$T/vadd.fatbin" $VADD >"$T/out0" 2>&1 || fail "prog alone"
[ "$(grep -c ': original$' "$T/out0")" = 5 ] || { cat "$T/out0"; fail "baseline"; }

run() {	# run CONFIG FATBIN KERNEL...: stdout in out, stderr in err
	cfg=$1
	shift
	GPUTRACE_AGENT_CONFIG=$cfg FAKECUDA_PTX_OUT=$T/spliced.ptx \
		LD_PRELOAD=$AGENT "$T/prog" "$@" >"$T/out" 2>"$T/err" ||
		{ cat "$T/out" "$T/err"; fail "prog under the agent: $*"; }
}

# ---- every launch form through the agent, real splice, map total
"$T/cfg" "$T/v.cfg" -g vadd -v || fail "agent_cfg -v"
run "$T/v.cfg" "$T/vadd.fatbin" $VADD $GLOBAL
grep -q '^RTLD_NEXT ok$' "$T/out" || fail "dlsym(RTLD_NEXT) is not relative to its caller"
grep -q 'dlsym(cuGetProcAddress_v2): hooked' "$T/err" || fail "dlsym not hooked"
for want in "cuLaunchKernel $VADD: instrumented, launch 1 kernel 0" \
	    "cuLaunchKernel $VADD: instrumented, launch 2 kernel 0" \
	    "cuLaunchKernel $VADD: instrumented, launch 3 kernel 0 (extra)" \
	    "cuLaunchKernel_ptsz $VADD: instrumented, launch 4 kernel 0" \
	    "cuLaunchKernel $VADD: instrumented, launch 5 kernel 0" \
	    "cuLaunchKernel $GLOBAL: original"; do
	grep -qxF "$want" "$T/out" || { cat "$T/out" "$T/err"; fail "missing: $want"; }
done
grep -q "instrumented $VADD \[gpu 0\]: jit" "$T/err" || fail "no jit report"
grep -q '^fake: JIT (library)$' "$T/err" || fail "no JIT through cuLibraryLoadData"
# 5 launches x 4 blocks x 2 warps
grep -qxF 'gputrace-agent: map 0 [gpu 0]: 40' "$T/err" || { cat "$T/err"; fail "map total"; }
grep -q '\.param \.align 8 \.b8 __gt_ctx\[160\]' "$T/spliced.ptx" || fail "no __gt_ctx in the spliced PTX"
grep -q 'call __gt_probe_0' "$T/spliced.ptx" || fail "no probe call spliced"
grep -q "\.entry $GLOBAL" "$T/spliced.ptx" && fail "unmatched kernel kept"
"${NVCC%/nvcc}/ptxas" -arch=sm_90 "$T/spliced.ptx" -o "$T/sp.cubin" ||
	fail "ptxas rejects the spliced PTX"

# ---- a driver before CUDA 12.0 (no cuLibrary*): cuModuleLoadDataEx
LD_LIBRARY_PATH=$T/old run "$T/v.cfg" "$T/vadd.fatbin" $VADD
grep -q '^fake: JIT (module)$' "$T/err" || { cat "$T/err"; fail "old driver: no JIT through cuModuleLoadDataEx"; }
grep -qxF 'gputrace-agent: map 0 [gpu 0]: 40' "$T/err" || { cat "$T/err"; fail "old driver: map total"; }

# ---- graph nodes get the instrumented copy, with a launch parameter
# taken when the node is set; read back, they name the original
HOOKPROG_GRAPH=1 run "$T/quiet.cfg" "$T/vadd.fatbin" $VADD
for want in "cuGraphLaunch $VADD: instrumented, launch 6 kernel 0" \
	    "read back: original" \
	    "cuGraphLaunch $VADD: instrumented, launch 7 kernel 0"; do
	grep -qxF "$want" "$T/out" || { cat "$T/out" "$T/err"; fail "graph: missing: $want"; }
done
[ "$(grep -c "^cuGraphLaunch $VADD: instrumented, launch 6 kernel 0\$" "$T/out")" = 2 ] ||
	{ cat "$T/out"; fail "graph: two launches of the first node"; }
# 5 launches + 3 graph runs, x 8 warps
grep -qxF 'gputrace-agent: map 0 [gpu 0]: 64' "$T/err" || { cat "$T/err"; fail "graph: map total"; }

# ---- a global-mode stream capture under way all the time: the agent's
# own allocations and copies must not be refused (nor invalidate it)
FAKECUDA_CAPTURE=1 HOOKPROG_GRAPH=1 run "$T/quiet.cfg" "$T/vadd.fatbin" $VADD
grep -q 'during a capture' "$T/err" && { cat "$T/err"; fail "capture: the agent made a refused call"; }
grep -qxF 'gputrace-agent: map 0 [gpu 0]: 64' "$T/err" || { cat "$T/err"; fail "capture: map total"; }

# ---- kernels that must run unchanged, reported once
"$T/cfg" "$T/all.cfg" -g '*' || fail "agent_cfg -g '*'"
run "$T/all.cfg" "$T/vadd.fatbin" $GLOBAL
[ "$(grep -c ': original$' "$T/out")" = 5 ] || fail "module-scope kernel changed"
[ "$(grep -c "skipped $GLOBAL: uses module-scope variables" "$T/err")" = 1 ] ||
	{ cat "$T/err"; fail "module-scope report"; }
# the module's other matched kernels are made ahead, without a launch
# (by default; not with GPUTRACE_PREFETCH=0)
FAKECUDA_MODULE_KERNELS=$VADD,$GLOBAL HOOKPROG_LINGER_MS=500 run "$T/all.cfg" "$T/vadd.fatbin" $VADD
[ "$(grep -c ': instrumented, ' "$T/out")" = 5 ] || { cat "$T/out" "$T/err"; fail "prefetch: launches"; }
[ "$(grep -c "skipped $GLOBAL: uses module-scope variables" "$T/err")" = 1 ] ||
	{ cat "$T/err"; fail "prefetch: the sibling kernel was not considered"; }
GPUTRACE_PREFETCH=0 FAKECUDA_MODULE_KERNELS=$VADD,$GLOBAL HOOKPROG_LINGER_MS=500 run "$T/all.cfg" "$T/vadd.fatbin" $VADD
[ "$(grep -c ': instrumented, ' "$T/out")" = 5 ] || { cat "$T/out" "$T/err"; fail "no prefetch: launches"; }
grep -q "skipped $GLOBAL\|instrumenting ahead" "$T/err" &&
	{ cat "$T/err"; fail "GPUTRACE_PREFETCH=0: the sibling kernel was made ahead"; }
# a module of 70 matched kernels: 64 queued ahead (those not started
# when the program exits are dropped), the others left to their first
# launch
many=$VADD
for i in $(seq 2 70); do many=$many,$VADD; done
GPUTRACE_PREFETCH=1 FAKECUDA_MODULE_KERNELS=$many HOOKPROG_LINGER_MS=500 run "$T/v.cfg" "$T/vadd.fatbin" $VADD
jits=$(grep -c '^fake: JIT (library)$' "$T/err")
[ "$jits" -ge 1 ] && [ "$jits" -le 65 ] &&
	grep -q "instrumenting ahead 64 more kernels of $VADD's module, the others at their first launch" "$T/err" ||
	{ grep -v 'info: dlsym' "$T/err" | tail -20; fail "prefetch: not 64 kernels ahead ($jits compiles)"; }
# exit() as a worker's 300 ms compile starts: the driver's PTX compiler,
# loaded at that compile (the first one was a cache hit), has registered
# exit handlers after the agent's; they must not run under it
GPUTRACE_PREFETCH=1 FAKECUDA_MODULE_KERNELS=$VADD FAKECUDA_JIT_MS=300 \
	FAKEJIT_STARTED=$T/compiling HOOKPROG_WAIT_FILE=$T/compiling \
	run "$T/v.cfg" "$T/vadd.fatbin" $VADD
[ "$(grep -c '^fake: JIT (library)$' "$T/err")" = 2 ] ||
	{ cat "$T/err"; fail "prefetch at exit: no compile on a worker"; }
grep -q "fakejit\|fake: no compiler" "$T/err" && { cat "$T/err"; fail "prefetch at exit: compiler"; }
# without prefetch, main exits as a program thread's launch of OTHER
# compiles, the AT-th compile of N (300 ms each; the first misses the
# cache and loads the compiler): no abort, the exit waits for it
exit_during_thread_compile() {	# WHAT N AT KERNEL OTHER
	GPUTRACE_PREFETCH=0 FAKECUDA_JIT_MS=300 FAKECUDA_JIT_MISS_FIRST=1 \
		FAKEJIT_STARTED=$T/compiling.$3 FAKEJIT_STARTED_AT=$3 \
		HOOKPROG_WAIT_FILE=$T/compiling.$3 HOOKPROG_THREAD=1 \
		run "$T/v.cfg" "$T/vadd.fatbin" "$4" "$5"
	[ "$(grep -c '^fake: JIT (library)$' "$T/err")" = "$2" ] &&
		[ -f "$T/compiling.$3" ] ||
		{ cat "$T/err"; fail "exit during $1: not $2 compiles"; }
	grep -q "fakejit\|fake: no compiler" "$T/err" &&
		{ cat "$T/err"; fail "exit during $1"; }
	grep -q "exit waits for compiles: libnvidia-ptxjitcompiler.so.1 is loaded" "$T/err" ||
		{ cat "$T/err"; fail "exit during $1: not guarded"; }
}
# after a first compile in main
exit_during_thread_compile "a thread's compile" 2 2 $VADD $VADD
# the process's first compile, the one that loads the compiler: it is
# loaded before that compile starts, so the exit is guarded for it too
exit_during_thread_compile "the first compile" 1 1 $GLOBAL $VADD
run "$T/all.cfg" "$T/sass.fatbin" $SASS
[ "$(grep -c ': original$' "$T/out")" = 5 ] || fail "SASS-only kernel changed"
[ "$(grep -c "skipped $SASS: SASS only" "$T/err")" = 1 ] ||
	{ cat "$T/err"; fail "SASS-only report"; }
"$T/cfg" "$T/none.cfg" -g nomatch || fail "agent_cfg -g nomatch"
run "$T/none.cfg" "$T/vadd.fatbin" $VADD
[ "$(grep -c ': original$' "$T/out")" = 5 ] || fail "unmatched kernel changed"
[ -s "$T/err" ] && { cat "$T/err"; fail "unmatched run reported something"; }

# ---- dynamic shared memory past 48 KB: the program raised the
# original's limit (cudaFuncSetAttribute) before its first launch: the
# copy is made with it; raised after the first launch, the copy's is
# raised to match at its first such launch, graph nodes included
HOOKPROG_SMEM=65536 "$T/prog" "$T/vadd.fatbin" $VADD >"$T/out0" 2>&1 || fail "prog alone, 64 KB"
[ "$(grep -c ': original$' "$T/out0")" = 5 ] || { cat "$T/out0"; fail "64 KB baseline"; }
HOOKPROG_SMEM=65536 HOOKPROG_GRAPH=1 run "$T/v.cfg" "$T/vadd.fatbin" $VADD
[ "$(grep -c " $VADD: instrumented, " "$T/out")" = 8 ] && ! grep -q refused "$T/out" ||
	{ cat "$T/out" "$T/err"; fail "64 KB of dynamic shared memory: the copy was refused"; }
grep -q "$VADD: attribute 8 49152 -> 65536, as the original's" "$T/err" ||
	{ cat "$T/err"; fail "64 KB: no -v line for the copied limit"; }
HOOKPROG_SMEM=65536 HOOKPROG_SMEM_LATE=1 HOOKPROG_GRAPH=1 run "$T/v.cfg" "$T/vadd.fatbin" $VADD
[ "$(grep -c " $VADD: instrumented, " "$T/out")" = 8 ] && ! grep -q refused "$T/out" ||
	{ cat "$T/out" "$T/err"; fail "64 KB raised late: the copy was refused"; }
grep -q "$VADD: dynamic shared memory limit 49152 -> 65536 bytes" "$T/err" ||
	{ cat "$T/err"; fail "64 KB raised late: no -v line for the raised limit"; }

# ---- the other attributes a program sets (carveout, non-portable
# cluster size, scheduling policy) are the copy's too
HOOKPROG_ATTRS=1 "$T/prog" "$T/vadd.fatbin" $VADD >"$T/out0" 2>&1 || fail "prog alone, attributes"
[ "$(grep -c ": attributes carveout 50 non-portable 1 policy 1$" "$T/out0")" = 5 ] ||
	{ cat "$T/out0"; fail "attributes baseline"; }
HOOKPROG_ATTRS=1 run "$T/v.cfg" "$T/vadd.fatbin" $VADD
[ "$(grep -c " $VADD: attributes carveout 50 non-portable 1 policy 1$" "$T/out")" = 5 ] &&
	[ "$(grep -c " $VADD: instrumented, " "$T/out")" = 5 ] ||
	{ cat "$T/out" "$T/err"; fail "attributes not on the copy"; }
grep -q "$VADD: attribute 14 0 -> 1, as the original's" "$T/err" ||
	{ cat "$T/err"; fail "attributes: no -v line"; }

# ---- a module image the agent cannot read: the kernel's PTX is looked
# up in the .nv_fatbin sections of the process's ELF objects (as for
# modules loaded before -p attached)
printf 'not a fatbin' >"$T/opaque.img"
run "$T/v.cfg" "$T/opaque.img" $VADD
[ "$(grep -c "skipped $VADD: SASS only (no PTX for it in the program's fatbins or in a cubin in memory)" "$T/err")" = 1 ] ||
	{ cat "$T/err"; fail "no .nv_fatbin: SASS-only report"; }
[ "$(grep -c ': original$' "$T/out")" = 5 ] || fail "no .nv_fatbin: launches changed"
ld -r -b binary -o "$T/fb.o" "$T/vadd.fatbin" &&
	objcopy --rename-section .data=.nv_fatbin,alloc,load,readonly,data,contents \
		--set-section-alignment .nv_fatbin=8 "$T/fb.o" &&
	$CC $W tests/accept/agent_hookprog.c "$T/fb.o" "$T/libcuda.so.1" -ldl \
		-Wl,-z,noexecstack -Wl,-rpath,"$T" -o "$T/prog_fb" || fail "building agent_hookprog with .nv_fatbin"
GPUTRACE_AGENT_CONFIG=$T/v.cfg FAKECUDA_PTX_OUT=$T/spliced.ptx LD_PRELOAD=$AGENT \
	"$T/prog_fb" "$T/opaque.img" $VADD >"$T/out" 2>"$T/err" || fail "prog_fb"
[ "$(grep -c " $VADD: instrumented, " "$T/out")" = 5 ] ||
	{ cat "$T/out" "$T/err"; fail "PTX from the program's .nv_fatbin"; }
grep -q '\.param \.align 8 \.b8 __gt_ctx\[160\]' "$T/spliced.ptx" ||
	fail "PTX from .nv_fatbin: no __gt_ctx in the spliced PTX"
# an object unloaded after its fatbins were searched is not read again
# (its memory is gone): the next kernel's search finds no PTX
$CC -shared -Wl,-z,noexecstack -o "$T/libfb.so" "$T/fb.o" || fail "building libfb.so"
GPUTRACE_AGENT_CONFIG=$T/all.cfg HOOKPROG_DLOPEN=$T/libfb.so LD_PRELOAD=$AGENT \
	"$T/prog" "$T/opaque.img" $VADD $GLOBAL >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "prog, dlclose"; }
[ "$(grep -c " $VADD: instrumented, " "$T/out")" = 5 ] ||
	{ cat "$T/out" "$T/err"; fail "PTX from a dlopened object's .nv_fatbin"; }
grep -q "^cuLaunchKernel $GLOBAL: original\$" "$T/out" &&
	grep -q "skipped $GLOBAL: SASS only (no PTX for it in the program's fatbins or in a cubin in memory)" "$T/err" ||
	{ cat "$T/out" "$T/err"; fail "a dlclosed object's fatbins"; }

# ---- a configuration that cannot be read: pass through, say so once
run "$T/missing.cfg" "$T/vadd.fatbin" $VADD
[ "$(grep -c ': original$' "$T/out")" = 5 ] || fail "bad config changed launches"
grep -q 'cannot read the configuration' "$T/err" || fail "bad config not reported"

# ---- gputrace itself: device counts through the segment, and one
# warning when nothing can fire (a GLOB that matches no kernel the
# target met; a target that launches no kernel), without -v
"$GT" -c "$T/prog $T/vadd.fatbin $VADD" -e 'gpu:kernel:vadd { @ = count(); }
gpu:warp:nomatch_* { @n = count(); } gpu:kernel:nomatch_* { @m = count(); }' \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gt" "$T/gte"; fail "gputrace -c prog"; }
grep -qx '@: 40' "$T/gt" || { cat "$T/gt" "$T/gte"; fail "gputrace: device count"; }
[ "$(grep -c "WARNING: no kernel that the target loaded matches 'nomatch_\*'" "$T/gte")" = 1 ] ||
	{ cat "$T/gte"; fail "no warning (once) for a GLOB that matched nothing"; }
grep -q "matches 'vadd'" "$T/gte" && fail "warning for a GLOB that matched"
grep -q "launched no CUDA kernel" "$T/gte" && fail "no-CUDA warning for a CUDA program"
# a kernel the compiler could not see (loaded from a file at run time)
# with fewer parameters than the probe reads: instrumented, with a word
"$GT" -c "$T/prog $T/vadd.fatbin $VADD" -e 'gpu:kernel:vadd { @ = count(); @a = max(arg7); }' \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gt" "$T/gte"; fail "gputrace -c prog, arg7"; }
grep -qx '@: 40' "$T/gt" && [ "$(grep -c 'vadd.* has 4 parameters: its probe reads arg7 as 0' "$T/gte")" = 1 ] ||
	{ cat "$T/gt" "$T/gte"; fail "arg7 of a 4-parameter kernel: no warning (once)"; }
"$GT" -c "$T/prog $T/vadd.fatbin $VADD" -e 'gpu:kernel:vadd { @a = max(arg3); }' \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gt" "$T/gte"; fail "gputrace -c prog, arg3"; }
grep -q 'parameters' "$T/gte" && { cat "$T/gte"; fail "arg3 of a 4-parameter kernel warned of"; }
# a map kept per kernel: each snapshot copies the slots in use of every
# shard, in one 2D copy or, where the driver refuses that, shard by shard
for no2d in "" 1; do
	FAKECUDA_NO_MEMCPY2D=$no2d "$GT" -c "$T/prog $T/vadd.fatbin $VADD" \
		-e 'gpu:warp:vadd { @k[kernel] = count(); }' >"$T/gt" 2>"$T/gte" ||
		{ cat "$T/gt" "$T/gte"; fail "gputrace -c prog, @k[kernel] (no 2D copy: '$no2d')"; }
	grep -qx '@k\[vadd\]: 40' "$T/gt" ||
		{ cat "$T/gt" "$T/gte"; fail "per-kernel count (no 2D copy: '$no2d')"; }
done
# gpu:mem through the agent: the config carries the clauses' classes,
# the agent pastes a site before each global memory instruction of vadd
# (as many as its PTX has: the probe's own use %gq_/%gt_ registers),
# none for :shared, and ptxas takes the result
FAKECUDA_PTX_OUT=$T/mem.ptx "$GT" -c "$T/prog $T/vadd.fatbin $VADD" \
	-e 'gpu:mem:vadd { @s = hist(sectors); @p[addr >> 21] = count(); } gpu:mem:vadd:shared { @c = hist(conflicts); }' \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gte"; fail "gputrace -c prog, gpu:mem"; }
nmem=$(awk '/^\.visible \.entry/ { on = 1 } on' "$T/mem.ptx" |
	grep -E '^[[:space:]]*(@!?%p[0-9]+[[:space:]]+)?(ld|st|atom|red)\.global' |
	grep -vc '%g[qt]_')
[ "$nmem" -gt 0 ] && [ "$(grep -c '// gputrace mem: insn' "$T/mem.ptx")" = "$nmem" ] &&
	grep -q 'match.any.sync.b64' "$T/mem.ptx" && ! grep -q 'match.any.sync.b32' "$T/mem.ptx" ||
	{ grep 'gputrace mem\|global' "$T/mem.ptx" | head; fail "gpu:mem: sites in the agent's splice"; }
PTXAS=$(dirname "$NVCC")/ptxas
if [ -x "$PTXAS" ]; then
	tgt=$(sed -n 's/^\.target[[:space:]]*\([a-z_0-9]*\).*/\1/p' "$T/mem.ptx" | head -1)
	"$PTXAS" -arch="$tgt" "$T/mem.ptx" -o /dev/null 2>"$T/px" ||
		{ cat "$T/px"; fail "gpu:mem: ptxas on the agent's splice"; }
fi
# kname(kernel) keys a map the same way (the same key, printed short)
"$GT" -c "$T/prog $T/vadd.fatbin $VADD" -e 'gpu:warp:vadd { @k[kname(kernel)] = count(); }' \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gt" "$T/gte"; fail "gputrace -c prog, @k[kname(kernel)]"; }
grep -qx '@k\[vadd\]: 40' "$T/gt" || { cat "$T/gt" "$T/gte"; fail "per-kernel count keyed by kname(kernel)"; }
"$GT" -c "sh -c true" -e 'gpu:kernel:vadd { @ = count(); }' >"$T/gt" 2>"$T/gte" ||
	{ cat "$T/gte"; fail "gputrace -c sh"; }
[ "$(grep -c 'WARNING: the target launched no CUDA kernel' "$T/gte")" = 1 ] ||
	{ cat "$T/gte"; fail "no warning for a program without CUDA"; }
grep -q "matches" "$T/gte" && fail "GLOB warning without CUDA"

# ---- the GPU-host clock offset is measured (a clock kernel, compiled
# and launched) only for probes that read launch_ns
"$GT" -v -c "$T/prog $T/vadd.fatbin $VADD" -e 'gpu:kernel:vadd { @ = count(); }' \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gte"; fail "gputrace -v -c prog"; }
grep -q 'CLOCK_REALTIME >=' "$T/gte" && { cat "$T/gte"; fail "clock offset measured without launch_ns"; }
"$GT" -v -c "$T/prog $T/vadd.fatbin $VADD" -e 'gpu:kernel:vadd { @ = max(gtime - launch_ns); }' \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gte"; fail "gputrace -v -c prog, launch_ns"; }
grep -q 'CLOCK_REALTIME >=' "$T/gte" || { cat "$T/gte"; fail "clock offset not measured for launch_ns"; }

# ---- the tracer protocol: hello, reports, snapshot, bye, segment
"$T/tracer" "$T/sock" "$AGENT" "$T/quiet.cfg" "$T/prog" "$T/vadd.fatbin" \
	$VADD >"$T/tr" 2>&1 || { cat "$T/tr"; fail "agent_tracer"; }
for want in "hello" "report: instrumented $VADD [gpu 0]: jit" \
	    "snapshot 1 done" "bye" "segment: map 0 gpu 0: 40"; do
	grep -qF "$want" "$T/tr" || { cat "$T/tr"; fail "protocol: no '$want'"; }
done
exit 0
