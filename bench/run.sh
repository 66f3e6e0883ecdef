#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run every benchmark in bench/ that this machine can run.  A benchmark
# is an executable file here; one that needs a GPU says so with a line
#   # requires: gpu
# near its top and is skipped, with a message, where there is no
# working nvidia-smi; one that exits 77 skipped itself (a missing tool).
# Exit status: 1 if any benchmark that ran failed.

dir=$(dirname "$0")
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	gpu=1
else
	gpu=0
fi

status=0
for b in "$dir"/*; do
	[ -f "$b" ] && [ -x "$b" ] || continue
	name=$(basename "$b")
	[ "$name" = run.sh ] && continue
	if head -n 20 "$b" | grep -q '^# requires: gpu'; then
		if [ $gpu = 0 ]; then
			echo "== $name: skipped (needs a GPU, no working nvidia-smi)"
			continue
		fi
	fi
	echo "== $name"
	"$b"
	case $? in
	0) ;;
	77) echo "== $name: skipped" ;;	# what it needs is missing
	*) echo "== $name: FAILED"; status=1 ;;
	esac
	echo
done
exit $status
