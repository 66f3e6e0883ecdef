#!/bin/sh
# SPDX-License-Identifier: MIT
#
# gpu:mem through the whole compiler, no GPU needed: for every test kernel
# (tests/cuda/k_*.cu, each with its own nvcc flags, the register budget's
# and the GPU tests' workloads; -lineinfo added so
# that `line` has .loc to read), clauses using every gpu:mem builtin are
# compiled, verified, lowered and spliced by `gputrace --dry-run -d ptx`;
# ptxas must accept every module printed (sm_75 takes the shuffle path
# for `addr`, sm_80+ redux.sync).  The sites spliced are counted against
# an independent count of the global, generic and shared ld/st/atom/red
# in nvcc's PTX, the :load, :store and :shared filters are checked, and
# the instruction numbers against the module's own statements.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x "$CUDA/bin/nvcc" ] || { echo "no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-mem.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

all='gpu:mem:* { @s = hist(sectors); @p[addr >> 21] = count(); @i[insn, line] = count(); @z = sum(size * lanes); @st[store, kernel] = count(); @b[blockIdx.x, threadIdx.x, warpid, smid] = count(); } gpu:mem:*:shared { @c = hist(conflicts); @a = min(addr); @h = hist(sectors); }'
nfail=0
bad() {
	echo "FAIL $*"
	nfail=$((nfail + 1))
}

# sites PROGRAM OBJ: the modules -d ptx prints, in $T/modN.ptx; the
# number of sites spliced on stdout
sites() {
	rm -f "$T"/mod*.ptx
	"$GT" --dry-run -d ptx -e "$1" "$2" >"$T/out" 2>&1 ||
		{ echo "gputrace failed: $(grep -m3 gputrace: "$T/out")" >&2; echo -1; return; }
	awk -v d="$T" '/^\.version/ { n++ } n { print > (d "/mod" n ".ptx") }' "$T/out"
	grep -c '// gputrace mem: insn' "$T/out"
}

for src in tests/cuda/k_*.cu tests/lower/k_budget.cu tests/gpu/gpuprog.cu \
	   tests/gpu/mem.cu; do
	b=$(basename "$src" .cu)
	arch=$(sed -n '1s|^// nvcc: -arch=\(sm_[0-9a]*\).*|\1|p' "$src")
	arch=${arch:-sm_90}
	cc=${arch#sm_}
	"$CUDA/bin/nvcc" -lineinfo -gencode "arch=compute_$cc,code=[sm_$cc,compute_$cc]" \
		-c -o "$T/$b.o" "$src" &&
		"$CUDA/bin/nvcc" -lineinfo -arch="$arch" -ptx -o "$T/$b.ptx" "$src" ||
		{ bad "nvcc $b"; continue; }
	# independent count: the memory instructions gpu:mem covers
	want=$(grep -cE '^[[:space:]]*(@!?%p[0-9]+[[:space:]]+)?(ld|ldu|st|atom|red)(\.[a-z0-9:]+)*[[:space:]]' "$T/$b.ptx")
	notc=$(grep -cE '^[[:space:]]*(@!?%p[0-9]+[[:space:]]+)?(ld|ldu|st|atom|red)\.[a-z0-9.:]*(param|local|const|shared::cluster|async|bulk)' "$T/$b.ptx")
	want=$((want - notc))
	got=$(sites "$all" "$T/$b.o")
	[ "$got" = "$want" ] || bad "$b: $got sites spliced, $want memory instructions in its PTX"
	for m in "$T"/mod*.ptx; do
		[ -f "$m" ] || { bad "$b: no module printed"; continue; }
		"$CUDA/bin/ptxas" -arch="$arch" "$m" -o /dev/null 2>"$T/ptxas" ||
			bad "$b: ptxas: $(grep -v C7508 "$T/ptxas" | head -2)"
	done
	# the filters: loads, stores, shared, each a part of the whole
	nl=$(sites 'gpu:mem:*:load { @c = count(); }' "$T/$b.o")
	ns=$(sites 'gpu:mem:*:store { @c = count(); }' "$T/$b.o")
	nsh=$(sites 'gpu:mem:*:shared { @c = count(); }' "$T/$b.o")
	ng=$(sites 'gpu:mem:* { @c = count(); }' "$T/$b.o")
	[ $((nl + ns)) = "$ng" ] && [ $((ng + nsh)) = "$want" ] ||
		bad "$b: load $nl + store $ns != $ng, or + shared $nsh != $want"
	shl=$(grep -cE '^[[:space:]]*(@!?%p[0-9]+[[:space:]]+)?(ld|st|atom|red)\.shared(::cta)?\.' "$T/$b.ptx")
	[ "$nsh" = "$shl" ] || bad "$b: $nsh shared sites, $shl shared instructions"
done

# insn is the statement's index in the body, and line its .loc: in
# k_shared's reduce, rebuild both from nvcc's PTX and compare
"$CUDA/bin/nvcc" -lineinfo -arch=sm_80 -ptx -o "$T/ks.ptx" tests/cuda/k_shared.cu &&
	"$CUDA/bin/nvcc" -lineinfo -gencode "arch=compute_80,code=[sm_80,compute_80]" \
		-c -o "$T/ks.o" tests/cuda/k_shared.cu || bad "nvcc k_shared"
sites 'gpu:mem:reduce { @c = count(); } gpu:mem:reduce:shared { @d = count(); }' "$T/ks.o" >/dev/null
grep -o '// gputrace mem: insn [0-9]*, line [0-9]*: [^ ]*' "$T/out" |
	sed 's|// gputrace mem: insn \([0-9]*\), line \([0-9]*\): \(.*\)|\1 \2 \3|' >"$T/got"
awk '/^\.visible \.entry _Z6reduce/ { on = 1 } on && /^}/ { exit }
	on && /^\t\.loc/ { line = $3 }
	on && /^\t[a-z@]/ && !/^\t\.[a-z]/ {
		op = $1; if (op ~ /^@/) op = $2
		if (op ~ /^(ld|st)\.(global|shared)\./) print n, line, op
		n++
	}' "$T/ks.ptx" >"$T/want"
[ -s "$T/want" ] && cmp -s "$T/got" "$T/want" ||
	{ bad "insn/line of reduce's sites differ from its PTX"; diff "$T/got" "$T/want" | head; }
awk '$2 > 0 { n++ } END { exit !n }' "$T/got" || bad "no .loc line found with -lineinfo"

# a probe that names no memory builtin computes no figures at the site
sites 'gpu:mem:reduce { @c = count(); }' "$T/ks.o" >/dev/null
grep -q 'match.any.sync' "$T/mod1.ptx" && bad "count() alone computes sectors"
[ $nfail -eq 0 ] || exit 1
echo "all gpu:mem modules assembled"
exit 0
