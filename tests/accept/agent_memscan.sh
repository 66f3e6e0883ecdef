#!/bin/sh
# SPDX-License-Identifier: MIT
# gputrace -p on a kernel loaded before the attach from a cubin the
# program keeps in memory (as Triton does), without a GPU (docs/attach.md:
# cubins in memory): the agent finds the cubin in the process's anonymous
# memory and instruments the kernel from its .nv_debug_ptx_txt.  The
# program (agent_attachprog.c) loads tests/cubin/memk.cu's cubin (ptxas
# -lineinfo) from a malloc'ed buffer and launches it in a loop (8 warps a
# launch; the fake libcuda runs the probe).  Checks: exact @w with the
# buffer kept (and a second copy of it: one PTX); two cubins of the same
# name with different code, told apart by the loaded function's
# registers (the fake reports a cubin's, FAKECUDA_REGS) both ways round,
# or by its block size (.maxntid: Triton's num_warps variants), refused
# when the driver does not say; the buffer freed: SASS only, as
# before; the only cubin left in memory not the loaded one: refused.
# -l -p lists a kernel of a cubin in memory, and not once it is freed.
# A scan budget smaller than the memory still finds the cubin in the heap
# (small mappings first) and -v says what was left.
# The program runs on, without a failed launch, in every case.
# Needs root (ptrace).  Exit 0 pass, 1 fail, 77 skip.

. tests/progs/agent_lib.sh

[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
[ -f "$(dirname "$AGENT")/libZydis.so.4.0" ] || { echo "no libZydis next to the agent"; exit 77; }
PTXAS=${NVCC%/nvcc}/ptxas

. tests/progs/attach_build.sh
for v in 1 2 3 4; do
	"$NVCC" -cubin -arch=sm_90 -lineinfo -DVARIANT=$v -Xptxas -v \
		tests/cubin/memk.cu -o "$T/v$v.cubin" 2>"$T/ptxas$v" ||
		fail "building memk variant $v"
done
# the disambiguation needs the variants' registers to differ (ptxas -v)
r1=$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$T/ptxas1")
r2=$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$T/ptxas2")
[ -n "$r1" ] && [ -n "$r2" ] && [ "$r1" != "$r2" ] ||
	fail "memk variants: registers $r1 and $r2 (must differ)"
# 3 and 4 (.maxntid 128, 256: num_warps 4 and 8) only by their block size
r3=$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$T/ptxas3")
r4=$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$T/ptxas4")
[ -n "$r3" ] && [ "$r3" = "$r4" ] ||
	fail "memk variants 3, 4: registers $r3 and $r4 (must be equal)"
ONE=0f3F800000		# variant 1's 1.0f
THREE=0f40400000	# variant 2's 3.0f

PROBES='gpu:warp:memk { @w = count(); }'
P=
cleanup() {
	[ -n "$P" ] && kill -TERM "$P" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

start() {	# start [VAR=VALUE...] -- CUBIN [KEEP...]
	rm -f "$T/ready" "$T/spliced.ptx"
	env LD_LIBRARY_PATH=$T FAKECUDA_QUIET=1 FAKECUDA_PTX_OUT=$T/spliced.ptx \
		"$@" "$T/aprog" memk "$T/ready" $ARGS >"$T/prog.out" 2>&1 &
	P=$!
	wait_ready "$T/ready"
}

session() {	# session NAME: attach, 1 s of launches, detach; sets W, RUNS
	pause_prog
	before=$PAUSED_AT
	TMPDIR=$T "$GT" -v -p $P -e "$PROBES" >"$T/gt.$1" 2>"$T/gte.$1" &
	G=$!
	wait_for "$T/gte.$1" "$ARMED" ||
		{ cat "$T/gt.$1" "$T/gte.$1"; fail "$1: no probes live"; }
	kill -USR2 $P
	sleep 1
	pause_prog
	after=$PAUSED_AT
	kill -INT $G
	wait $G || { cat "$T/gte.$1"; fail "$1: gputrace failed"; }
	kill -USR2 $P
	RUNS=$((after - before))
	W=$(awk '$1 == "@w:" { print $2 }' "$T/gt.$1")
	[ "$RUNS" -gt 100 ] || fail "$1: too few launches: $RUNS"
}

stop() {	# the program ends well: every launch succeeded
	kill -TERM $P
	wait $P || { cat "$T/prog.out"; fail "$1: the program failed"; }
	P=
	grep -q '^launches [0-9]* failures 0$' "$T/prog.out" ||
		{ cat "$T/prog.out"; fail "$1: program result"; }
}

counted() {	# counted NAME MARK NOT: exact, from the cubin with MARK
	[ "$W" = $((8 * RUNS)) ] ||
		{ cat "$T/gt.$1" "$T/gte.$1"; fail "$1: @w $W != 8 x $RUNS launches"; }
	grep -q 'memk: PTX from a cubin in memory' "$T/gte.$1" ||
		{ cat "$T/gte.$1"; fail "$1: -v does not say where the PTX came from"; }
	grep -q "$2" "$T/spliced.ptx" && ! grep -q "$3" "$T/spliced.ptx" ||
		{ cat "$T/spliced.ptx"; fail "$1: instrumented from the wrong cubin"; }
	"$PTXAS" -arch=sm_90 "$T/spliced.ptx" -o /dev/null ||
		fail "$1: ptxas rejects the spliced PTX"
}

skipped() {	# skipped NAME WHY: the original ran, the skip said why
	[ -z "$W" ] || [ "$W" = 0 ] ||
		{ cat "$T/gt.$1"; fail "$1: @w $W from a kernel that was to be skipped"; }
	grep -qF "skipped memk: $2" "$T/gte.$1" ||
		{ cat "$T/gte.$1"; fail "$1: no skip saying: $2"; }
	[ ! -f "$T/spliced.ptx" ] || fail "$1: a module was instrumented"
}

# the cubin kept, and a second copy of it: one PTX (behind 64 MiB of
# random bytes: 64 chunks scanned, and 512 MiB never touched: passed over)
ARGS="$T/v1.cubin $T/v1.cubin" start FAKECUDA_REGS=1 ATTACHPROG_BALLAST_MB=64 \
	ATTACHPROG_RESERVE_MB=512 GPUTRACE_MEMSCAN_MB=128
# -l -p lists the kernels of cubins in the process's memory (the
# program's own .nv_fatbin has vadd only)
"$GT" -l 'gpu:*' -p $P >"$T/l.kept" 2>&1 || fail "-l -p"
grep -qx 'gpu:warp:memk' "$T/l.kept" && grep -qx 'gpu:warp:vadd' "$T/l.kept" ||
	{ cat "$T/l.kept"; fail "-l -p: memk (from memory) or vadd not listed"; }
session kept
counted kept $ONE $THREE
# a second attach on the same process scans afresh, as exact
rm -f "$T/spliced.ptx"
session again
counted again $ONE $THREE
stop kept

# variant 2 loaded, variant 1 kept too: told apart by the registers
ARGS="$T/v2.cubin $T/v1.cubin" start FAKECUDA_REGS=1
session variants
counted variants $THREE $ONE
stop variants

# 512 MiB never touched are not read: no cut at 128 MiB
grep -q 'memory scan: 1 cubin with PTX in [0-9]* MiB' "$T/gte.kept" &&
	! grep -q 'stopped at its budget' "$T/gte.kept" ||
	{ cat "$T/gte.kept"; fail "kept: the scan's -v line, or untouched pages read"; }
# a budget smaller than the memory (GPUTRACE_MEMSCAN_MB): the small
# mappings (the heap, where the cubin is) first, the 64 MiB of ballast
# cut, and -v says so
ARGS="$T/v1.cubin" start GPUTRACE_MEMSCAN_MB=16 ATTACHPROG_BALLAST_MB=64
session budget
counted budget $ONE $THREE
grep -q 'memory scan: stopped at its budget of 16 MiB; [1-9][0-9]* MiB of anonymous memory not scanned' "$T/gte.budget" ||
	{ cat "$T/gte.budget"; fail "budget: no -v line on the cut"; }
stop budget

# num_warps 4 loaded, num_warps 8 kept: told apart by the block size
ARGS="$T/v3.cubin $T/v4.cubin" start FAKECUDA_REGS=1
session warps
counted warps '^\.maxntid 128, 1, 1' '^\.maxntid 256'
stop warps

# the driver reports 1024 threads for a .maxntid 128 kernel (an H100 did,
# driver 580): the device's limit, not compared; the one cubin is used
ARGS="$T/v3.cubin" start FAKECUDA_REGS=1 FAKECUDA_THREADS=1024
session limit
counted limit '^\.maxntid 128, 1, 1' '^\.maxntid 256'
stop limit

# the same without the driver's registers: ambiguous, refused
ARGS="$T/v1.cubin $T/v2.cubin" start
session ambiguous
skipped ambiguous '2 cubins in memory define it with different code'
stop ambiguous

# the buffer freed after the load: nothing in memory
ARGS="$T/v1.cubin" start ATTACHPROG_FREE=1
"$GT" -l 'gpu:*' -p $P >"$T/l.freed" 2>&1 || fail "-l -p (freed)"
grep -q 'memk' "$T/l.freed" && { cat "$T/l.freed"; fail "-l -p: memk listed, its cubin freed"; }
grep -qx 'gpu:warp:vadd' "$T/l.freed" || { cat "$T/l.freed"; fail "-l -p (freed): vadd not listed"; }
session freed
skipped freed "SASS only (no PTX for it in the program's fatbins or in a cubin in memory)"
stop freed

# the loaded cubin freed, another memk kept: not the loaded code, refused
ARGS="$T/v1.cubin $T/v2.cubin" start ATTACHPROG_FREE=1 FAKECUDA_REGS=1
session other
# (the registers read from each side as ptxas -v gave them)
skipped other "the cubin in memory that defines it does not match the loaded function ($r1 registers, 1024 threads a block; the cubin's $r2, 0)"
stop other
exit 0
