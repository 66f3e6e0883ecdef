#!/bin/sh
# SPDX-License-Identifier: MIT
# Kernel probes beyond what the differential suite compares: -l against
# bpftrace (usdt, tracepoints), rawtracepoint (not in bpftrace 0.17),
# and kprobe on this kernel: counts where it has kprobes or fentry,
# else the clear refusal at the probe.
[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
cd "$(dirname "$0")/../.." || exit 1
B=build/progs/usdt_target
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# -l usdt:BIN:* lists what bpftrace lists, in its order
if [ -x "$B" ]; then
	bpftrace -l "usdt:$B:*" >/tmp/gt_kp_b.$$ 2>/dev/null
	"$GPUTRACE" -l "usdt:$B:*" >/tmp/gt_kp_g.$$ 2>&1
	[ -s /tmp/gt_kp_g.$$ ] && cmp -s /tmp/gt_kp_b.$$ /tmp/gt_kp_g.$$ ||
		bad "-l usdt differs: $(diff /tmp/gt_kp_b.$$ /tmp/gt_kp_g.$$ | head -5)"
fi

# -l tracepoint: when tracefs is there
if [ -d /sys/kernel/tracing/events ]; then
	bpftrace -l 'tracepoint:sched:*' >/tmp/gt_kp_b.$$ 2>/dev/null
	"$GPUTRACE" -l 't:sched:*' >/tmp/gt_kp_g.$$ 2>&1
	[ -s /tmp/gt_kp_g.$$ ] && cmp -s /tmp/gt_kp_b.$$ /tmp/gt_kp_g.$$ ||
		bad "-l tracepoint differs: $(diff /tmp/gt_kp_b.$$ /tmp/gt_kp_g.$$ | head -5)"
fi
rm -f /tmp/gt_kp_b.$$ /tmp/gt_kp_g.$$

# rawtracepoint: one exec of the child, its argument count from BTF
if [ -e /sys/kernel/btf/vmlinux ]; then
	out=$("$GPUTRACE" -q -e 'rt:sched_process_exec /pid == cpid/ { @n = count(); @p[probe] = 1; @a = arg0 != 0; }' -c /usr/bin/true 2>&1)
	echo "$out" | grep -qx '@n: 1' && echo "$out" | grep -qx '@p\[rawtracepoint:sched_process_exec\]: 1' &&
		echo "$out" | grep -qx '@a: 1' || bad "rawtracepoint: $out"
	out=$("$GPUTRACE" -e 'rawtracepoint:sched_process_exec { print(arg3); }' 2>&1)
	echo "$out" | grep -q "builtin 'arg3' is not available" || bad "rawtracepoint arg3: $out"
	out=$("$GPUTRACE" -e 'rawtracepoint:no_such_tp { exit(); }' 2>&1)
	echo "$out" | grep -q "raw tracepoint not found: no_such_tp" || bad "rawtracepoint missing: $out"
fi

# kprobe: works, or says why at the probe
out=$("$GPUTRACE" -q -e 'kprobe:do_exit /pid == cpid/ { @n = count(); @f[func] = 1; }' -c /usr/bin/true 2>&1)
if [ -e /sys/bus/event_source/devices/kprobe/type ] || ! echo "$out" | grep -q 'no kprobes'; then
	echo "$out" | grep -qx '@n: 1' && echo "$out" | grep -qx '@f\[do_exit\]: 1' ||
		bad "kprobe:do_exit: $out"
else
	echo "$out" | grep -q '^stdin:1:8: error: this kernel has no kprobes (CONFIG_KPROBES)' ||
		bad "kprobe refusal: $out"
fi
# kprobe:* without kprobes: each of ~121k functions was looked up in BTF
# linearly (~80 s); now an index built once (issue 31)
if [ ! -e /sys/bus/event_source/devices/kprobe/type ] && [ -e /sys/kernel/btf/vmlinux ]; then
	start=$(date +%s)
	out=$(timeout 20 "$GPUTRACE" --dry-run -e 'kprobe:* { @ = count(); }' 2>&1)
	rc=$? secs=$(($(date +%s) - start))
	[ $rc -ne 124 ] && [ $secs -lt 10 ] ||
		bad "kprobe:* without kprobes took ${secs} s (rc $rc)"
	[ $rc -eq 0 ] || echo "$out" | grep -q '^stdin:1:8: error: this kernel has no kprobes' ||
		bad "kprobe:* refusal: $out"
fi
out=$("$GPUTRACE" -e 'kprobe:no_such_function_at_all { exit(); }' 2>&1)
echo "$out" | grep -q 'no_such_function_at_all is not a traceable kernel function' ||
	bad "kprobe unknown: $out"
out=$("$GPUTRACE" -e 'kretprobe:vfs_read+4 { exit(); }' 2>&1)
echo "$out" | grep -q 'kretprobe cannot take an offset' || bad "kretprobe+off: $out"

# hardware: counts, or a clear error where there are no counters
out=$("$GPUTRACE" -e 'hardware:cycles:100000 { @ = 1; exit(); }' 2>&1)
echo "$out" | grep -qx '@: 1' || echo "$out" | grep -q 'no such counter' ||
	bad "hardware: $out"
out=$("$GPUTRACE" -e 'software:no-such-event:1 { exit(); }' 2>&1)
echo "$out" | grep -q 'no-such-event: unknown event' || bad "software unknown: $out"

# tracepoint field errors
if [ -d /sys/kernel/tracing/events ]; then
	out=$("$GPUTRACE" -e 'tracepoint:sched:sched_process_exec { print(args->nope); }' 2>&1)
	echo "$out" | grep -q "has no field 'nope'" || bad "tracepoint field: $out"
fi
[ $fail -eq 0 ] && echo "kernel probes: ok"
exit $fail
