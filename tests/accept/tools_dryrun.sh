#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every ready tool (tools/*.gt) compiles, verifies and lowers the way its
# header says a user checks it: the "Dry run:" command of its header is
# run as written (gputrace --dry-run [-c true] tools/NAME.gt), and every
# tool also with -c, as users run them.  cuda: probes need a libcuda.so.1
# to resolve their entry points: the fake driver (build/progs/fakecuda)
# or the CUDA toolkit's stub, through LD_LIBRARY_PATH.  Also: a tool that
# uses cuda:complete is refused without -c, each tool has its header
# (usage with -c, overhead), its man page, a line in the README and a
# workload in tools/capture_examples.sh, example files start with the
# command that made them, and warpimbalance.gt takes its threshold.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-tools.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

DRV=$(cd "$(dirname "$GT")" && pwd)/progs/fakecuda
[ -f "$DRV/libcuda.so.1" ] || DRV=$(pwd)/build/progs/fakecuda
if [ ! -f "$DRV/libcuda.so.1" ]; then
	for s in "${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so" \
		 /usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so; do
		[ -f "$s" ] || continue
		DRV=$T/stub
		mkdir -p "$DRV" && ln -sf "$s" "$DRV/libcuda.so.1"
		break
	done
fi
[ -f "$DRV/libcuda.so.1" ] ||
	{ echo "no libcuda.so.1 (fake driver or toolkit stub)"; exit 77; }

nfail=0
bad() {
	echo "FAIL $1"
	[ -s "$T/err" ] && sed 's/^/    | /' "$T/err" | head -20
	nfail=$((nfail + 1))
}
# dry NAME ARGS...: gputrace ARGS must exit 0 and print nothing on stderr
dry() {
	what=$1
	shift
	if ! LD_LIBRARY_PATH=$DRV timeout -k 2 30 "$GT" "$@" </dev/null \
	     >"$T/out" 2>"$T/err"; then
		bad "$what: gputrace $*"
	elif [ -s "$T/err" ]; then
		bad "$what: gputrace $*: said something on stderr"
	fi
}

n=0
for f in tools/*.gt; do
	t=$(basename "$f" .gt)
	n=$((n + 1))
	dry "$t (-c)" --dry-run -c true "$f"
	[ "$t" = demo ] && continue

	# the header's own dry-run command, as written
	cmd=$(sed -n 's/^ \* Dry run: \(gputrace [^(]*\.gt\).*/\1/p' "$f")
	case $cmd in
	"gputrace --dry-run tools/$t.gt" | "gputrace --dry-run -c true tools/$t.gt")
		# shellcheck disable=SC2086
		dry "$t (header)" ${cmd#gputrace } ;;
	*)	: >"$T/err"; bad "$t: no 'Dry run: gputrace ... tools/$t.gt' line in its header" ;;
	esac
	if grep -q '^cuda:complete' "$f"; then
		# documented as needing -c: check that it does
		if LD_LIBRARY_PATH=$DRV "$GT" --dry-run "$f" >"$T/out" 2>"$T/err" ||
		   ! grep -q 'needs -c' "$T/err"; then
			bad "$t: compiled without -c, but its header says cuda:complete needs it"
		fi
	fi
	: >"$T/err"
	grep -q "^ \* *gputrace -c '[^']*' tools/$t\.gt" "$f" ||
		bad "$t: no 'gputrace -c ... tools/$t.gt' usage line in its header"
	grep -q '^ \* Overhead: ' "$f" || bad "$t: no 'Overhead:' paragraph in its header"
	[ -f "man/man8/$t.8" ] || bad "$t: no man/man8/$t.8"
	grep -q "tools/$t\.gt" README.md || bad "$t: not listed in README.md"
	grep -q "tools/$t\.gt" tools/capture_examples.sh ||
		bad "$t: no workload for it in tools/capture_examples.sh"
done
[ $n -ge 13 ] || { : >"$T/err"; bad "only $n tools"; }

# the optional threshold (us) of warpimbalance.gt
dry "warpimbalance 50" --dry-run tools/warpimbalance.gt 50

# example files (captured on a GPU): "# COMMAND" naming their tool first
for e in tools/*_example.txt; do
	[ -f "$e" ] || continue
	t=$(basename "$e" _example.txt)
	[ -f "tools/$t.gt" ] || { : >"$T/err"; bad "$e: no tools/$t.gt"; }
	head -n 1 "$e" | grep -q "^# gputrace .*tools/$t\.gt" ||
		{ : >"$T/err"; bad "$e: first line is not '# gputrace ... tools/$t.gt'"; }
done

# every man page belongs to a tool
for m in man/man8/*.8; do
	t=$(basename "$m" .8)
	[ -f "tools/$t.gt" ] || { : >"$T/err"; bad "man/man8/$t.8: no tools/$t.gt"; }
done

[ $nfail -eq 0 ] || exit 1
echo "$n tools compiled"
