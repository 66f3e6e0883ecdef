# SPDX-License-Identifier: MIT
# Sourced after agent_lib.sh by the tests that attach to a running
# program without a GPU (the prompt's): builds the fake libcuda and
# tests/accept/agent_attachprog.c (attach_build.sh), starts the program
# launching vadd (pid in P, killed at exit, its output in $T/prog.out)
# and waits until it has launched.  prog_end: the program is alive, then
# ends, every launch it made having succeeded.
. tests/progs/attach_build.sh
LD_LIBRARY_PATH=$T FAKECUDA_QUIET=1 "$T/aprog" _Z4vaddPKfS0_Pfi "$T/ready" \
	>"$T/prog.out" 2>&1 &
P=$!
trap 'kill -KILL $P 2>/dev/null; rm -rf "$T"' EXIT
wait_ready "$T/ready"

prog_end() {
	kill -0 $P 2>/dev/null || fail "the program died"
	kill -TERM $P
	wait $P
	grep -q 'failures 0' "$T/prog.out" ||
		{ cat "$T/prog.out"; fail "launches failed: $(cat "$T/prog.out")"; }
}
