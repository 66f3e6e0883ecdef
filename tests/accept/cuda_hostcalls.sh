#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: cuda:memcpy, cuda:malloc, cuda:free and cuda:sync clauses
# run in the agent (docs/hostpath.md) and give byte for byte what the
# kernel uprobes give (GPUTRACE_CUDA_UPROBES=1): every entry point of
# each (tests/progs/cuda_calls.c, through dlsym pointers, 2 threads), on
# the fake driver (calls succeed, some fail with 2, 201, 400) and the
# toolkit's stub (every call fails with 34); the builtins of each probe
# (size, kind, arg0, retval, duration, func, probe) and the host ones,
# every aggregation, predicates, printf; the counts are the workload's
# own (computed from its table, not copied from a run); -v says where
# each clause runs; a malloc clause the agent cannot run (delete()) next
# to one it can on the same entry points: the saver of the entry value
# stays for it, and the output is still the kernel path's; where every
# clause of an entry point runs in the agent, the saver's uprobe is not
# attached.
. "$(dirname "$0")/../progs/cuda_lib.sh"
CALLS=$PROGS/cuda_calls
[ -x "$CALLS" ] || { echo "no $CALLS (run make)"; exit 77; }
stub=$(stub_dir) || { echo "no CUDA toolkit driver stub"; exit 77; }
W="$CALLS -n 3 -t 2"

PROG1='cuda:memcpy { @m[func, kind] = sum(size); @mc[probe, tid > 0] = count();
	@mh = hist(size); @ml = lhist(size, 0, 2000, 500); }
cuda:malloc { @a[func, retval] = sum(size); @ah = hist(size);
	@amx[func] = max(size); @amn = min(size); }
cuda:free { @f[func] = count(); @fa = sum(arg0); @fs[func] = stats(arg0); }
cuda:sync { @s[func, retval] = count(); @d[func] = min(duration > 1000000);
	@dv[func] = avg(duration > 0); }'
PROG2='cuda:malloc /retval != 0/ { @fail[func, retval, comm] = count(); }
cuda:malloc /retval == 0 && size > 20000/ { $x = size / 4096;
	@big[$x, pid == cpid] = count(); }
cuda:memcpy /kind == "HtoD"/ { @h = sum(size); }
cuda:sync /retval/ { printf("sync %s %d\n", func, retval); }
cuda:free /arg0 == 0x7003/ { printf("free %s %x\n", func, arg0); }'
# one clause of cuda:malloc the agent cannot run (delete()), one it can
PROG3='cuda:malloc { @x[func] = sum(size); @y[func] = count(); delete(@y[func]); }
cuda:malloc { @r[func, retval] = count(); @z = sum(size); }
cuda:sync { @s[func] = count(); }'

# both DRIVER PROG [sort]: sort: lines compared in any order (printf
# from two threads interleaves differently from run to run, either way)
both() {
	drv=$1
	prog=$2
	GPUTRACE_CUDA_UPROBES=1 run "$drv" -v -c "$W" -e "$prog" ||
		{ echo "kernel path failed:"; cat "$T/err"; exit 1; }
	cp "$T/out" "$T/kernel"
	cp "$T/err" "$T/kerr"
	run "$drv" -v -c "$W" -e "$prog" ||
		{ echo "agent path failed:"; cat "$T/err"; exit 1; }
	grep -q '@\|sync\|free' "$T/out" || { echo "no output:"; cat "$T/err"; exit 1; }
	if [ "$3" = sort ]; then
		sort "$T/kernel" >"$T/k.sorted"
		sort "$T/out" >"$T/a.sorted"
		cmp -s "$T/k.sorted" "$T/a.sorted" || {
			echo "the agent's lines differ from the kernel's ($drv):"
			diff -u "$T/k.sorted" "$T/a.sorted"
			exit 1
		}
	elif ! cmp -s "$T/kernel" "$T/out"; then
		echo "the agent's output differs from the kernel's ($drv):"
		diff -u "$T/kernel" "$T/out"
		exit 1
	fi
}

# the value of map line KEY in $T/out, or "none"
val() {
	v=$(grep -F "$1: " "$T/out" | head -1)
	echo "${v##*: }" | grep . || echo none
}
expect() {	# expect KEY VALUE
	[ "$(val "$1")" = "$2" ] ||
		{ echo "$1 is $(val "$1"), not $2:"; cat "$T/out"; exit 1; }
}

both "$FAKE" "$PROG1"
for p in memcpy@cuMemcpyHtoD_v2_ptds memcpy@cuMemcpyAsync_ptsz \
	 malloc@cuMemAllocPitch_v2 malloc@cuMemHostAlloc free@cuMemFreeHost \
	 free@cuMemFreeAsync_ptsz sync@cuCtxSynchronize_v2 \
	 sync@cuEventSynchronize; do
	grep -q "^gputrace: cuda:$p runs in the agent\$" "$T/err" ||
		{ echo "-v: cuda:$p not in the agent:"; cat "$T/err"; exit 1; }
done
grep -q '^gputrace: attached cuda:\.entry:cuMemAlloc_v2$' "$T/kerr" ||
	{ echo "the kernel path attached no saver:"; cat "$T/kerr"; exit 1; }
grep -q '^gputrace: attached cuda:' "$T/err" &&
	{ echo "cuda: uprobes attached although the agent runs every clause:"; cat "$T/err"; exit 1; }
# 6 rounds (3 x 2 threads): copy i moves 100 (i + 1) bytes, allocation
# i asks for 4096 (i + 1) (pitch: 100 (i + 1) x 3)
expect '@m[cuMemcpyHtoD_v2, HtoD]' 600
expect '@m[cuMemcpyDtoHAsync_v2_ptsz, DtoH]' 4800
expect '@m[cuMemcpyAsync_ptsz, any]' 9600
expect '@mc[cuda:memcpy, 1]' 96
expect '@a[cuMemAllocFromPoolAsync_ptsz, 0]' 122880
expect '@a[cuMemAllocPitch_v2, 0]' 16200
expect '@a[cuMemAllocAsync, 2]' $((6 * (2 << 40)))
expect '@f[cuMemFreeHost]' 6
expect '@s[cuCtxSynchronize_v2, 201]' 6
expect '@s[cuEventSynchronize, 0]' 6
expect '@d[cuStreamSynchronize_ptsz]' 1
both "$stub" "$PROG1"
expect '@a[cuMemAllocManaged, 34]' 147456
expect '@s[cuEventSynchronize, 34]' 12
both "$FAKE" "$PROG2" sort
[ "$(grep -c '^sync cuCtxSynchronize_v2 201$' "$T/out")" = 6 ] &&
	[ "$(grep -c '^free cuMemFreeHost 7003$' "$T/out")" = 6 ] ||
	{ echo "printf from the agent:"; cat "$T/out"; exit 1; }
expect '@fail[cuMemAllocAsync, 2, cuda_calls]' 6
expect '@h' $((6 * (100 + 200 + 300 + 400)))
both "$stub" "$PROG2" sort

both "$FAKE" "$PROG3"
grep -q '^gputrace: cuda:malloc@cuMemAlloc_v2 runs as a kernel uprobe: delete() is not in the agent yet$' "$T/err" &&
	grep -q '^gputrace: attached cuda:\.entry:cuMemAlloc_v2$' "$T/err" &&
	! grep -q '^gputrace: attached cuda:\.entry:cuCtxSynchronize$' "$T/err" ||
	{ echo "-v: mixed paths:"; cat "$T/err"; exit 1; }
expect '@r[cuMemAlloc_v2, 0]' 6
expect '@x[cuMemAllocManaged]' 147456
