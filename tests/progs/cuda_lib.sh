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

. "$(dirname "$0")/../progs/probe_lib.sh"
probe_setup cuda cuda_stub fakecuda/libcuda.so.1
STUB=$PROGS/cuda_stub
FAKE=$PROGS/fakecuda

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
