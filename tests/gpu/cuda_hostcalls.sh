#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU: cuda:memcpy, cuda:malloc, cuda:free and cuda:sync clauses in the
# agent on a real driver (docs/hostpath.md).  Builds tests/gpu/hostcalls.cu
# (known driver API copies, allocations and synchronizations, then the
# runtime API's) and checks, with -c and with -p (the agent injected for
# the cuda: clauses alone):
#   - the driver API part is exactly what the program says it did
#     (sizes, kinds, entry points, retval 0, two event syncs);
#   - the agent's output is byte for byte the kernel uprobes' output
#     (GPUTRACE_CUDA_UPROBES=1), the runtime API's calls included;
#   - -v says the clauses run in the agent; sync durations plausible.
# Prints PASS/FAIL per check; exit 0 when all pass, 1 otherwise, 77
# without nvcc.
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$(command -v nvcc || echo "$CUDA/bin/nvcc")}
[ -x "$NVCC" ] || { echo "no nvcc"; exit 77; }
[ -x "$GT" ] || { echo "no gputrace at $GT"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/cuda_hostcalls.XXXXXX") || exit 1
trap 'kill $wpid $tpid 2>/dev/null; rm -rf "$T"' EXIT
failed=0

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; failed=1; }

"$NVCC" -O2 -arch=native -o "$T/hostcalls" tests/gpu/hostcalls.cu \
	-L"$CUDA/lib64/stubs" -lcuda 2>"$T/nvcc" ||
	"$NVCC" -O2 -arch=sm_90 -o "$T/hostcalls" tests/gpu/hostcalls.cu \
		-L"$CUDA/lib64/stubs" -lcuda 2>>"$T/nvcc" ||
	{ echo "FAIL build:"; cat "$T/nvcc"; exit 1; }
"$T/hostcalls" -o "$T/want" || { echo "FAIL hostcalls does not run natively"; exit 1; }

PROG='cuda:memcpy { @m[func, kind, size] = count(); }
cuda:malloc { @a[func, size, retval] = count(); }
cuda:free { @f[func] = count(); }
cuda:sync { @s[func, retval] = count(); }
cuda:sync /func == "cuEventSynchronize"/ { @e[func] = count(); }
cuda:sync /duration == 0 || duration > 10000000000/ { @badsync[func] = count(); }'

# the driver API lines gputrace printed ($T/out) are the program's
driver_part() {
	grep -E '^@(a\[cuMem(Alloc_v2|AllocHost_v2|AllocManaged|AllocPitch_v2), 7700|a\[cuMemAllocPitch_v2, 2313,|m\[.*, 700[1-6]\]|e\[)' "$T/out" |
		sort >"$T/g"
	sort "$T/want" >"$T/w"
	if cmp -s "$T/w" "$T/g"; then
		pass "$1: the driver API calls, exactly"
	else
		fail "$1: driver API calls (-want +got):"
		diff -u "$T/w" "$T/g" | sed 's/^/    /'
	fi
	if grep -q '^@badsync' "$T/out"; then
		fail "$1: implausible sync durations:"
		grep '^@badsync' "$T/out" | sed 's/^/    /'
	fi
}

# in_agent LABEL: -v said the clauses run in the agent, and the output
# ($T/out) is the kernel path's ($T/kernel), byte for byte
in_agent() {
	grep -q '^gputrace: cuda:memcpy@cuMemcpyHtoD_v2 runs in the agent$' "$T/err" &&
		grep -q '^gputrace: cuda:sync@cuEventSynchronize runs in the agent$' "$T/err" &&
		pass "$1 -v: the clauses run in the agent" ||
		{ fail "$1 -v: not in the agent:"; sed 's/^/    /' "$T/err"; }
	if cmp -s "$T/kernel" "$T/out"; then
		pass "$1: the agent's output is the kernel uprobes' (runtime API included)"
	else
		fail "$1: outputs differ (-kernel +agent):"
		diff -u "$T/kernel" "$T/out" | sed 's/^/    /'
	fi
}

# 1. -c both ways
GPUTRACE_CUDA_UPROBES=1 timeout -k 5 120 "$GT" -c "$T/hostcalls" -e "$PROG" \
	</dev/null >"$T/out" 2>"$T/err" || { fail "-c kernel path: status $?"; sed 's/^/    /' "$T/err"; }
driver_part "-c kernel uprobes"
cp "$T/out" "$T/kernel"
timeout -k 5 120 "$GT" -v -c "$T/hostcalls" -e "$PROG" \
	</dev/null >"$T/out" 2>"$T/err" || { fail "-c agent: status $?"; sed 's/^/    /' "$T/err"; }
driver_part "-c agent"
in_agent "-c"

# 2. -p both ways: the program waits (driver loaded) for SIGUSR1
run_p() {	# run_p LABEL: gputrace -p's output in $T/out
	"$T/hostcalls" -s >"$T/pout" 2>&1 &
	wpid=$!
	i=0
	until grep -q ready "$T/pout" 2>/dev/null || [ $i -ge 300 ]; do
		i=$((i + 1)); sleep 0.1
	done
	timeout -k 5 120 "$GT" -v -p "$wpid" -e "$PROG" </dev/null \
		>"$T/out" 2>"$T/err" &
	tpid=$!
	i=0
	# the last probe attached: the kernel path attaches cuda:memcpy
	# last; the agent's path injects first, then attaches nothing
	until grep -q '^gputrace: attached cuda:memcpy\|^gputrace: agent attached to pid' "$T/err" 2>/dev/null ||
	      [ $i -ge 300 ]; do
		i=$((i + 1)); sleep 0.1
	done
	sleep 1
	kill -USR1 "$wpid"
	wait "$wpid"
	wpid=
	wait "$tpid" || { fail "$1: gputrace status $?"; sed 's/^/    /' "$T/err"; }
	tpid=
}
GPUTRACE_CUDA_UPROBES=1 run_p "-p kernel uprobes"
driver_part "-p kernel uprobes"
cp "$T/out" "$T/kernel"
run_p "-p agent"
driver_part "-p agent"
grep -q '^gputrace: agent attached to pid' "$T/err" &&
	pass "-p: the agent injected for cuda: clauses alone" ||
	{ fail "-p: no agent:"; sed 's/^/    /' "$T/err"; }
in_agent "-p"
[ $failed -eq 0 ] || { echo "last gputrace output:"; sed 's/^/    /' "$T/out" "$T/err"; }
exit $failed
