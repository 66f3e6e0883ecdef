#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: kname(kernel), a kernel's short name (runtime/kname_fold.c),
# with the fake driver of cuda_names.sh.  The two instantiations of the
# stencil template (2 and 4 launches) are one row of 6 under kname() and
# two under kernel; printf and tuple keys print the short name; kname()
# of anything but kernel, and a map keyed by both, are refused.
. "$(dirname "$0")/../progs/cuda_lib.sh"

PROG='
cuda:launch { @[kname(kernel)] = count(); @t[kname(kernel), 1] = sum(2); }
cuda:launch:*stencil* { @k[kernel] = count(); printf("%s\n", kname(kernel)); }'
S=hz::detail::stencil_kernel_with_a_name_long_enough_to_pass_64
run "$FAKE" -c "$STUB -n 2" -e "$PROG" ||
	{ echo "gputrace -c failed:"; cat "$T/err"; exit 1; }
grep -qx "@\[$S<...>\]: 6" "$T/out" || { cat "$T/out"; echo "kname(): instantiations not one row"; exit 1; }
grep -qx "@\[gt::vadd<...>\]: 14" "$T/out" || { cat "$T/out"; echo "kname(): gt::vadd<int>"; exit 1; }
grep -qx "@\[vadd\]: 4" "$T/out" || { cat "$T/out"; echo "kname(): a C name changed"; exit 1; }
grep -qx "@t\[$S<...>, 1\]: 12" "$T/out" || { cat "$T/out"; echo "kname() in a tuple key"; exit 1; }
grep -qx "@k\[$S<double, 3>\]: 2" "$T/out" && grep -qx "@k\[$S<float, 3>\]: 4" "$T/out" ||
	{ cat "$T/out"; echo "kernel is no longer the full name"; exit 1; }
[ "$(grep -cx "$S<...>" "$T/out")" = 6 ] || { cat "$T/out"; echo "printf of kname()"; exit 1; }
grep '<float\|<double' "$T/out" | grep -qv '^@k' && { cat "$T/out"; echo "a long name printed"; exit 1; }

# refused: kname() of another string, and a map keyed by both forms
run "$FAKE" --dry-run -e 'cuda:launch { @[kname(comm)] = count(); }'
[ "$rc" -eq 1 ] && grep -qF "stdin:1:23: error: kname() takes 'kernel'" "$T/err" ||
	{ cat "$T/err"; echo "kname(comm) not refused"; exit 1; }
run "$FAKE" --dry-run -e 'cuda:launch { @[kname(kernel)] = count(); @[kernel] = count(); }'
[ "$rc" -eq 1 ] && grep -q "error:" "$T/err" ||
	{ cat "$T/err"; echo "a map keyed by kernel and kname(kernel) accepted"; exit 1; }
exit 0
