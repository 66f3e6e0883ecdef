#!/bin/sh
# SPDX-License-Identifier: MIT
# Device probes on every GPU of a target: one process driving all GPUs,
# and one process per GPU started by a launcher script.  Per GPU, warps
# counted equal launches x warps and smload(1) per block totals launches
# x blocks (tests/gpu/multigpu.cu prints both).  Needs two GPUs.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 2 ] || { echo "SKIP: $ngpu GPU(s), two needed"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-mgpu.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -o "$T/multigpu" tests/gpu/multigpu.cu || exit 1
P=$T/multigpu
ITERS=20
PROBES='gpu:warp:vadd { @w[gpu] = count(); }
gpu:kernel:vadd /threadIdx.x == 0/ { @sm[gpu] = smload(1); }'
"$P" all $ITERS >"$T/native" || { echo "FAIL native run"; exit 1; }
rc=0

# check NAME OUT: every "expect gpu G warps W blocks B" of the native run
check() {
	while read -r _ _ g _ w _ b; do
		got=$(sed -n "s/^@w\[$g\]: //p" "$2")
		[ "$got" = "$w" ] && echo "PASS $1: @w[$g] = $got" ||
			{ echo "FAIL $1: @w[$g] = '$got', want $w"; rc=1; }
		got=$(awk -v k="@sm[$g]:" '$0 == k { on = 1; next }
			on && /SMs [0-9]+, total/ { sub(/.*total /, ""); sub(/,.*/, "");
			print; exit }' "$2")
		[ "$got" = "$b" ] && echo "PASS $1: @sm[$g] total = $got blocks" ||
			{ echo "FAIL $1: @sm[$g] total '$got', want $b"; rc=1; }
	done <"$T/native"
	if grep -q "not collected\|went away\|in time" "$3"; then
		echo "FAIL $1: $(grep "not collected\|went away\|in time" "$3" | head -1)"
		rc=1
	fi
}

timeout 120 "$GT" -q -c "$P all $ITERS" -e "$PROBES" >"$T/one" 2>"$T/one.err"
check "one process" "$T/one" "$T/one.err"

# one process per GPU, started by a shell: each takes its own region
cat >"$T/launch.sh" <<EOF
#!/bin/sh
for g in \$(seq 0 $((ngpu - 1))); do "$P" one \$g $ITERS & done
wait
EOF
timeout 120 "$GT" -q -c "sh $T/launch.sh" -e "$PROBES" >"$T/per" 2>"$T/per.err"
check "process per GPU" "$T/per" "$T/per.err"

[ $rc -eq 0 ] || cat "$T/one" "$T/one.err" "$T/per" "$T/per.err" | head -60
exit $rc
