#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: -p PID with cuda: clauses alone (no gpu: or cuda:complete
# probe) injects the agent, which runs the clauses it can
# (docs/hostpath.md), and prints byte for byte what the kernel uprobes
# print (GPUTRACE_CUDA_UPROBES=1, no injection); -v says the agent was
# attached and which clause runs where; a target that another tracer
# holds (strace) cannot be injected: one line says so, and the clauses
# run as kernel uprobes, still with the same output; a program whose
# clauses the agent can run none of is not injected at all (its probes
# on the driver, not on the agent's wrappers).  The target is
# tests/progs/cuda_calls on the fake driver, which opens the driver and
# waits for a file before it calls (3 rounds x 2 threads).  Needs root.
. "$(dirname "$0")/../progs/cuda_lib.sh"
CALLS=$PROGS/cuda_calls
[ -x "$CALLS" ] || { echo "no $CALLS (run make)"; exit 77; }
[ -f "$(dirname "$GT")/libZydis.so.4.0" ] ||
	{ echo "no libZydis next to the agent (-p's inline hooks)"; exit 77; }
command -v strace >/dev/null || { echo "no strace (tests/install-deps.sh)"; exit 77; }

W=
S=
cleanup() {
	[ -n "$W" ] && kill "$W" 2>/dev/null
	[ -n "$S" ] && kill "$S" 2>/dev/null
}
trap cleanup EXIT

# attach [strace] [GPUTRACE ARGS...]: run the workload (under strace:
# held by another tracer), gputrace -p it, let it call once gputrace
# has attached; gputrace's output in $T/out (no "Attaching"), its
# stderr in $T/err
attach() {
	rm -f "$T/go" "$T/raw"
	if [ "$1" = strace ]; then
		shift
		LD_LIBRARY_PATH=$FAKE strace -f -o /dev/null \
			"$CALLS" -n 3 -t 2 -g "$T/go" >"$T/wl" 2>&1 &
		S=$!
		i=0
		until W=$(pgrep -P $S) || [ $i -gt 100 ]; do
			i=$((i + 1)); sleep 0.05
		done
	else
		LD_LIBRARY_PATH=$FAKE "$CALLS" -n 3 -t 2 -g "$T/go" >"$T/wl" 2>&1 &
		W=$!
		S=
	fi
	# the driver is loaded before -p looks
	i=0
	until grep -q libcuda "/proc/$W/maps" 2>/dev/null || [ $i -gt 200 ]; do
		i=$((i + 1)); sleep 0.05
	done
	# new files: an earlier run's "Attaching" would be seen before the
	# background gputrace truncates them
	rm -f "$T/raw" "$T/err"
	timeout -k 2 60 "$GT" -p "$W" "$@" >"$T/raw" 2>"$T/err" &
	G=$!
	i=0	# (a loaded machine: up to 40 s)
	until grep -q '^Attaching' "$T/raw" 2>/dev/null || [ $i -gt 800 ]; do
		i=$((i + 1)); sleep 0.05
	done
	sleep 0.3
	touch "$T/go"
	wait $G
	rc=$?
	wait ${S:-$W}
	W=
	S=
	sed -E '/^Attach(ing|ed) [0-9]+ probes?(\.\.\.)?$/d' "$T/raw" >"$T/out"
	[ $rc = 0 ] || { echo "gputrace -p $* failed ($rc):"; cat "$T/err"; echo "the workload:"; cat "$T/wl"; exit 1; }
	grep -q '^calls 222 failed 18$' "$T/wl" ||
		{ echo "the workload:"; cat "$T/wl"; exit 1; }
}

PROG='cuda:memcpy { @m[func, kind] = sum(size); }
cuda:malloc { @a[func, retval] = sum(size); }
cuda:free /arg0 > 0x7001/ { @f[func] = count(); }
cuda:sync { @s[func, retval] = count(); @d = min(duration > 1000000); }
cuda:sync /retval == 400/ { printf("%s %d\n", func, retval); }'

GPUTRACE_CUDA_UPROBES=1 attach -v -e "$PROG"
cp "$T/out" "$T/kernel"
grep -q 'agent attached' "$T/err" &&
	{ echo "GPUTRACE_CUDA_UPROBES=1 injected the agent:"; cat "$T/err"; exit 1; }
grep -q '^@s\[cuEventSynchronize, 400\]: 6$' "$T/kernel" ||
	{ echo "kernel path:"; cat "$T/kernel"; exit 1; }

attach -v -e "$PROG"
grep -q "^gputrace: agent attached to pid" "$T/err" &&
	grep -q '^gputrace: cuda:memcpy@cuMemcpyAsync_ptsz runs in the agent$' "$T/err" &&
	grep -q '^gputrace: cuda:sync@cuEventSynchronize runs in the agent$' "$T/err" ||
	{ echo "-p: the agent did not run the clauses:"; cat "$T/err"; exit 1; }
cmp -s "$T/kernel" "$T/out" ||
	{ echo "-p: the agent's output differs:"; diff -u "$T/kernel" "$T/out"; exit 1; }

# another tracer holds the target: kernel uprobes, said once
attach strace -e "$PROG"
[ "$(grep -c 'cuda: clauses run as kernel uprobes instead' "$T/err")" = 1 ] ||
	{ echo "-p: no fallback line:"; cat "$T/err"; exit 1; }
cmp -s "$T/kernel" "$T/out" ||
	{ echo "-p fallback: output differs:"; diff -u "$T/kernel" "$T/out"; exit 1; }

# nothing the agent can run: no injection, probes on the driver
PROG2='cuda:malloc { @a[func, retval] = sum(size); @y[1] = count(); delete(@y[1]); }'
GPUTRACE_CUDA_UPROBES=1 attach -e "$PROG2"
cp "$T/out" "$T/kernel"
grep -q '^@a\[cuMemAllocHost_v2, 0\]: 172032$' "$T/kernel" ||
	{ echo "kernel path:"; cat "$T/kernel"; exit 1; }
attach -v -e "$PROG2"
grep -q 'agent attached' "$T/err" &&
	{ echo "injected with nothing to run:"; cat "$T/err"; exit 1; }
cmp -s "$T/kernel" "$T/out" ||
	{ echo "-p without the agent: output differs:"; diff -u "$T/kernel" "$T/out"; exit 1; }
