#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 15): -d ptx shows the user's clauses' PTX first (each
# probe function and the text spliced into the kernel) and leaves the
# device runtime out with a line saying so; -d ptx-all adds the runtime
# after them.  Dumps go to stderr.  Exit 0 pass, 1 fail.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-dptx.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
prog='gpu:kernel:vadd { @[smid] = count(); } gpu:warp:vadd:exit { @w = count(); }'

"$GT" --dry-run -d ptx -e "$prog" >"$T/out" 2>"$T/ptx" </dev/null ||
	{ echo "-d ptx failed:"; cat "$T/ptx"; exit 1; }
"$GT" --dry-run -d ptx-all -e "$prog" >/dev/null 2>"$T/all" </dev/null ||
	{ echo "-d ptx-all failed:"; cat "$T/all"; exit 1; }
if grep -q '__gt_probe\|device runtime' "$T/out"; then
	echo "PTX on stdout"; exit 1
fi
first=$(head -1 "$T/ptx")
[ "$first" = "// gputrace probe 0: gpu:kernel:vadd" ] ||
	{ echo "-d ptx: first line '$first'"; exit 1; }
grep -q '^// gputrace probe 1: gpu:warp:vadd:exit$' "$T/ptx" &&
grep -q '^\.func __gt_probe_1' "$T/ptx" &&
grep -q '^// gputrace: gpu:kernel:vadd calls: ' "$T/ptx" ||
	{ echo "-d ptx: a probe function or its call is missing:"; grep '^//' "$T/ptx"; exit 1; }
if grep -q '^// gputrace device runtime$' "$T/ptx" ||
   ! tail -1 "$T/ptx" | grep -q '^// gputrace: device runtime ([0-9]* lines) left out; -d ptx-all shows it$'; then
	echo "-d ptx: the runtime is not left out:"; grep '^//' "$T/ptx"; exit 1
fi
# ptx-all: the same probes first, then the runtime
n=$(grep -n '^// gputrace device runtime$' "$T/all" | cut -d: -f1)
p=$(grep -n '^// gputrace probe 1:' "$T/all" | cut -d: -f1)
[ -n "$n" ] && [ -n "$p" ] && [ "$p" -lt "$n" ] &&
[ "$(head -1 "$T/all")" = "$first" ] ||
	{ echo "-d ptx-all: want the probes, then the runtime:"; grep '^//' "$T/all"; exit 1; }
echo "ok: -d ptx $(wc -l <"$T/ptx") lines, -d ptx-all $(wc -l <"$T/all")"
