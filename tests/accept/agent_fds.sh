#!/bin/sh
# SPDX-License-Identifier: MIT
# The agent's descriptors against programs that close inherited ones:
# a process started by a parent that closed every descriptor above 2
# before exec (Python's subprocess does by default), and a program that
# closes its low descriptors itself after the agent's constructor ran.
# Device maps are collected in both, and the target runs to its end.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. tests/progs/agent_lib.sh

P='gpu:kernel:vadd { @ = count(); }'
check() {	# check WHAT: 5 launches x 4 blocks x 2 warps, no lost segment
	grep -qx '@: 40' "$T/gt" && ! grep -q 'cannot map\|not collected' "$T/gte" ||
		{ cat "$T/gt" "$T/gte"; fail "$1: device maps lost"; }
	[ "$(grep -c "^cuLaunchKernel.* $VADD: " "$T/gt")" = 5 ] ||
		{ cat "$T/gt"; fail "$1: the target did not run to its end"; }
}

# the parent closes everything above 2, then execs the CUDA program
cat >"$T/closer.c" <<'EOC'
#include <unistd.h>
int main(int argc, char **argv)
{
	for (int fd = 3; fd < 4096; fd++)
		close(fd);
	execv(argv[1], argv + 1);
	return 127;
}
EOC
$CC $W "$T/closer.c" -o "$T/closer" || fail "building closer"
"$GT" -c "$T/closer $T/prog $T/vadd.fatbin $VADD" -e "$P" >"$T/gt" 2>"$T/gte" ||
	{ cat "$T/gt" "$T/gte"; fail "gputrace -c closer prog"; }
check "parent closed the descriptors before exec"

# the same through python3's subprocess, where there is one
if command -v python3 >/dev/null 2>&1; then
	"$GT" -c "python3 -c 'import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))' $T/prog $T/vadd.fatbin $VADD" \
		-e "$P" >"$T/gt" 2>"$T/gte" ||
		{ cat "$T/gt" "$T/gte"; fail "gputrace -c python3 subprocess"; }
	check "python3 subprocess.call (close_fds)"
fi

# the program itself closes its low descriptors (the inherited segment
# number among them) after the agent's constructor, before any CUDA call
HOOKPROG_CLOSEFDS=64 "$GT" -c "$T/prog $T/vadd.fatbin $VADD" -e "$P" \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gt" "$T/gte"; fail "gputrace -c prog closing fds"; }
check "the program closed fds 3-63"

# and every descriptor it can see: the segment is opened again from the
# tracer's; the socket is gone, which the agent notices without harm
HOOKPROG_CLOSEFDS=65536 "$GT" -c "$T/prog $T/vadd.fatbin $VADD" -e "$P" \
	>"$T/gt" 2>"$T/gte" || { cat "$T/gt" "$T/gte"; fail "gputrace -c prog closing every fd"; }
[ "$(grep -c "^cuLaunchKernel.* $VADD: " "$T/gt")" = 5 ] ||
	{ cat "$T/gt" "$T/gte"; fail "closing every fd: the target did not run to its end"; }
exit 0
