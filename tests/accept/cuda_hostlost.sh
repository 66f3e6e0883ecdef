#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 32, "nothing lost"): cuda:launch clauses in the
# agent, on the fake libcuda (tests/accept/agent_fakecuda.c, launches
# that look at their function handle) driven by cuda_loop -m (kernels
# k0..k9 of a module, thread i launches k<i> with grid i + 1):
#  - 10 threads launching N times each give exact counts, per kernel
#    and per grid, and so do kernel uprobes (GPUTRACE_CUDA_UPROBES=1,
#    fewer launches: each one traps); so do 4 threads launching as the
#    CUDA runtime does (cuda_loop -l -x: CUkernel handles of a library,
#    by cuLaunchKernelEx), with clauses whose predicate reads pid;
#  - 2 threads launching 200 kernels in turn (more names than a thread's
#    name cache has lines, and a new key at every launch for the JIT's
#    lookup memo) count each kernel exactly, as kernel uprobes do;
#  - a clause that prints on every launch at 100,000 launches a second
#    (2 threads at 50,000) prints every line, each thread's exactly,
#    and reports no loss;
#  - unpaced, the lines printed plus the events reported lost ("Lost N
#    events", bpftrace's words; JSON's lost_events) equal the launches
#    exactly, on both paths.
# N is GT_HOSTLOST_LAUNCHES (default 100000; the acceptance line's
# figure: GT_HOSTLOST_LAUNCHES=1000000, about 8 s on a 2-core machine).
. "$(dirname "$0")/../progs/cuda_lib.sh"
LOOP=$PROGS/cuda_loop
[ -x "$LOOP" ] || { echo "no $LOOP (run make)"; exit 77; }
N=${GT_HOSTLOST_LAUNCHES:-100000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

mkdir -p "$T/fake"
${CC:-cc} -std=gnu11 -O1 -Wall -I"$ROOT" -shared -fPIC \
	-Wl,-soname,libcuda.so.1 "$ROOT/tests/accept/agent_fakecuda.c" \
	-o "$T/fake/libcuda.so.1" -ldl || { echo "building the fake libcuda"; exit 1; }
export FAKECUDA_QUIET=1

# gputrace ARGS on the fake driver, at most LIMIT seconds (default 120)
go() {
	LD_LIBRARY_PATH=$T/fake timeout -k 2 "${LIMIT:-120}" "$GT" "$@" \
		</dev/null >"$T/raw" 2>"$T/err"
	rc=$?
	sed -E '/^Attach(ing|ed) [0-9]+ probes?(\.\.\.)?$/d' "$T/raw" >"$T/out"
	[ "$rc" = 0 ] || { echo "gputrace $*: status $rc"; cat "$T/err"; exit 1; }
}

# the expected maps for THREADS x LAUNCHES
counts() {
	printf '\n\n'
	i=1
	while [ "$i" -le "$1" ]; do
		echo "@g[$i]: $(($2 * 32))"
		i=$((i + 1))
	done
	i=0
	while [ "$i" -lt "$1" ]; do
		echo "@k[k$i]: $2"
		i=$((i + 1))
	done
	echo "@n: $(($1 * $2))"
}

# exact OPTS THREADS ENTRY PROG [PID]: cuda_loop OPTS with THREADS
# threads counted exactly in the agent (N launches each; -v says ENTRY's
# clauses run there) and as kernel uprobes (2,000 each); PID: PROG also
# counts @p where pid != 0 and @z where pid == 0
exact() {
	for path in agent kernel; do
		if [ $path = agent ]; then
			k=$N
			go -v -c "$LOOP $1 -t $2 -n $k" -e "$4"
			grep -q "$3 runs in the agent\$" "$T/err" ||
				{ echo "-v: $3's clauses do not run in the agent:"
				  cat "$T/err"; exit 1; }
		else
			k=2000
			GPUTRACE_CUDA_UPROBES=1 go -c "$LOOP $1 -t $2 -n $k" -e "$4"
		fi
		want "$(counts "$2" "$k"
			[ -n "$5" ] && printf '@p: %s\n@z: 0\n' $(($2 * k)))"
	done
}

COUNT='cuda:launch { @n = count(); @k[kernel] = count(); @g[gridDim.x] = sum(blockDim.x); }'
exact -m 10 cuLaunchKernel "$COUNT"
# as the CUDA runtime (12 and later) launches: CUkernel handles of a
# library, by cuLaunchKernelEx (cuda_loop -l -x); predicates on pid
exact "-l -x" 4 cuLaunchKernelEx "$COUNT
cuda:launch /pid != 0/ { @p = count(); } cuda:launch /pid == 0/ { @z = count(); }" pid

# 200 kernels in turn, 2 threads: 20 launches of each kernel a thread
many() {
	printf '\n\n'
	i=0
	while [ "$i" -lt 200 ]; do
		echo "@k[k$i]: 40"
		i=$((i + 1))
	done
	echo "@n: 8000"
}
# (in the agent, then as kernel uprobes; sorted: the counts tie)
for up in 0 1; do
	GPUTRACE_CUDA_UPROBES=$up go -c "$LOOP -m -k 200 -t 2 -n 4000" \
		-e 'cuda:launch { @n = count(); @k[kernel] = count(); }'
	sort -o "$T/out" "$T/out"
	want "$(many | sort)"
done

# every launch prints, 100,000 launches a second: all lines, no loss
# (16-byte records: a thread's 256 KiB ring holds 300 ms of them, so a
# loaded machine's scheduling delays lose nothing)
PRINT='cuda:launch { printf("%d\n", gridDim.x); }'
P=$((N < 100000 ? N : 100000))
go -c "$LOOP -m -t 2 -n $P -r 50000" -e "$PRINT"
a=$(grep -c '^1$' "$T/out")
b=$(grep -c '^2$' "$T/out")
[ "$a" = "$P" ] && [ "$b" = "$P" ] && ! grep -q Lost "$T/out" ||
	{ echo "paced printf: $a and $b lines of $P each"; grep Lost "$T/out"; exit 1; }

# as fast as 4 threads go: printed + reported lost = launches, exactly;
# the loss is told in bpftrace's words, and nothing else is printed
flood() {
	total=$1
	n=$(grep -c '^[1-4]$' "$T/out")
	lost=$(awk '/^Lost [0-9]+ events$/ { s += $2 } END { print s + 0 }' "$T/out")
	other=$(grep -cv '^[1-4]$\|^Lost [0-9]* events$\|^$' "$T/out")
	[ $((n + lost)) = "$total" ] && [ "$other" = 0 ] ||
		{ echo "printf flood$2: $n printed + $lost lost != $total ($other other lines)"
		  grep -v '^[1-4]$' "$T/out" | head; exit 1; }
	echo "printf flood$2: $n printed, $lost lost"
}
go -c "$LOOP -m -t 4 -n $N" -e "$PRINT"
flood $((4 * N))
go -f json -c "$LOOP -m -t 4 -n $N" -e "$PRINT"
n=$(grep -c '^{"type": "printf", "data": "[1-4]\\n"}$' "$T/out")
lost=$(sed -n 's/^{"type": "lost_events", "data": {"events": \([0-9]*\)}}$/\1/p' "$T/out" |
	awk '{ s += $1 } END { print s + 0 }')
[ $((n + lost)) = $((4 * N)) ] ||
	{ echo "printf flood (json): $n printed + $lost lost != $((4 * N))"; exit 1; }
GPUTRACE_CUDA_UPROBES=1 go -c "$LOOP -m -t 4 -n 5000" -e "$PRINT"
flood 20000 " (kernel uprobes)"
exit 0
