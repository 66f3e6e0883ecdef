# SPDX-License-Identifier: MIT
# Sourced by tests/gpu/ml_*.sh (from the repository root): the real ML
# stack (PyTorch, Triton, CuPy) under gputrace.  Gives GT, PY, T (removed
# at exit), ML (this directory) and:
#   need_py MODULE...	exit 77 (skip, saying why) unless python3 can
#			import them (and torch sees a GPU)
#   ok / bad / expect_eq	PASS/FAIL lines; nfail counts failures
#   gt NAME PROBES CMD	gputrace -q -f json -c CMD -e PROBES: maps in
#			$T/NAME.out, the program's output in .prog, .err, .rc
#   map NAME MAP		MAP's entries in $T/NAME.out: KEY<TAB>VALUE lines
#   val NAME MAP [KEY]	one value of MAP (keyless, or KEY's)
#   same_as_native NAME PATTERN
#			status 0, and the program's lines starting with
#			PATTERN as in the native run ($T/native.prog)
#   why_zero NAME KERNEL	gputrace's lines on why KERNEL was not instrumented
#   train_native	train.py alone: CMD, R (replays), K G W (the Triton
#			kernel's launches, grid, warps), SAME (its result lines)
GT=${GPUTRACE:-build/gputrace}
PY=${PYTHON:-python3}
ML=tests/gpu/ml
nfail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-ml.XXXXXX") || exit 1
# GT_KEEP=DIR keeps the work files (gputrace's stderr, the job's output)
# as DIR/NAME.tgz for a look at a failure on a lent machine
ml_done() {
	[ -n "$GT_KEEP" ] && mkdir -p "$GT_KEEP" &&
		tar czf "$GT_KEEP/$(basename "$0" .sh).tgz" -C "$T" . 2>/dev/null
	rm -rf "$T"
}
trap ml_done EXIT

need_py() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (BPF, ptrace)"; exit 77; }
	for m in "$@"; do
		"$PY" -c "import $m" >/dev/null 2>&1 ||
			{ echo "SKIP: $PY cannot import $m"; exit 77; }
	done
	case " $* " in *" torch "*)
		"$PY" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' ||
			{ echo "SKIP: torch sees no GPU"; exit 77; } ;;
	esac
}
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
expect_eq() {	# NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1" "got '$2', want '$3'"; fi
}
gt() {	# NAME PROBES CMD: the maps in $T/NAME.out, the program's stdout
	# in $T/NAME.prog
	timeout 280 "$GT" -q -f json -o "$T/$1.out" -c "$3" -e "$2" \
		>"$T/$1.prog" 2>"$T/$1.err"
	echo $? >"$T/$1.rc"
}
map() { "$PY" "$ML/maps.py" "$T/$1.out" "$2"; }
val() {
	if [ -n "$3" ]; then
		map "$1" "$2" | awk -F '\t' -v k="$3" '$1 == k { print $2 }'
	else
		map "$1" "$2"
	fi
}
# the program's own verdict and output under probe set NAME: gputrace's
# status 0 and every line starting with PATTERN as in $T/native.prog
same_as_native() {	# NAME PATTERN
	expect_eq "$1: gputrace status" "$(cat "$T/$1.rc")" 0
	if [ ! -s "$T/$1.prog" ] ||
	   [ "$(grep "^$2" "$T/$1.prog")" != "$(grep "^$2" "$T/native.prog")" ]; then
		bad "$1: results bit-identical to the native run" \
			"$(diff "$T/native.prog" "$T/$1.prog" | head -5 | tr '\n' ' ')"
		sed 's/^/    | /' "$T/$1.err" | head -20
	else
		ok "$1: results bit-identical to the native run ($(grep -c "^$2" "$T/$1.prog") lines)"
	fi
}
# a device count that is 0 where launches were made: the kernel was not
# instrumented; say why from gputrace's lines
why_zero() {	# NAME KERNEL
	grep -h "$2" "$T/$1.err" | grep -i 'skipped\|SASS\|cannot' | head -3 | tr '\n' ' '
}
train_native() {
	R=20
	CMD="$PY $ML/train.py --steps 20 --replays $R --adds 10"
	$CMD >"$T/native.prog" 2>"$T/native.err" ||
		{ cat "$T/native.err"; echo "FAIL native run"; exit 1; }
	grep -q '^add ok$' "$T/native.prog" ||
		{ echo "FAIL native: Triton add wrong"; exit 1; }
	set -- $(sed -n 's/^triton gt_add_kernel launches \([0-9]*\) grid \([0-9]*\) warps \([0-9]*\)$/\1 \2 \3/p' "$T/native.prog")
	K=$1 G=$2 W=$3
	[ -n "$W" ] || { echo "FAIL native: no triton line"; exit 1; }
	SAME='\(loss \|graph_out \|add ok\)'
}
