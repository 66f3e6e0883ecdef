# SPDX-License-Identifier: MIT
# Sourced after agent_lib.sh by the CPU-side tests of cuda:complete and
# gpu:sample: builds the fake libcupti (tests/accept/agent_fakecupti.c)
# into $T as libcupti.so.13, beside the fake libcuda, and defines
#   run PROGRAM      gputrace -q -c on the hook program (vadd 5 times plus
#                    3 graph runs, uses_global once), stdout and stderr
#                    in $T/out and $T/err, the maps without the program's
#                    own lines in $T/maps
#   want TEXT [WHAT] the maps printed are TEXT, exactly
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
$CC $W -shared -fPIC -I"$CUDA_INC" -Wl,-soname,libcupti.so.13 \
	tests/accept/agent_fakecupti.c -o "$T/libcupti.so.13" -lpthread ||
	fail "building the fake libcupti"

run() {
	LD_LIBRARY_PATH=$T HOOKPROG_GRAPH=1 GPUTRACE_AGENT_LIB=$AGENT \
		timeout -k 2 30 "$GT" -q -c "$T/prog $T/vadd.fatbin $VADD $GLOBAL" \
		-e "$1" >"$T/out" 2>"$T/err" </dev/null ||
		{ cat "$T/out" "$T/err"; fail "gputrace -c failed"; }
	grep -v '^cuGraphLaunch\|^cuLaunch\|^RTLD_NEXT\|^read back' "$T/out" >"$T/maps"
}
want() {
	printf '%s\n' "$1" >"$T/want"
	diff -u "$T/want" "$T/maps" || { cat "$T/err"; fail "${2:-output}"; }
}
