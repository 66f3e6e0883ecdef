#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: a BEGIN-only one-liner with count() and sum() prints both
# maps at exit, sorted by name: "@s: 12" then "@x: 1", exit status 0.
# Exit 0 pass, 1 fail (saying why), 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }

out=$(mktemp) || exit 1
err=$(mktemp) || exit 1
trap 'rm -f "$out" "$err"' EXIT

timeout -k 5 20 "$GT" \
	-e 'BEGIN { @x = count(); @s = sum(5); @s = sum(7); exit(); }' \
	</dev/null >"$out" 2>"$err"
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "exit status $rc, want 0; stderr:"
	cat "$err"
	exit 1
fi

# The map lines, in order, must be exactly these two.
maps=$(grep '^@' "$out")
want=$(printf '@s: 12\n@x: 1')
if [ "$maps" != "$want" ]; then
	echo "map lines differ; want:"
	echo "$want"
	echo "got stdout:"
	cat "$out"
	exit 1
fi
exit 0
