# SPDX-License-Identifier: MIT
# Sourced by bench/real and bench/mem (bash, from the repository root):
# kernel times of a workload from cuda:complete, natively and under probe
# sets, side by side, median of REPS runs.  The caller sets GT, T (a
# scratch directory), REPS, ITERS (real.cu's rounds), TITERS (the Triton
# launches), PY, and PROBE[CONFIG] (the probe set's text; '' for native:
# cuda:complete alone, so CUPTI's share is in both sides).
#   rr_build		real.cu into $T/real
#   rr_triton_ok		status 0 where $PY has torch and triton and a GPU
#			(else says why on stdout)
#   rr_run W CONFIG REP	workload W (real, triton) under CONFIG: output in
#			$T/W.CONFIG.REP.out/.err, per-kernel ns in $T/W.CONFIG.REP;
#			exits 1 on a failed run, wrong results or checksums
#			other than the first native run's
#   rr_all W "CONFIGS"	every CONFIG REPS times (interleaved), then medians
#   rr_table W "CONFIGS"	per kernel: runs timed, native us/run, each
#			CONFIG's ratio (and all CUB kernels together)
#   rr_short NAME	a kernel's name cut for a table
export CUDA_CACHE_PATH=$T/cc		# the first run JITs, the others load
export TRITON_CACHE_DIR=$T/triton	# the first run compiles, the others load
TAB=$(printf '\t')

# every run but a kernel's first (a warm-up; a first run also pays for
# first touches: code, TLBs, the probes' maps)
RR_TIMES='cuda:complete { @n[kernel]++; if (@n[kernel] > 1) { @t[kernel] = sum(duration); @r[kernel] = count(); } }
END { clear(@n); }'

rr_build() {
	"$NVCC" -O2 -arch=sm_90 -o "$T/real" bench/workloads/real.cu
}

rr_triton_ok() {
	"$PY" -c 'import torch, triton, sys; sys.exit(not torch.cuda.is_available())' \
		>/dev/null 2>&1 && return 0
	echo "$PY cannot import torch and triton, or torch sees no GPU"
	return 1
}

rr_cmd() {
	case $1 in
	real) echo "$T/real $ITERS" ;;
	triton) echo "$PY bench/workloads/triton_kernels.py $TITERS" ;;
	esac
}

rr_run() {
	local f=$T/$1.$2.$3
	timeout 600 "$GT" -q -v -c "$(rr_cmd "$1")" -e "${PROBE[$2]}
$RR_TIMES" >"$f.out" 2>"$f.err" ||
		{ echo "bench: $1 under ($2) failed"; tail -20 "$f.err"; exit 1; }
	grep -q '^results ok' "$f.out" ||
		{ echo "bench: wrong results of $1 under ($2)"; grep -v '^@\|^\[' "$f.out"; exit 1; }
	grep '^checksum' "$f.out" >"$f.sum"
	[ -f "$T/$1.sum" ] || cp "$f.sum" "$T/$1.sum"
	cmp -s "$f.sum" "$T/$1.sum" ||
		{ echo "bench: $1 under ($2): checksums differ from the native run"; diff "$T/$1.sum" "$f.sum"; exit 1; }
	sed -n 's/^@t\[\(.*\)\]: \([0-9]*\)$/\1\t\2/p' "$f.out" | sort >"$f"
	# the runs timed, the same in every configuration
	[ -f "$T/$1.runs" ] ||
		sed -n 's/^@r\[\(.*\)\]: \([0-9]*\)$/\1\t\2/p' "$f.out" >"$T/$1.runs"
}

rr_all() {
	local r c
	for r in $(seq "$REPS"); do
		for c in $2; do
			rr_run "$1" "$c" "$r"
		done
	done
	# median over the reps, per kernel
	for c in $2; do
		for r in $(seq "$REPS"); do cat "$T/$1.$c.$r"; done | sort -t"$TAB" -k1,1 -k2,2n |
			awk -F'\t' 'function out() { if (n) printf "%s\t%d\n", k, v[int((n + 1) / 2)] }
				$1 != k { out(); k = $1; n = 0 } { v[++n] = $2 } END { out() }' >"$T/$1.$c.med"
	done
}

rr_short() { sed -e 's/cub::CUB_[0-9]*_SM_[0-9]*::detail::/cub::/' -e 's/<.*//' <<<"$1" | cut -c1-44; }

# the value of KEY in a "KEY<TAB>VALUE" file
rr_get() { awk -F'\t' -v k="$2" '$1 == k { print $2 }' "$1"; }

rr_table() {
	local w=$1 c k n runs line v cub=0
	local -A tot=()
	line=$(printf '%-44s %5s %8s' kernel runs "us/run")
	for c in $2; do
		[ "$c" = native ] || line="$line $(printf '%7s' "($c)")"
	done
	echo "$line"
	while IFS=$'\t' read -r k n; do
		runs=$(rr_get "$T/$w.runs" "$k")
		line=$(printf '%-44s %5d %8.1f' "$(rr_short "$k")" "${runs:-0}" "$(awk "BEGIN { print $n / 1000 / ${runs:-1} }")")
		for c in $2; do
			[ "$c" = native ] && continue
			v=$(rr_get "$T/$w.$c.med" "$k")
			line="$line $(awk -v v="${v:-0}" -v n="$n" 'BEGIN { printf "%7.3f", v / n }')"
			case $k in cub::*) tot[$c]=$(( ${tot[$c]:-0} + ${v:-0} )) ;; esac
		done
		case $k in cub::*) tot[native]=$(( ${tot[native]:-0} + n )); cub=1 ;; esac
		echo "$line"
	done <"$T/$w.native.med"
	[ $cub = 1 ] || return 0
	line=$(printf '%-44s %5s %8.1f' "CUB sort+reduce+scan+fill (us/round)" - "$(awk "BEGIN { print ${tot[native]:-0} / 1000 / $ITERS }")")
	for c in $2; do
		[ "$c" = native ] && continue
		line="$line $(awk -v v="${tot[$c]:-0}" -v n="${tot[native]:-0}" 'BEGIN { printf "%7.3f", n ? v / n : 0 }')"
	done
	echo "$line"
}
