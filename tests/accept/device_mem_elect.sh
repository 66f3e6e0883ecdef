#!/bin/sh
# SPDX-License-Identifier: MIT
#
# gpu:mem with several clauses at one site runs each map update once per
# warp, no GPU needed; gather's last clause takes every other runtime
# path (printf, assignment, delete, lookups, avg, stats, lhist, keyed
# hist, a lane's own threadIdx and the clock).  tests/gpu/mem.cu's kernels, spliced by
# `gputrace --dry-run -d ptx` with three clauses (two of them at unit's
# sites), run in a warp model (mem_warp_sim.py): 32 lanes, then a partial
# warp of 20, scheduled so that lanes which skip a clause run ahead, as
# independent thread scheduling allows, the program's own branches (tail's
# guard, smem's loop) one way, then the other.  Every map update of every site
# must run on exactly one lane, and the memory instruction itself on the
# warp together again.  (A clause electing from its own activemask let
# the lanes that ran ahead elect a second lane: the k-th clause of a
# kernel counted k times on the GPU.)  ptxas must accept the modules.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x "$CUDA/bin/nvcc" ] || { echo "no nvcc"; exit 77; }
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-elect.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

prog='gpu:mem:* { @s[kernel, store, sectors] = count(); @l[kernel, store, lanes] = count(); @n[kernel] = count(); @lo[kernel, store] = min(addr); @hi[kernel, store] = max(addr); @z[kernel, store] = sum(size * lanes); @i[kernel, insn] = count(); }
gpu:mem:*:shared { @c[kernel, arg1, store, conflicts] = count(); }
gpu:mem:unit { @ln[kernel, line] = count(); }
gpu:mem:gather { printf("g %d %d\n", insn, threadIdx.x); @u[insn] = lanes; @v[1]++; @w++; delete(@u[0]); @av = avg(lanes); @st = stats(size); @lh = lhist(sectors, 0, 40, 4); @h[lanes] = hist(sectors); @mx = max(gtime); @sm[threadIdx.x] = count(); }'
nfail=0
bad() {
	echo "FAIL $*"
	nfail=$((nfail + 1))
}

# compute_75: `addr` by shuffles; compute_90: redux.sync
for cc in 75 90; do
	"$CUDA/bin/nvcc" -O2 -lineinfo -gencode "arch=compute_$cc,code=compute_$cc" \
		-c -o "$T/mem$cc.o" tests/gpu/mem.cu || { bad "nvcc compute_$cc"; continue; }
	"$GT" --dry-run -d ptx -e "$prog" "$T/mem$cc.o" >"$T/out" 2>&1 ||
		{ bad "sm_$cc: gputrace: $(grep -m2 gputrace: "$T/out")"; continue; }
	rm -f "$T"/mod*.ptx
	awk -v d="$T" '/^\.version/ { n++ } n { print > (d "/mod" n ".ptx") }' "$T/out"
	: >"$T/sites"
	for m in "$T"/mod*.ptx; do
		[ -f "$m" ] || { bad "sm_$cc: no module printed"; continue; }
		"$CUDA/bin/ptxas" -arch="sm_$cc" "$m" -o /dev/null 2>"$T/ptxas" ||
			bad "sm_$cc: ptxas: $(grep -v C7508 "$T/ptxas" | head -2)"
		for lanes in 32 20; do
			for way in taken not; do
				python3 tests/accept/mem_warp_sim.py "$m" $lanes $way 2>&1 |
					sed "s/^/$lanes lanes, $way: /" >>"$T/sites"
			done
		done
	done
	# 7 + 1 updates at unit's two sites
	[ "$(grep -c '^32 lanes, not: unit insn [0-9]*: 8 updates' "$T/sites")" = 2 ] ||
		bad "sm_$cc: unit's sites lack the second clause: $(grep unit "$T/sites")"
	# a site the model does not reach (in a loop): nothing ran there
	if grep -v 'each run by\( 1\)* lanes, instruction run by 1 groups$' "$T/sites" |
		grep -v 'each run by\( 0\)* lanes, instruction run by 0 groups$' >"$T/bad"; then
		bad "sm_$cc: updates not once per warp:"
		sed 's/^/    /' "$T/bad"
	fi
	# all 16 sites reached one way or the other (tail's guard, smem's loop)
	n=$(grep '^32 lanes' "$T/sites" | grep 'by\( 1\)* lanes, instruction run by 1 groups$' |
		sed 's/^[^:]*: \([a-z0-9]* insn [0-9]*\):.*/\1/' | sort -u | wc -l)
	[ "$n" = 16 ] || bad "sm_$cc: $n of 16 sites reached: $(cat "$T/sites")"
done
[ $nfail -eq 0 ] || exit 1
echo "every gpu:mem update once per warp"
exit 0
