#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 31): -lv lists under each cuda: and gpu: probe form
# its own builtins, and each one it lists compiles in a clause of that
# form (the list is checked against the compiler, not against itself).
# Exit 0 pass, 1 fail, 77 skip.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
FAKE=build/progs/fakecuda
[ -e "$FAKE/libcuda.so.1" ] || { echo "no fake libcuda ($FAKE)"; exit 77; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
"$GT" -lv 'cuda:*' >"$T/cuda" 2>&1 && "$GT" -lv 'gpu:*' >"$T/gpu" 2>&1 ||
	{ echo "-lv failed"; cat "$T/cuda" "$T/gpu"; exit 1; }
grep -qx '    shmem' "$T/cuda" && grep -qx '    queued' "$T/cuda" &&
	grep -qx '    lanes' "$T/gpu" && grep -qx '    duration' "$T/gpu" ||
	{ echo "-lv lacks builtins:"; cat "$T/cuda" "$T/gpu"; exit 1; }
n=0
cat "$T/cuda" "$T/gpu" | while IFS= read -r l; do
	case $l in
	"    "*)	b=${l#    }
		[ "$b" = argN ] && b=arg0
		form=$(echo "$form" | sed 's/GLOB/k/')
		# cuda:complete, gpu:sample and GLOBs need a target; a dry run
		# does not start it
		c=; case $form in cuda:complete*|cuda:*:k|gpu:sample*) c=/bin/true ;; esac
		out=$(LD_LIBRARY_PATH=$FAKE "$GT" --dry-run ${c:+-c "$c"} -e "$form { @x[$b] = count(); }" 2>&1) ||
			{ echo "FAIL: -lv lists $b under $form, which refuses it: $out"; echo x >>"$T/bad"; } ;;
	*)	form=$l ;;
	esac
done
[ -e "$T/bad" ] && exit 1
echo "-lv builtins: ok"
