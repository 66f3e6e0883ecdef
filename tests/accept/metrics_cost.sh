#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: the sum beside a hist()'s or lhist()'s buckets (the metrics
# page's _sum) is updated only with --metrics, its one reader
# (docs/fleet.md).  Without it, from the dumps of `--dry-run`:
# - host eBPF: a hist or lhist update makes as many map calls as a
#   count() (one lookup, one update), and never addresses the sum's
#   entry (bucket index 34); with --metrics one lookup and one update
#   more each, and the entry 34;
# - device PTX: the inline entry hist has no shuffles (`fns`) and
#   defers one add (bucket), the gpu:warp hist one `red`, the runtime's
#   calls the plain op (6 hist, 7 lhist); with --metrics the rank scan,
#   the sum word's add (offset 128 + 16 + 34 x 8 = 416) and the op with
#   DEVRT_OP_F_SUM (0x100: 262, 263).
# No GPU, no privileges: --dry-run compiles and attaches nothing.
# Exit 0 pass, 1 fail (saying why).
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
M="--metrics 127.0.0.1:0"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

host='tracepoint:syscalls:sys_enter_read { @h = hist(args->count); @l = lhist(args->count, 0, 100, 10); }'
hcount='tracepoint:syscalls:sys_enter_read { @h = count(); @l = count(); }'
calls() { grep -c 'call bpf_map_\(lookup\|update\)_elem'; }
sum34() { grep -c '^ *[0-9]*: (7a) \*(u64 \*)(r10 -[0-9]*) = 34$'; }

off=$("$GT" --dry-run -d ebpf -e "$host" 2>&1) || bad "dry run: $off"
on=$("$GT" $M --dry-run -d ebpf -e "$host" 2>&1) || bad "dry run --metrics: $on"
ref=$("$GT" --dry-run -d ebpf -e "$hcount" 2>&1) || bad "dry run count: $ref"
n_off=$(printf '%s\n' "$off" | calls)
n_on=$(printf '%s\n' "$on" | calls)
n_ref=$(printf '%s\n' "$ref" | calls)
[ "$n_ref" -eq 4 ] || bad "two count()s make $n_ref map calls, want 4"
[ "$n_off" -eq "$n_ref" ] ||
	bad "without --metrics hist+lhist make $n_off map calls, count()s $n_ref"
[ "$n_on" -eq $((n_ref + 4)) ] ||
	bad "with --metrics hist+lhist make $n_on map calls, want $((n_ref + 4))"
[ "$(printf '%s\n' "$off" | sum34)" -eq 0 ] ||
	bad "without --metrics the hist addresses its sum entry (34)"
[ "$(printf '%s\n' "$on" | sum34)" -eq 1 ] ||
	bad "with --metrics the hist does not address its sum entry (34)"

# gpu: probe 0 entry hist (inline, deferred), probe 1 warp-exit hist
# (inline, one lane), probe 2 a keyed hist and an lhist (runtime calls)
dev='gpu:kernel:* { @h = hist(threadIdx.x); }
gpu:warp:*:exit { @w = hist(lanes); }
gpu:kernel:*:exit { @k[blockIdx.x] = hist(threadIdx.x); @l = lhist(threadIdx.x, 0, 256, 16); }'
# probe K's function (the lowering's own registers, not the pasted copy)
probe() {
	awk -v f=".func __gt_probe_$1(" 'index($0, f) == 1 { p = 1 } p { print } p && /^}/ { exit }'
}
doff=$("$GT" --dry-run -d ptx -e "$dev" 2>&1) || bad "dry run ptx: $doff"
don=$("$GT" $M --dry-run -d ptx -e "$dev" 2>&1) || bad "dry run ptx --metrics: $don"
p0=$(printf '%s\n' "$doff" | probe 0)
p1=$(printf '%s\n' "$doff" | probe 1)
p2=$(printf '%s\n' "$doff" | probe 2)
q0=$(printf '%s\n' "$don" | probe 0)
q1=$(printf '%s\n' "$don" | probe 1)
q2=$(printf '%s\n' "$don" | probe 2)
[ -n "$p0" ] && [ -n "$p1" ] && [ -n "$p2" ] && [ -n "$q0" ] && [ -n "$q1" ] &&
	[ -n "$q2" ] || bad "a probe function is missing from the dumps"
# want N TEXT PATTERN WHAT: TEXT has N lines matching PATTERN
want() {
	[ "$(printf '%s\n' "$2" | grep -c -- "$3")" -eq "$1" ] || bad "$4"
}
want 0 "$p0" 'fns\.b32' "entry hist without --metrics: shuffles"
want 1 "$p0" 'add\.u64 %gt_d0_[0-9]*a,' "entry hist without --metrics: not one deferred add"
want 5 "$q0" 'fns\.b32' "entry hist with --metrics: no rank scan"
want 1 "$q0" 'add\.u64 %gt_d0_[0-9]*a, %t0, 416;' "entry hist with --metrics: no add to the sum word"
want 1 "$p1" 'red\.global\.add\.u64' "warp hist without --metrics: not one red"
want 1 "$q1" 'red\.global\.add\.u64 \[%t0+416\], %r3;' "warp hist with --metrics: no red on the sum word"
want 1 "$p2" 'call __gt_rt_agg8, (.*, 6);' "keyed hist call without --metrics: not the plain op"
want 1 "$p2" 'call __gt_rt_agg0, (.*, 7);' "lhist call without --metrics: not the plain op"
want 1 "$q2" 'call __gt_rt_agg8, (.*, 262);' "keyed hist call with --metrics: no DEVRT_OP_F_SUM"
want 1 "$q2" 'call __gt_rt_agg0, (.*, 263);' "lhist call with --metrics: no DEVRT_OP_F_SUM"
[ $fail -eq 0 ] || { printf '%s\n' "$doff" "$don" | head -400; exit 1; }
exit 0
