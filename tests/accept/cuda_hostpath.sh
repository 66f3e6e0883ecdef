#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: cuda:launch clauses run in the agent (docs/hostpath.md)
# with -c, compiled by its JIT and interpreted (GPUTRACE_HBPF_JIT=0), and
# give byte for byte what the kernel uprobes give
# (GPUTRACE_CUDA_UPROBES=1): every aggregation, keys of every builtin
# the clause can have, predicates and variables, on the toolkit's stub
# and on the fake driver (kernel names); -v says which clause runs where;
# printf from the agent prints the same lines, and loses none at 100,000
# launches a second or says exactly how many it lost; cuda:launch:GLOB
# clauses match the same kernels on both paths; a program that calls
# exit() prints complete maps; print(@m), zero(), print(value), time()
# and exit(CODE) from the agent give the same text and status as from
# the kernel, and system() keeps event clauses on their uprobes; 10 threads launching
# 100,000 times each are counted exactly, and so is print(@); clear(@)
# every 300 ms while threads launch; and the other cuda: tests pass on
# the kernel path too.
. "$(dirname "$0")/../progs/cuda_lib.sh"
LOOP=$PROGS/cuda_loop
[ -x "$LOOP" ] || { echo "no $LOOP (run make)"; exit 77; }
stub=$(stub_dir) || { echo "no CUDA toolkit driver stub"; exit 77; }

PROG1='cuda:launch {
	@[func, gridDim.x, gridDim.y, gridDim.z, blockDim.x, blockDim.y,
	  blockDim.z, shmem, stream] = count();
	@k[kernel, probe] = count();
	@h = hist(gridDim.x); @s = sum(blockDim.x); @mn = min(shmem);
	@mx = max(gridDim.y); @av = avg(gridDim.x); @st = stats(blockDim.x);
	@l = lhist(gridDim.x, 0, 20, 4);
	@km[kernel] = max(gridDim.x); @ka[func] = avg(blockDim.x);
	@kh[func] = hist(shmem); @kl[func] = lhist(gridDim.x, 0, 10, 2);
	@kmin[func] = min(blockDim.x); @kst[func] = stats(gridDim.x);
}
cuda:memcpy { @m[kind] = sum(size); }
cuda:graph { @g[stream] = count(); }'
PROG2='cuda:launch /gridDim.x > 2/ {
	@s[comm, pid == cpid, tid > 0, uid] = sum(shmem); @m = min(stream);
	@x = max(blockDim.z); @a = avg(gridDim.y);
	@st[kernel, func] = stats(gridDim.z);
	$x = gridDim.x * blockDim.x;
	if ($x > 100) { @big[probe] = count(); } else { @small = sum($x); }
	@t[elapsed > 0, nsecs > 0] = count();
}'

# $T/out is $T/kernel, byte for byte, else WHO's output differs (exit 1)
same_as_kernel() {
	cmp -s "$T/kernel" "$T/out" && return 0
	echo "$1 output differs from the kernel's ($drv):"
	diff -u "$T/kernel" "$T/out"
	exit 1
}

# both ways on DRIVER (output format FMT, default text): the same
# output, not empty (not $dir: run sets it)
both() {
	drv=$1
	prog=$2
	fmt=${3:-text}
	GPUTRACE_CUDA_UPROBES=1 run "$drv" -f "$fmt" -c "$STUB -n 2" -e "$prog" ||
		{ echo "kernel path failed:"; cat "$T/err"; exit 1; }
	cp "$T/out" "$T/kernel"
	run "$drv" -f "$fmt" -v -c "$STUB -n 2" -e "$prog" ||
		{ echo "agent path failed:"; cat "$T/err"; exit 1; }
	grep -q '@' "$T/out" || { echo "no output:"; cat "$T/err"; exit 1; }
	same_as_kernel "the agent's"
	grep -q 'host clauses run in the agent, [1-9][0-9]* as native code$' "$T/err" ||
		{ echo "-v: the JIT compiled no clause:"; grep 'host clauses' "$T/err"; exit 1; }
	# and interpreted (the JIT declined): the same again
	cp "$T/err" "$T/jerr"
	GPUTRACE_HBPF_JIT=0 run "$drv" -f "$fmt" -v -c "$STUB -n 2" -e "$prog" ||
		{ echo "interpreted agent path failed:"; cat "$T/err"; exit 1; }
	grep -q 'as native code (GPUTRACE_HBPF_JIT=0)$' "$T/err" ||
		{ echo "-v: GPUTRACE_HBPF_JIT=0 not said:"; grep 'host clauses' "$T/err"; exit 1; }
	same_as_kernel "the interpreted agent's"
	cp "$T/jerr" "$T/err"
}

both "$stub" "$PROG1"
grep -q '^gputrace: cuda:launch@cuLaunchKernelEx runs in the agent$' "$T/err" ||
	{ echo "-v: no 'runs in the agent' line:"; cat "$T/err"; exit 1; }
grep -q '^gputrace: cuda:graph@cuGraphLaunch runs in the agent$' "$T/err" ||
	{ echo "-v: cuda:graph does not run in the agent:"; cat "$T/err"; exit 1; }
both "$FAKE" "$PROG1"
grep -q '^@k\[gt::vadd<int>, cuda:launch\]: 14$' "$T/out" ||
	{ echo "no kernel names:"; cat "$T/out"; exit 1; }
both "$stub" "$PROG2"
both "$FAKE" "$PROG2"

# cuda:launch:GLOB: the agent matches the names itself, with the kernel
# path's bits for every kernel of the workload's fatbins
PROG4='cuda:launch { @[kernel] = count(); }
cuda:launch:gt::* { @g[kernel] = count(); }
cuda:launch:vadd { @v = count(); }
cuda:launch:_Z4vadd* { @m[gridDim.x] = count(); }
cuda:launch:reduce* { @r[probe] = sum(blockDim.x); }
cuda:launch:_ZN2hz*IdLi3E* { @d[kernel] = count(); }
cuda:launch:__gputrace* { @agent = count(); }
cuda:launch:nomatch* { @x = count(); }'
both "$FAKE" "$PROG4"
grep -q '^gputrace: cuda:launch:gt::\*@cuLaunchKernel runs in the agent$' "$T/err" ||
	{ echo "-v: GLOB clause not in the agent:"; cat "$T/err"; exit 1; }
grep -q '^@g\[gt::vadd<int>\]: 14$' "$T/out" && grep -q '^@v: 4$' "$T/out" ||
	{ echo "GLOBs matched nothing:"; cat "$T/out"; exit 1; }

# printf from the agent: the same lines, in order
PROG3='cuda:launch /gridDim.x == 16 || gridDim.x == 2/ {
	printf("coop %d %s %s %d\n", blockDim.x, func, comm, tid == pid); }
cuda:launch { @n = count(); printf("k %s %d\n", kernel, gridDim.x); }'
both "$FAKE" "$PROG3"
both "$FAKE" "$PROG3" json
grep -q '^gputrace: cuda:launch@cuLaunchKernel runs in the agent$' "$T/err" ||
	{ echo "-v: printf clause not in the agent:"; cat "$T/err"; exit 1; }

# exit() in the program: the clauses the agent can run run there, and
# the maps printed at exit are complete (the agent's final snapshot may
# overwrite its answer to the tracer's last one: agentctl.c's seg_copy)
EXITPROG='cuda:launch /gridDim.x == 16/ {
	printf("coop %d\n", blockDim.x); }
cuda:launch { @n = count(); }
cuda:memcpy /size == 4000/ { exit(); }'
for i in 1 2 3; do
	run "$stub" -v -c "$STUB -n 1" -e "$EXITPROG" || { cat "$T/err"; exit 1; }
	want "coop 32
coop 32
coop 32
coop 32
coop 32


@n: 32"
done
grep -q '^gputrace: cuda:launch@cuLaunchKernel runs in the agent$' "$T/err" ||
	{ echo "-v: exit() program not in the agent:"; cat "$T/err"; exit 1; }

# events other than printf from the agent: print(@m), zero(), print(value),
# time(), exit(CODE), on the last launch the clauses see (cuda_stub -k then
# waits: nothing launches after the exit); the same text and status both
# ways, and a program with system() keeps its event clauses on uprobes
PROG5='cuda:launch { @n = count(); }
cuda:launch /gridDim.x == 16/ { @c = count(); @z[blockDim.x] = sum(gridDim.x); }
cuda:launch:_ZN2hz*IdLi3E* { print(@c); zero(@z); print(gridDim.x);
	time("t\n"); printf("bye %s\n", kernel); exit(3); }'
GPUTRACE_CUDA_UPROBES=1 run "$FAKE" -c "$STUB -n 1 -k" -e "$PROG5"
[ $? = 3 ] || { echo "kernel path: exit(3) status:"; cat "$T/err"; exit 1; }
cp "$T/out" "$T/kernel"
run "$FAKE" -v -c "$STUB -n 1 -k" -e "$PROG5"
[ $? = 3 ] || { echo "agent path: exit(3) status:"; cat "$T/err"; exit 1; }
want "@c: 5
6
t
bye hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64<double, 3>


@c: 5
@n: 29
@z[32]: 0"
cmp -s "$T/kernel" "$T/out" ||
	{ echo "events: the agent's output differs:"; diff -u "$T/kernel" "$T/out"; exit 1; }
grep -q '^gputrace: cuda:launch:_ZN2hz\*IdLi3E\*@cuLaunchKernel runs in the agent$' "$T/err" ||
	{ echo "-v: event clause not in the agent:"; cat "$T/err"; exit 1; }
run "$stub" -v -c "$STUB -n 1" -e 'cuda:launch /gridDim.x == 16/ { printf("x\n"); }
cuda:memcpy /size == 4000/ { system("true"); }' --unsafe ||
	{ echo "system():"; cat "$T/err"; exit 1; }
grep -q 'cuLaunchCooperativeKernel runs as a kernel uprobe: the program has cat(), system() or join()' "$T/err" ||
	{ echo "-v: system() not named:"; cat "$T/err"; exit 1; }

# every launch prints: at 100,000 a second (2 threads) nothing is lost
run "$stub" -c "$LOOP -t 2 -n 20000 -r 50000" \
	-e 'cuda:launch { printf("%d\n", gridDim.x); }' ||
	{ echo "paced printf:"; cat "$T/err"; exit 1; }
n=$(grep -c '^[12]$' "$T/out")
[ "$n" = 40000 ] && ! grep -q Lost "$T/out" ||
	{ echo "paced printf: $n of 40000 lines"; grep Lost "$T/out"; exit 1; }
# as fast as they go: what is not printed is reported lost, exactly
run "$stub" -c "$LOOP -t 2 -n 100000" \
	-e 'cuda:launch { printf("%d\n", gridDim.x); }' ||
	{ echo "printf flood:"; cat "$T/err"; exit 1; }
n=$(grep -c '^[12]$' "$T/out")
lost=$(awk '$1 == "Lost" { s += $2 } END { print s + 0 }' "$T/out")
[ $((n + lost)) = 200000 ] ||
	{ echo "printf flood: $n printed + $lost lost != 200000"; exit 1; }

GPUTRACE_CUDA_UPROBES=1 run "$stub" -v -c "$STUB -n 1" -e 'cuda:launch { @n = count(); }' ||
	{ cat "$T/err"; exit 1; }
grep -q '^gputrace: GPUTRACE_CUDA_UPROBES=1: cuda: clauses run as kernel uprobes$' "$T/err" ||
	{ echo "-v: GPUTRACE_CUDA_UPROBES not said:"; cat "$T/err"; exit 1; }
want "

@n: 32"

# nothing lost: 10 threads x 100,000 launches
run "$stub" -c "$LOOP -t 10 -n 100000" \
	-e 'cuda:launch { @n = count(); @k[gridDim.x] = count(); }' ||
	{ echo "threads:"; cat "$T/err"; exit 1; }
want "

@k[1]: 100000
@k[2]: 100000
@k[3]: 100000
@k[4]: 100000
@k[5]: 100000
@k[6]: 100000
@k[7]: 100000
@k[8]: 100000
@k[9]: 100000
@k[10]: 100000
@n: 1000000"

# print(@); clear(@) every 300 ms while 2 threads launch: every launch
# is in exactly one print (clear takes the print's snapshot as its base)
run "$stub" -c "$LOOP -t 2 -n 30000 -r 30000" \
	-e 'cuda:launch { @[gridDim.x] = count(); }
interval:ms:300 { print(@); clear(@); }' ||
	{ echo "print and clear:"; cat "$T/err"; exit 1; }
sums=$(awk -F'[][]|: ' '/^@\[/ { s[$2] += $4 } END { print s[1] + 0, s[2] + 0 }' "$T/out")
[ "$sums" = "30000 30000" ] ||
	{ echo "print and clear: totals $sums, not 30000 each:"; cat "$T/out"; exit 1; }

# the other cuda: tests, on the kernel path
for t in cuda_stub cuda_names; do
	GPUTRACE_CUDA_UPROBES=1 sh "$(dirname "$0")/$t.sh" >"$T/sub" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		echo "$t.sh with GPUTRACE_CUDA_UPROBES=1 failed:"
		cat "$T/sub"
		exit 1
	fi
done
exit 0
