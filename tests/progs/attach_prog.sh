# SPDX-License-Identifier: MIT
# Sourced after agent_lib.sh by the tests that attach to a running
# program without a GPU (the prompt's): builds the fake libcuda (its
# entry points 16-byte aligned, for the inline hooks) and
# tests/accept/agent_attachprog.c, starts the program launching vadd
# (pid in P, killed at exit, its output in $T/prog.out) and waits until
# it has launched.
$CC $W -falign-functions=16 -shared -fPIC -Wl,-soname,libcuda.so.1 \
	tests/accept/agent_fakecuda.c -o "$T/libcuda.so.1" ||
	fail "building the fake libcuda"
$CC $W -DATTACH_FATBIN="\"$T/vadd.fatbin\"" tests/accept/agent_attachprog.c \
	"$T/libcuda.so.1" -ldl -lpthread -Wl,-rpath,"$T" -o "$T/aprog" ||
	fail "building agent_attachprog"
LD_LIBRARY_PATH=$T FAKECUDA_QUIET=1 "$T/aprog" _Z4vaddPKfS0_Pfi "$T/ready" \
	>"$T/prog.out" 2>&1 &
P=$!
trap 'kill -KILL $P 2>/dev/null; rm -rf "$T"' EXIT
wait_ready "$T/ready"
