# SPDX-License-Identifier: MIT
# Sourced after agent_lib.sh by the tests that attach to a running
# program without a GPU: builds the fake libcuda (its entry points
# 16-byte aligned, as a real driver's: then detach restores their bytes)
# and tests/accept/agent_attachprog.c ($T/aprog, vadd's fatbin in its
# .nv_fatbin), and gives wait_for FILE PATTERN (up to 10 s), ARMED and
# pause_prog (SIGUSR1, until the program says it paused).
$CC $W -falign-functions=16 -shared -fPIC -Wl,-soname,libcuda.so.1 \
	tests/accept/agent_fakecuda.c -o "$T/libcuda.so.1" ||
	fail "building the fake libcuda"
$CC $W -DATTACH_FATBIN="\"$T/vadd.fatbin\"" tests/accept/agent_attachprog.c \
	"$T/libcuda.so.1" -ldl -lpthread -Wl,-rpath,"$T" -o "$T/aprog" ||
	fail "building agent_attachprog"

# -v's line once the injector armed the hooks: probes live (the agent's
# own "info: agent injected into pid" comes before the hooks are armed)
ARMED='agent attached to pid [0-9]*: '

wait_for() {	# wait_for FILE PATTERN: up to 10 s
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 200 ] && return 1
		sleep 0.05
	done
}

pause_prog() {	# pause the program $P; PAUSED_AT: its launches so far
	PAUSED_AT=$(sh tests/progs/pause_prog.sh $P "$T/prog.out") ||
		fail "the program does not pause"
}
