#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 15): -l prints what bpftrace 0.17 -l prints for
# globs in BIN and in the probe type, -lv (arguments from DWARF, with a
# program built -g), libc with its separate debug symbols (libc6-dbg),
# and with -p: the program as /proc/PID/root/PATH, libraries as mapped,
# paths as written.  Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
BT=${BPFTRACE:-bpftrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
GT=$(cd "$(dirname "$GT")" && pwd)/$(basename "$GT")	# we cd below
[ "$(id -u)" -eq 0 ] || { echo "needs root (bpftrace -l)"; exit 77; }
"$BT" -l 'uprobe:/bin/sh:*' >/dev/null 2>&1 || { echo "$BT cannot list here"; exit 77; }
command -v cc >/dev/null || { echo "no C compiler"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-list.XXXXXX") || exit 1
wpid=
trap '[ -n "$wpid" ] && kill "$wpid" 2>/dev/null; rm -rf "$T"' EXIT

# every type form bpftrace 0.17 names (it aborts on unnamed parameters)
cat >"$T/t.c" <<'EOF'
#include <stddef.h>
#include <unistd.h>
typedef unsigned long myulong;
enum color { RED, GREEN };
union u { int a; float b; };
struct s { int a; };
typedef struct { int q; } anon_t;
struct big { int x[3]; };
int f1(size_t n, myulong m, enum color c, union u *uu, struct s *sp) { return 0; }
int f2(int (*cb)(int), void *v, const volatile int *cv, char *const pc, const char *const *pp) { return 0; }
int f3(int arr[4], unsigned char uc, _Bool b, float fl, long double ld, short sh, signed char sc) { return 0; }
static int f4(int x) { return x; }
int f5(int n, ...) { return f4(n); }
int f6() { return 0; }
int f7(struct big b, struct big *pb, const void *cv, void **pp, volatile int vi) { return 0; }
int f8(struct { int z; } *f, anon_t *g, const int h, int (*arr)[3], long long unsigned int ull) { return 0; }
int main(void)
{
	struct big b = { { 0 } };

	for (;;) {
		f1(0, 0, 0, 0, 0); f2(0, 0, 0, 0, 0); f3(0, 0, 0, 0, 0, 0, 0);
		f5(1); f6(); f7(b, 0, 0, 0, 0); f8(0, 0, 0, 0, 0);
		usleep(100000);
	}
}
EOF
mkdir "$T/dir"
cc -O0 -g -w -o "$T/dir/prog" "$T/t.c" || { echo "cc failed"; exit 1; }
cp "$T/dir/prog" "$T/dir/prog2"
cc -O0 -w -o "$T/dir/nodbg" "$T/t.c" || exit 1
cd "$T" || exit 1

fails=0
# same LABEL OPTION...: both tracers print the same and succeed
same() {
	label=$1
	shift
	"$BT" "$@" >bt.out 2>bt.err
	brc=$?
	"$GT" "$@" >gt.out 2>gt.err
	grc=$?
	if [ "$brc" -ne 0 ] || [ ! -s bt.out ]; then
		echo "SKIP $label: bpftrace failed ($brc): $(head -2 bt.err)"
	elif [ "$grc" -ne 0 ] || ! cmp -s bt.out gt.out; then
		echo "FAIL $label (gputrace status $grc, $(wc -l <gt.out) lines; bpftrace $(wc -l <bt.out)):"
		diff -u --label bpftrace --label gputrace bt.out gt.out | head -12
		head -5 gt.err
		fails=$((fails + 1))
	else
		echo "ok $label ($(wc -l <gt.out) lines)"
	fi
}

same glob-in-path -l 'uprobe:./dir/prog*:*'
same glob-dir -l 'uprobe:./dir/*:ma*'
same glob-type -l '*:./dir/prog:*'
same glob-type-u -l 'u*:./dir/p*:f*'
same uretprobe -l 'uretprobe:./dir/prog:f*'
same verbose -lv 'uprobe:./dir/prog:*'
same verbose-nodwarf -lv 'uprobe:./dir/nodbg:*'
same libc -l 'uprobe:libc:*'
# bpftrace 0.17 takes minutes for all of libc's -lv (it walks the DWARF
# once per function; the full 14738 lines matched: docs/parity.md)
same libc-verbose -lv 'uprobe:libc:_IO_f*'
same libc-verbose2 -lv 'uprobe:libc:mall*'

./dir/prog &
wpid=$!
sleep 0.3
same pid-all -p "$wpid" -l 'uprobe:*'
same pid-libc -p "$wpid" -l 'uprobe:libc:mall*'
same pid-path -p "$wpid" -l 'uprobe:./dir/prog:f*'
same pid-verbose -p "$wpid" -lv 'uprobe:*'
# no pattern, '*' or '*:*': the program's uprobes only, as bpftrace 0.17
# (no generic forms; a CUDA program's gpu: kernels would follow)
same pid-nopattern -p "$wpid" -l
same pid-star -p "$wpid" -l '*'
same pid-starstar -p "$wpid" -l '*:*'
grep -qx 'BEGIN' gt.out 2>/dev/null && { echo "FAIL pid-nopattern: generic forms"; fails=$((fails + 1)); }

# a type glob that names no uprobe type is refused, as bpftrace refuses it
if "$GT" -l '*retprobe:./dir/prog:*' >gt.out 2>gt.err ||
   ! grep -q 'no probe type matched for \*retprobe' gt.err; then
	echo "FAIL type glob without a match:"
	cat gt.err
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] || exit 1
echo ok
