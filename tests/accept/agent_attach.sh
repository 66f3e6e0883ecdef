#!/bin/sh
# SPDX-License-Identifier: MIT
# gputrace -p with device probes, without a GPU (docs/attach.md): the
# agent injected with ptrace into a running program on the fake libcuda.so.1
# (agent_fakecuda.c), which took its entry points before the attach
# (agent_attachprog.c: cuGetProcAddress pointers and direct calls, two
# threads).  Checks: the inline hooks see those launches (the fake runs
# the probe through the launch parameter: 8 warps a launch), @w = 8 x the
# launches the program made while attached, exactly (it is paused around
# attach and detach), cuda:launch:GLOB on the agent's wrappers naming a
# kernel loaded before the attach, cuda:complete (fake CUPTI), the
# driver's bytes restored at detach, a second and third attach on the same
# process, a second tracer refused while one is attached, the tracer
# SIGKILLed while attached (the program goes on, hooks restored), the
# configuration 0600 and the socket abstract, the refusals (no libcuda
# yet; an unprivileged user), no fatbin read at start-up while the agent
# names kernels (strace).  Needs root (ptrace of a process that is not
# our child, and BPF for cuda:launch).  Exit 0 pass, 1 fail, 77 skip.

. tests/progs/agent_lib.sh

[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
[ -f "$(dirname "$AGENT")/libZydis.so.4.0" ] || { echo "no libZydis next to the agent"; exit 77; }
case $GT in /*) GTABS=$GT ;; *) GTABS=$(pwd)/$GT ;; esac

# the fake driver (entry points 16-byte aligned; an unaligned one would
# stay hooked, inert, at detach) and the program
. tests/progs/attach_build.sh
# cuda:complete: the fake CUPTI, which the fake driver tells of each run
$CC $W -shared -fPIC -I"${CUDA_HOME:-/usr/local/cuda}/include" \
	-Wl,-soname,libcupti.so.13 tests/accept/agent_fakecupti.c \
	-o "$T/libcupti.so.13" -lpthread || fail "building the fake libcupti"

PROBES='gpu:warp:vadd { @w = count(); } cuda:launch:vadd { @l = count(); }
cuda:launch { @k[kernel] = count(); } cuda:complete:vadd { @c = count(); }'
P=
cleanup() {
	[ -n "$P" ] && kill -TERM "$P" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# the first 8 bytes of the fake's cuLaunchKernel, in the process / the file
fn_off=$(nm -D --defined-only "$T/libcuda.so.1" | awk '$3 == "cuLaunchKernel" { print $1 }')
live_bytes() {
	base=$(awk -v f="$T/libcuda.so.1" '$6 == f && $3 == "00000000" { print $1; exit }' /proc/$P/maps)
	addr=$(( 0x${base%%-*} + 0x$fn_off ))
	dd if=/proc/$P/mem bs=8 count=1 iflag=skip_bytes skip=$addr 2>/dev/null | od -An -tx1
}
file_bytes() {
	dd if="$T/libcuda.so.1" bs=8 count=1 iflag=skip_bytes skip=$((0x$fn_off)) 2>/dev/null | od -An -tx1
}

LD_LIBRARY_PATH=$T FAKECUDA_QUIET=1 "$T/aprog" _Z4vaddPKfS0_Pfi "$T/ready" >"$T/prog.out" 2>&1 &
P=$!
wait_ready "$T/ready"
orig=$(file_bytes)
[ "$(live_bytes)" = "$orig" ] || fail "cuLaunchKernel differs before any attach"

# ---- refusals: no driver yet; another user
sleep 30 &
S=$!
"$GT" -p $S -e "$PROBES" >/dev/null 2>"$T/e1" && fail "-p of a process without libcuda"
kill $S
grep -q 'has not loaded the CUDA driver (libcuda.so.1) yet' "$T/e1" ||
	{ cat "$T/e1"; fail "no clear refusal without libcuda"; }
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$GTABS" -p $P \
		-e "$PROBES" >/dev/null 2>"$T/e2" && fail "-p as nobody"
	grep -q 'root or CAP_SYS_PTRACE' "$T/e2" ||
		{ cat "$T/e2"; fail "no clear refusal for an unprivileged user"; }
fi

# a process holding another build's agent (preloaded, passing through)
mkdir "$T/other" && cp "$AGENT" "$T/other/"
LD_PRELOAD=$T/other/libgputrace-agent.so LD_LIBRARY_PATH=$T FAKECUDA_QUIET=1 \
	"$T/aprog" _Z4vaddPKfS0_Pfi "$T/ready2" >/dev/null 2>&1 &
Q=$!
i=0
while [ ! -f "$T/ready2" ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.05; done
"$GT" -p $Q -e "$PROBES" >/dev/null 2>"$T/e4" && fail "-p with two agents"
kill -TERM $Q
wait $Q
grep -q "has another gputrace agent ($T/other/" "$T/e4" ||
	{ cat "$T/e4"; fail "no clear refusal for another build's agent"; }

# ---- attach (the program paused around attach and detach): exact counts
attach_once() {	# attach_once N: one session, checks, leaves $T/gtN
	n=$1
	pause_prog
	before=$PAUSED_AT
	TMPDIR=$T "$GT" -v ${GTV:-} -p $P -e "$PROBES" >"$T/gt$n" 2>"$T/gte$n" &
	G=$!
	# live once -v says the agent is in: "Attaching" comes before that
	wait_for "$T/gte$n" "$ARMED" || { cat "$T/gt$n" "$T/gte$n"; fail "attach $n: no probes live"; }
	[ "$(live_bytes)" = "$orig" ] &&
		{ cat "$T/gt$n" "$T/gte$n"; fail "attach $n: cuLaunchKernel not patched"; }
	if [ "$n" = 1 ]; then
		# security: config 0600 in a private directory, abstract socket
		cfg=$(ls "$T"/gputrace.*/config)
		[ "$(stat -c %a "$cfg")" = 600 ] || fail "config mode $(stat -c %a "$cfg")"
		ls "$T"/gputrace.*/sock 2>/dev/null && fail "a socket file exists"
		grep -q "@gputrace-$G-" /proc/net/unix || fail "no abstract socket"
		# a second tracer is refused while one is attached
		"$GT" -p $P -e "$PROBES" >/dev/null 2>"$T/e3" && fail "second tracer attached"
		grep -q 'another gputrace is tracing this process' "$T/e3" ||
			{ cat "$T/e3"; fail "no clear refusal for a second tracer"; }
	fi
	kill -USR2 $P	# run
	sleep 1
	pause_prog
	after=$PAUSED_AT
	kill -INT $G
	wait $G || { cat "$T/gte$n"; fail "attach $n: gputrace failed"; }
	w=$(awk '$1 == "@w:" { print $2 }' "$T/gt$n")
	l=$(awk '$1 == "@l:" { print $2 }' "$T/gt$n")
	runs=$((after - before))
	[ "$runs" -gt 100 ] || fail "attach $n: too few launches: $runs"
	# every launch while attached, whole: 8 warps each
	[ "$w" = $((8 * runs)) ] || { cat "$T/gt$n" "$T/gte$n"; fail "attach $n: @w $w != 8 x $runs launches"; }
	# cuda:launch:GLOB sits in the agent (the driver's entries are
	# patched), which names kernels loaded before the attach
	[ "$l" = "$runs" ] || { cat "$T/gt$n" "$T/gte$n"; fail "attach $n: @l $l for $runs launches"; }
	grep -qxF "@k[vadd]: $runs" "$T/gt$n" || { cat "$T/gt$n"; fail "attach $n: kernel not named"; }
	# CUPTI in the agent: every run, again after a re-attach
	c=$(awk '$1 == "@c:" { print $2 }' "$T/gt$n")
	[ "$c" = "$runs" ] || { cat "$T/gt$n" "$T/gte$n"; fail "attach $n: cuda:complete $c for $runs runs"; }
	sleep 0.2
	[ "$(live_bytes)" = "$orig" ] ||
		{ cat "$T/gte$n"; fail "attach $n: cuLaunchKernel not restored at detach"; }
	kill -USR2 $P	# run
}
# three sessions (GT_ATTACH_ROUNDS more, to hunt a race between them)
round=1	# not i: wait_for counts with it
while [ $round -le "${GT_ATTACH_ROUNDS:-3}" ]; do
	attach_once $round
	round=$((round + 1))
done

# ---- the tracer SIGKILLed while attached: the program goes on, unhooked
TMPDIR=$T "$GT" -p $P -e "$PROBES" >"$T/gtkill" 2>"$T/gtekill" &
G=$!
wait_for "$T/gtkill" 'Attaching' || { cat "$T/gtekill"; fail "attach before SIGKILL"; }
sleep 0.3
kill -KILL $G
wait $G 2>/dev/null
sleep 0.5
[ "$(live_bytes)" = "$orig" ] || fail "cuLaunchKernel not restored after the tracer was killed"

# ---- start-up: while the agent names kernels (it matches cuda:launch
# GLOBs itself), the tracer reads no fatbin of the process (seconds on a
# PyTorch job: issue 36, bench/attach-fatbins); on the kernel path the
# namers need .cuda_match, so it reads them (the program's .nv_fatbin)
# (LeakSanitizer cannot run under ptrace: off for these two runs)
if command -v strace >/dev/null; then
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -e trace=open,openat -o "$T/st1" "$GT" -p $P -e \
		'cuda:launch:vadd { @l = count(); } gpu:warp:vadd { @w = count(); }
		 interval:ms:300 { exit(); }' >"$T/gt10" 2>"$T/gte10" ||
		{ cat "$T/gte10"; fail "attach under strace"; }
	grep -q "^@l: [1-9]" "$T/gt10" || { cat "$T/gt10"; fail "no launch seen under strace"; }
	grep -qF "\"$T/aprog\"" "$T/st1" &&
		fail "the tracer read the program's fatbins while the agent names its kernels"
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	GPUTRACE_CUDA_UPROBES=1 strace -f -e trace=open,openat -o "$T/st2" \
		"$GT" -p $P -e 'cuda:launch:vadd { @l = count(); }
		interval:ms:300 { exit(); }' >"$T/gt11" 2>"$T/gte11" ||
		{ cat "$T/gte11"; fail "kernel path under strace"; }
	grep -qF "\"$T/aprog\"" "$T/st2" ||
		fail "the kernel path did not read the program's fatbins for cuda:launch:GLOB"
fi
kill -TERM $P
wait $P || { cat "$T/prog.out"; fail "the program failed"; }
P=
grep -q '^launches [0-9]* failures 0$' "$T/prog.out" || { cat "$T/prog.out"; fail "program result"; }
exit 0
