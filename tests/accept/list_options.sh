#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 31): -l as a new user types it.  Options after the
# PATTERN are options (-l 'uprobe:BIN:*' -v), -e is refused with a reason
# (it was taken for a binary: "cannot find '-e'"), a BINARY that is
# missing, not ELF or not in $PATH is an error (was: nothing, rc 0), a
# pattern with no provider lists every provider's matching probes and
# plain -l lists them all (was: 35 templates), -lv on a tracepoint prints
# its fields as bpftrace does.  Exit 0 pass, 1 fail, 77 skip.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# -l ... BIN with options after: the same lines as with them before
B=build/progs/uprobe_target
if [ -x "$B" ]; then
	"$GT" -v -l "uprobe:$B:*" >"$T/a" 2>&1
	"$GT" -l "uprobe:$B:*" -v >"$T/b" 2>&1
	[ -s "$T/a" ] && cmp -s "$T/a" "$T/b" || bad "-l PATTERN -v: $(head -3 "$T/b")"
	"$GT" -l 'gpu:*' -q "$B" >"$T/b" 2>&1 || bad "-l 'gpu:*' -q BIN: rc $? $(head -3 "$T/b")"
	"$GT" -l 'gpu:*' -q "$B" -v >"$T/b" 2>&1 || bad "-l 'gpu:*' -q BIN -v: rc $? $(head -3 "$T/b")"
fi

out=$("$GT" -l 'uprobe:*' -e 'BEGIN{}' 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q -- '-l lists probes and runs no program' &&
	! echo "$out" | grep -q "cannot find '-e'" || bad "-l with -e: $out"
out=$("$GT" -l a b c 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q "unexpected argument 'c'" || bad "-l a b c: $out"

# a BINARY that cannot be listed: the uprobe listing's words, rc 1
for b in /nonexistent /etc/passwd gt_no_such_program_anywhere; do
	out=$("$GT" -l 'gpu:*' "$b" 2>&1)
	rc=$?
	want=$("$GT" -l "uprobe:$b:*" 2>&1)
	[ $rc -eq 1 ] && [ -n "$out" ] && [ "$out" = "$want" ] ||
		bad "-l 'gpu:*' $b: rc $rc '$out' (uprobe listing says '$want')"
done
out=$("$GT" -l 'gpu:*' -c /nonexistent 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q '/nonexistent: No such file' || bad "-l -c /nonexistent: $out"

# no provider: every provider's probes that match; plain -l: all of them
if [ -r /sys/kernel/tracing/events/syscalls/sys_enter_openat/format ]; then
	"$GT" -l '*open*' >"$T/o" 2>&1 || bad "-l '*open*': rc $?"
	grep -qx 'tracepoint:syscalls:sys_enter_openat' "$T/o" ||
		bad "-l '*open*' lacks tracepoint:syscalls:sys_enter_openat: $(head -3 "$T/o")"
	grep -v 'open' "$T/o" | head -3 | grep -q . && bad "-l '*open*' lists what does not match"
	start=$(date +%s)
	"$GT" -l >"$T/all" 2>&1 || bad "-l: rc $?"
	[ $(($(date +%s) - start)) -lt 10 ] || bad "-l took more than 10 s"
	for p in BEGIN 'uprobe:BIN:FUNC' 'tracepoint:syscalls:sys_enter_openat' \
		 'tracepoint:sched:sched_switch' 'software:cpu-clock:'; do
		grep -qx "$p" "$T/all" || bad "-l lacks $p"
	done
	# -lv: the fields, as bpftrace prints them
	"$GT" -lv 'tracepoint:syscalls:sys_enter_openat' >"$T/v" 2>&1
	printf '%s\n' 'tracepoint:syscalls:sys_enter_openat' '    int __syscall_nr' \
		'    int dfd' '    const char * filename' '    int flags' \
		'    umode_t mode' >"$T/want"
	cmp -s "$T/v" "$T/want" || bad "-lv sys_enter_openat: $(cat "$T/v")"
	if command -v bpftrace >/dev/null && [ "$(id -u)" -eq 0 ]; then
		for t in 'sched:sched_switch' 'sched:sched_process_exec' 'syscalls:sys_exit_read*' 'irq:*'; do
			bpftrace -lv "tracepoint:$t" >"$T/b" 2>/dev/null
			"$GT" -lv "tracepoint:$t" >"$T/g" 2>&1
			[ -s "$T/b" ] && ! cmp -s "$T/b" "$T/g" &&
				bad "-lv tracepoint:$t differs from bpftrace: $(diff "$T/b" "$T/g" | head -5)"
		done
	fi
fi
[ $fail -eq 0 ] && echo "list options: ok"
exit $fail
