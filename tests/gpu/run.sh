#!/bin/sh
# SPDX-License-Identifier: MIT
#
# GPU suite (make gpu-check).  Needs an NVIDIA GPU; where `nvidia-smi -L`
# fails the suite reports itself skipped.  Each tests/gpu/*.sh is a
# script like tests/accept/*.sh: exit 0 pass, 1 fail, 77 skip, run with
# GPUTRACE set.  ONLY (a shell pattern, e.g. ONLY='gpu/real_*') picks
# scripts.  Ends with "N passed, N failed, N skipped".

cd "$(dirname "$0")/../.." || exit 1

if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP gpu: no GPU here (nvidia-smi -L failed)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

if [ -n "$GPUTRACE_BIN" ]; then
	GPUTRACE=$GPUTRACE_BIN
else
	GPUTRACE=$(pwd)/build/gputrace
fi
export GPUTRACE

npass=0
nfail=0
nskip=0
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT

for s in tests/gpu/*.sh; do
	[ -f "$s" ] || continue
	name=gpu/$(basename "$s" .sh)
	[ "$name" = gpu/run ] && continue
	# shellcheck disable=SC2254
	case $name in ${ONLY:-*}) ;; *) continue ;; esac
	timeout -k 5 300 sh "$s" </dev/null >"$out" 2>&1
	rc=$?
	case $rc in
	0)
		npass=$((npass + 1))
		echo "PASS $name" ;;
	77)
		nskip=$((nskip + 1))
		echo "SKIP $name: $(tail -n 1 "$out")" ;;
	*)
		nfail=$((nfail + 1))
		echo "FAIL $name: exit status $rc"
		head -n 30 "$out" | sed 's/^/    | /'
		# failures further down, with what they printed
		tail -n +31 "$out" | grep -A 10 '^FAIL' | head -n 80 |
			sed 's/^/    | /' ;;
	esac
done

echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
