#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: a cuda:launch clause in the agent (docs/hostpath.md) adds
# no driver call to a steady-state launch.  The toolkit's stub makes
# every driver call free, so bench/hostpath cannot see one that costs
# 50-200 ns on a real driver; here every driver entry point the agent
# can call (its tables in runtime/agent/agent_drv.c and agent_hooks.c,
# read from the sources so that a new one is covered) gets a uprobe
# that counts its calls while tests/progs/cuda_loop launches N times
# from 2 threads: cuLaunchKernel must be called exactly 2N times (the
# agent's own call of the driver's), and every other entry point a
# bounded number of times (a kernel's first sight asks for its name),
# never once per launch.  And the kernel path's naming uprobes are not
# attached when every cuda:launch clause runs in the agent.
. "$(dirname "$0")/../progs/cuda_lib.sh"
LOOP=$PROGS/cuda_loop
SRC=$(dirname "$0")/../../runtime/agent
[ -x "$LOOP" ] || { echo "no $LOOP (run make)"; exit 77; }
[ -f "$SRC/agent_drv.c" ] || { echo "no agent sources at $SRC"; exit 77; }
stub=$(stub_dir) || { echo "no CUDA toolkit driver stub"; exit 77; }
lib=$(readlink -f "$stub/libcuda.so.1")
N=3000

# the entry points the agent looks up, as the stub exports them
names=$(sed -n 's/.*"\(cu[A-Za-z0-9_]*\)".*/\1/p' "$SRC/agent_drv.c" \
	"$SRC/agent_hooks.c" | sort -u)
exports=$(nm -D --defined-only "$lib" 2>/dev/null | awk '{ print $3 }')
[ -n "$exports" ] || { echo "nm cannot read $lib"; exit 77; }
probes=
count=0
for f in $names; do
	echo "$exports" | grep -qx "$f" || continue
	probes="${probes:+$probes, }uprobe:$lib:$f"
	count=$((count + 1))
done
[ "$count" -ge 40 ] || { echo "FAIL: only $count entry points found in $SRC"; exit 1; }

run "$stub" -v -c "$LOOP -t 2 -n $N" -e "
cuda:launch { @n = count(); @k[kernel, gridDim.x] = count(); }
$probes { @c[func] = count(); }" || { echo "FAIL: gputrace $?"; cat "$T/err"; exit 1; }
grep -q 'cuda:launch@cuLaunchKernel runs in the agent' "$T/err" ||
	{ echo "FAIL: the clause did not run in the agent"; cat "$T/err"; exit 1; }
grep -qx "@n: $((2 * N))" "$T/out" ||
	{ echo "FAIL: launches counted"; cat "$T/out"; exit 1; }
grep -qx "@c\[cuLaunchKernel\]: $((2 * N))" "$T/out" ||
	{ echo "FAIL: the driver's cuLaunchKernel was not called once per launch"; cat "$T/out"; exit 1; }
# the kernel path's naming uprobes (cuModuleGetFunction...) would trap
# wherever the program asks for a handle, which a runtime may do at
# every launch: the agent names handles itself, so they stay off
grep -q 'naming uprobes not attached' "$T/err" && ! grep -q 'attached cuda:\.' "$T/err" ||
	{ echo "FAIL: naming uprobes attached with every clause in the agent"; cat "$T/err"; exit 1; }
# every other entry point: a few calls at most (first sights, setup)
bad=$(sed -n 's/^@c\[\(cu[A-Za-z0-9_]*\)\]: \([0-9]*\)$/\1 \2/p' "$T/out" |
      awk '$1 != "cuLaunchKernel" && $2 > 20')
if [ -n "$bad" ]; then
	echo "FAIL: driver calls that grow with the launches ($((2 * N))):"
	echo "$bad"
	exit 1
fi
# a launch clause on the kernel path (delete() is not in the agent: if
# it comes there, take another kernel-only feature) still has them, and
# so does GPUTRACE_CUDA_UPROBES=1
run "$stub" -v -c "$LOOP -n 10" -e 'cuda:launch { @k[kernel] = count(); }
cuda:launch { @x[1] = 1; delete(@x[1]); }' ||
	{ echo "FAIL: gputrace $?"; cat "$T/err"; exit 1; }
grep -q 'runs as a kernel uprobe: delete()' "$T/err" &&
	grep -q 'attached cuda:\.ret:cuModuleGetFunction' "$T/err" ||
	{ echo "FAIL: naming uprobes missing for a clause on the kernel path"; cat "$T/err"; exit 1; }
GPUTRACE_CUDA_UPROBES=1 run "$stub" -v -c "$LOOP -n 10" -e 'cuda:launch { @k[kernel] = count(); }' ||
	{ echo "FAIL: gputrace $?"; cat "$T/err"; exit 1; }
grep -q 'attached cuda:\.ret:cuModuleGetFunction' "$T/err" ||
	{ echo "FAIL: naming uprobes missing with GPUTRACE_CUDA_UPROBES=1"; cat "$T/err"; exit 1; }
exit 0
