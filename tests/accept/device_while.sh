#!/bin/sh
# SPDX-License-Identifier: MIT
#
# while loops in device clauses, no GPU needed: bounded loops (a constant
# bound, a bound per thread from tid % 4, nested, break and continue) in
# every probe form compile, verify and lower with `gputrace --dry-run -d
# ptx` into tests/cuda/k_loop.cu's kernels, and ptxas accepts each module;
# an entry clause's update inside a loop is made in the loop, not
# deferred to the kernel's exit; `-d verifier` shows the bound it used;
# a loop the verifier cannot bound is refused at its `while`.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x "$CUDA/bin/nvcc" ] || { echo "no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-while.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

"$CUDA/bin/nvcc" -gencode "arch=compute_90,code=[sm_90,compute_90]" \
	-c -o "$T/k.o" tests/cuda/k_loop.cu || { echo "FAIL nvcc"; exit 1; }

progs='gpu:warp:* { $i = 0; while ($i < 5) { @w = count(); $i++; } }
gpu:kernel:* { $i = 0; while ($i < threadIdx.x % 4) { @c = count(); @h = hist($i); @k[$i] = count(); $i++; } }
gpu:kernel:*:exit { $j = 0; while (1) { $j++; if ($j > laneid % 8) { break; } if ($j == 2) { continue; } @s[$j] = sum($j); } }
gpu:warp:*:exit { $i = 0; while ($i < 3) { $j = 0; while ($j < blockIdx.x % 5) { @n = count(); $j++; } $i++; } printf("%d\n", $i); }'
printf '%s\n' "$progs" | while IFS= read -r p; do
	"$GT" --dry-run -d ptx -e "$p" "$T/k.o" >/dev/null 2>"$T/out" ||
		{ echo "FAIL gputrace: $(grep -m3 -e gputrace: -e error: "$T/out") (program: $p)"; echo x >>"$T/bad"; continue; }
	rm -f "$T"/mod*.ptx
	awk -v d="$T" '/^\.version/ { n++ } n { print > (d "/mod" n ".ptx") }' "$T/out"
	[ -f "$T/mod1.ptx" ] || { echo "FAIL: no module for: $p"; echo x >>"$T/bad"; continue; }
	for m in "$T"/mod*.ptx; do
		"$CUDA/bin/ptxas" -arch=sm_90 "$m" -o /dev/null 2>"$T/ptxas" ||
			{ echo "FAIL ptxas: $(head -2 "$T/ptxas") (program: $p)"; echo x >>"$T/bad"; }
	done
done
[ -f "$T/bad" ] && bad=1

# entry clauses defer their updates to the exit; one in a loop must not
# be (it would count its last round only): the probe keeps its red.add
"$GT" --dry-run -d ptx -e 'gpu:warp:tri { $i = 0; while ($i < 5) { @w = count(); $i++; } }' 2>&1 |
	awk '/^\.func __gt_probe_0/,/^}/' >"$T/p.ptx"
grep -q 'red.global.add.u64' "$T/p.ptx" && ! grep -q '%gt_d0_' "$T/p.ptx" &&
	grep -q 'bra.uni \$L' "$T/p.ptx" ||
	{ fail "update in a loop deferred or no loop"; cat "$T/p.ptx"; }
"$GT" --dry-run -d ptx -e 'gpu:warp:tri { @w = count(); }' 2>&1 |
	awk '/^\.func __gt_probe_0/,/^}/' >"$T/q.ptx"
grep -q '%gt_d0_0' "$T/q.ptx" || fail "an update outside a loop is no longer deferred"

# -d verifier: the walk goes round with the bound from tid % 4
"$GT" --dry-run -d verifier -e 'gpu:kernel:tri { $i = 0; while ($i < threadIdx.x % 4) { $i++; } }' \
	>/dev/null 2>"$T/walk" || fail "bounded loop refused: $(tail -1 "$T/walk")"
grep -q 'scalar(umin=1,umax=3)' "$T/walk" && grep -q '^verified: ' "$T/walk" ||
	fail "no bounds in the walk: $(tail -3 "$T/walk")"

# unbounded: refused at the while, with a caret
printf 'gpu:kernel:tri {\n  $i = 0;\n  while ($i < arg0) { $i++; }\n}\n' >"$T/u.bt"
if "$GT" --dry-run "$T/u.bt" >/dev/null 2>"$T/err"; then
	fail "unbounded loop accepted"
else
	grep -q "u.bt:3:3: error: device verifier: gpu:kernel:tri: .*loop at insn [0-9]* is not bounded" "$T/err" &&
		grep -q '^  \^$' "$T/err" || { fail "refusal not at the while"; cat "$T/err"; }
fi
[ $bad -eq 0 ] || exit 1
echo "while loops lowered and assembled"
