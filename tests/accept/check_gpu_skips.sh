#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 31): make check (tests/run.sh) says which GPU tests it
# did not run: one SKIP line per tests/gpu/*.sh with the reason, counted
# in "N skipped".  Exit 0 pass, 1 fail.
cd "$(dirname "$0")/../.." || exit 1
out=$(ONLY='gpu/*' sh tests/run.sh gpu 2>&1)
n=0
for s in tests/gpu/*.sh; do
	b=$(basename "$s" .sh)
	[ "$b" = run ] && continue
	n=$((n + 1))
	echo "$out" | grep -q "^SKIP gpu/$b: .*make gpu-check runs it" ||
		{ echo "no SKIP line for gpu/$b:"; echo "$out"; exit 1; }
done
echo "$out" | tail -n 1 | grep -qx "0 passed, 0 failed, $n skipped" ||
	{ echo "count: $(echo "$out" | tail -n 1), want $n skipped"; exit 1; }
# and the default parts include it
grep -q '^parts=.*accept fuzz gpu}' tests/run.sh || { echo "gpu not a default part"; exit 1; }
echo "gpu skips: ok ($n)"
