#!/bin/sh
# SPDX-License-Identifier: MIT
#
# `make install` into a temporary DESTDIR (PREFIX=/usr): the binary, the
# agent, the tools and their examples (not the demo), the man pages, each
# a copy of its source; the installed binary finds its agent in
# ../lib/gputrace (cuda:complete compiles with -c, and a copy of the
# binary with no agent beside it does not), the installed tools compile
# with it, every installed page renders with `man -l` without a warning,
# and `make uninstall` removes every file.  Installs the build that
# $GPUTRACE belongs to (BUILD=its directory).
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
B=$(dirname "$GT")
command -v man >/dev/null || { echo "no man (man-db)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-install.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
D=$T/root
P=$D/usr
unset GPUTRACE_AGENT_LIB

nfail=0
bad() {
	echo "FAIL $1"
	[ -s "$T/err" ] && sed 's/^/    | /' "$T/err" | head -20
	: >"$T/err"
	nfail=$((nfail + 1))
}
# same SRC DST: DST is an installed copy of SRC
same() {
	[ -f "$2" ] || { bad "not installed: $2"; return; }
	cmp -s "$1" "$2" || bad "$2 differs from $1"
}

# what is built is installed, never rebuilt here: a clock that stepped
# back makes objects look stale, and make would relink the ASan build
# with the plain flags
make -s --no-print-directory install BUILD="$B" PREFIX=/usr DESTDIR="$D" \
	-o "$B/gputrace" -o "$B/libgputrace-agent.so" \
	>"$T/err" 2>&1 || { bad "make install failed"; exit 1; }

same "$GT" "$P/bin/gputrace"
[ -x "$P/bin/gputrace" ] || bad "bin/gputrace not executable"
agent=
if [ -f "$B/libgputrace-agent.so" ]; then
	agent=$P/lib/gputrace/libgputrace-agent.so
	same "$B/libgputrace-agent.so" "$agent"
fi
n=0
for f in tools/*.gt tools/*_example.txt; do
	[ -f "$f" ] || continue
	case $f in
	tools/demo.gt)
		[ -e "$P/share/gputrace/tools/demo.gt" ] && bad "demo.gt installed" ;;
	*)	same "$f" "$P/share/gputrace/tools/$(basename "$f")"; n=$((n + 1)) ;;
	esac
done
for m in man/gputrace.8 man/man8/*.8; do
	same "$m" "$P/share/man/man8/$(basename "$m")"
done

# the installed binary finds the installed agent, and only through it
if [ -n "$agent" ]; then
	"$P/bin/gputrace" --dry-run -c true -e 'cuda:complete { @ = count(); }' \
		>"$T/out" 2>"$T/err" || bad "installed gputrace does not find its agent"
	mkdir -p "$T/alone" && cp "$P/bin/gputrace" "$T/alone/"
	"$T/alone/gputrace" --dry-run -c true -e 'cuda:complete { @ = count(); }' \
		>"$T/out" 2>"$T/err" &&
		bad "a gputrace with no agent beside it compiled cuda:complete (the check above proves nothing)"
	: >"$T/err"
fi

# the installed tools compile with the installed binary (cuda: probes
# resolve against the fake driver, or the toolkit's stub)
DRV=$(cd "$B" && pwd)/progs/fakecuda
for s in "$DRV/libcuda.so.1" "${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so"; do
	[ -f "$s" ] || continue
	mkdir -p "$T/drv" && ln -sf "$s" "$T/drv/libcuda.so.1"
	break
done
if [ -e "$T/drv/libcuda.so.1" ] && [ -n "$agent" ]; then
	for f in "$P"/share/gputrace/tools/*.gt; do
		LD_LIBRARY_PATH=$T/drv "$P/bin/gputrace" --dry-run -c true "$f" \
			>"$T/out" 2>"$T/err" && [ ! -s "$T/err" ] ||
			bad "installed $(basename "$f") does not compile"
	done
fi

# every page renders, without a warning from groff or man
for m in "$P"/share/man/man8/*.8; do
	if ! MANWIDTH=80 man --warnings -l "$m" >"$T/out" 2>"$T/err" ||
	   [ -s "$T/err" ] || ! grep -q '^NAME' "$T/out"; then
		bad "man -l $(basename "$m")"
	fi
done

make -s --no-print-directory uninstall BUILD="$B" PREFIX=/usr DESTDIR="$D" \
	>"$T/err" 2>&1 || bad "make uninstall failed"
left=$(find "$D" -type f)
[ -z "$left" ] || { echo "$left" >"$T/err"; bad "left after make uninstall"; }

[ $nfail -eq 0 ] || exit 1
echo "installed and checked: binary${agent:+, agent}, $n tools, $(ls man/man8/*.8 | wc -l) tool man pages and gputrace.8"
