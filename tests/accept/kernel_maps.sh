#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: maps keyed by the kernel alone (compiler/kmaps.c) take the
# inline path of a map without key in the device probe (no runtime call,
# no key on the probe's stack); any other use of such a map on the device
# keeps the general path.  Reads --dry-run -d ptx.  Exit 0 pass, 1 fail.

GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
failed=0

# the probe functions' PTX of PROG
probes() {
	"$GT" --dry-run -d ptx -e "$1" 2>&1 | awk '/^\.func __gt_probe_/ { f = 1 } f'
}
want() {	# NAME PROG inline|call
	p=$(probes "$2")
	if [ -z "$p" ]; then
		echo "$1: no probe PTX"; failed=1; return
	fi
	if echo "$p" | grep -q 'call __gt_rt_agg'; then got=call; else got=inline; fi
	if echo "$p" | grep -q '__gt_stk'; then got="$got+stack"; fi
	if [ "$got" != "$3" ]; then
		echo "$1: want $3, got $got"; failed=1
	fi
}

want count 'gpu:warp:* { @k[kernel] = count(); }' inline
want hist 'gpu:kernel:*:exit { @h[kernel] = hist(duration); }' inline
want two-clauses 'gpu:warp:a* { @k[kernel] = count(); } gpu:warp:b* { @k[kernel] = count(); }' inline
want tuple-key 'gpu:warp:* { @k[kernel, 1] = count(); }' call+stack
want sum 'gpu:warp:* { @k[kernel] = sum(1); }' call+stack
want other-key 'gpu:warp:a* { @k[kernel] = count(); } gpu:warp:b* { @k["x"] = count(); }' call+stack
[ $failed = 0 ] && echo "kernel-keyed maps: inline where they can be"
exit $failed
