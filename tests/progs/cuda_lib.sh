# SPDX-License-Identifier: MIT
# Sourced by tests/accept/cuda_*.sh: finds gputrace ($GPUTRACE) and the
# test programs (build/progs: cuda_stub, fakecuda/libcuda.so.1), skips
# (77) without root or the uprobe PMU, and gives:
#
#   $STUB	the workload (tests/progs/cuda_stub.c)
#   $FAKE	a directory holding the fake driver libcuda.so.1
#   stub_dir	prints a directory whose libcuda.so.1 is the CUDA
#		toolkit's stub, or fails (no toolkit)
#   run DRIVERDIR ARGS...
#		gputrace ARGS with LD_LIBRARY_PATH=DRIVERDIR, at most 20 s;
#		stdout without "Attaching N probes..." in $T/out, stderr
#		in $T/err; returns gputrace's status
#   want TEXT	fail (exit 1) unless $T/out is exactly TEXT (plus newline)

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
PROGS=$(cd "$(dirname "$GT")" && pwd)/progs
[ -x "$PROGS/cuda_stub" ] || PROGS=$(pwd)/build/progs
STUB=$PROGS/cuda_stub
FAKE=$PROGS/fakecuda
if [ ! -x "$STUB" ] || [ ! -f "$FAKE/libcuda.so.1" ]; then
	echo "no cuda test programs in $PROGS (run make)"
	exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "needs root"
	exit 77
fi
if [ ! -r /sys/bus/event_source/devices/uprobe/type ]; then
	echo "no uprobe PMU in this kernel"
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-cuda.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

stub_dir() {
	for s in "${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so" \
		 /usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so; do
		if [ -f "$s" ]; then
			mkdir -p "$T/stub"
			ln -sf "$s" "$T/stub/libcuda.so.1"
			echo "$T/stub"
			return 0
		fi
	done
	return 1
}

run() {
	dir=$1
	shift
	LD_LIBRARY_PATH=$dir timeout -k 2 20 "$GT" "$@" </dev/null \
		>"$T/raw" 2>"$T/err"
	rc=$?
	sed -E '/^Attach(ing|ed) [0-9]+ probes?(\.\.\.)?$/d' "$T/raw" >"$T/out"
	return "$rc"
}

want() {
	printf '%s\n' "$1" >"$T/want"
	cmp -s "$T/want" "$T/out" && return 0
	echo "output differs (-want +got):"
	diff -u "$T/want" "$T/out"
	echo "stderr:"
	head -n 20 "$T/err"
	exit 1
}
