#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: cuda: probe errors name the problem (compile only).
. "$(dirname "$0")/../progs/cuda_lib.sh"

# check PROG MESSAGE
check() {
	run "$FAKE" --dry-run -e "$1"
	if [ "$rc" -ne 1 ] || ! grep -qF -- "error: $2" "$T/err"; then
		echo "'$1': status $rc, want 1 and 'error: $2':"
		cat "$T/err"
		exit 1
	fi
}
check "cuda:nope { }" "unknown cuda probe 'nope'"
check "cuda:malloc:x* { }" "only cuda:launch and cuda:complete take a kernel name"
check "cuda:complete { @ = count(); }" "cuda:complete needs -c CMD"
# --dry-run -p PID compiles it as -p would (the agent's probe)
sleep 20 &
sp=$!
run "$FAKE" --dry-run -p $sp -e "cuda:complete { @ = count(); }"
kill $sp
[ "$rc" -eq 0 ] || { cat "$T/err"; echo "--dry-run -p PID refused cuda:complete"; exit 1; }
check "cuda:launch:vadd { }" "cuda:launch:GLOB needs -p PID or -c CMD"
check "cuda:launch { @ = size; }" "builtin 'size' is not available in cuda probes"
check "cuda:memcpy { @ = kernel; }" "builtin 'kernel' is not available in cuda probes"
check "cuda:free { @ = duration; }" "builtin 'duration' is not available in cuda probes"
# text functions on `kernel` (a key) are refused where == is, located
check 'cuda:launch /strncmp(kernel, "triton", 6) == 0/ { }' "strncmp() cannot read 'kernel' as text"
grep -qF 'stdin:1:22: error:' "$T/err" || { cat "$T/err"; echo "strncmp: not at its argument"; exit 1; }
check 'cuda:launch { if (strncmp("ab", kernel, 2) == 0) { @ = count(); } }' "strncmp() cannot read 'kernel' as text"
grep -qF 'stdin:1:33: error:' "$T/err" || { cat "$T/err"; echo "strncmp: not at its argument"; exit 1; }
check 'cuda:launch { $k = kernel; @[str($k, 8)] = count(); }' "str() cannot cut 'kernel'"
# str(kernel) is kernel: accepted, still a name
run "$FAKE" --dry-run -e 'cuda:launch { @[str(kernel)] = count(); }'
[ "$rc" -eq 0 ] || { cat "$T/err"; echo "str(kernel) refused"; exit 1; }
run "$T" --dry-run -e "cuda:launch { }"
if [ "$rc" -ne 1 ] || ! grep -q "cannot find the CUDA driver" "$T/err"; then
	# a machine with a real driver in the loader's cache finds it
	[ "$rc" -eq 0 ] || { echo "no driver: status $rc"; cat "$T/err"; exit 1; }
fi
exit 0
