#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: gpu:sample compiles with -c (no GPU, compile only), its
# builtins type-check, and bad uses get errors at the right place.
GT=${GPUTRACE_BIN:-${GPUTRACE:-build/gputrace}}
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-gsample.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

ok() {	# PROGRAM: compiles
	"$GT" --dry-run -c /bin/true -e "$1" >"$T/out" 2>"$T/err" ||
		{ cat "$T/err"; echo "FAIL: '$1' does not compile"; exit 1; }
}
bad() {	# PROGRAM LINE:COL MESSAGE
	"$GT" --dry-run -c /bin/true -e "$1" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 1 ] || ! grep -qF -- "stdin:$2: error: $3" "$T/err"; then
		echo "FAIL: '$1': status $rc, want 1 and 'stdin:$2: error: $3':"
		cat "$T/err"
		exit 1
	fi
}

ok 'gpu:sample { @[kernel, stall] = sum(samples); @p[kernel, pc] = count();
  @g[gpu, pid, comm] = sum(samples); }'
ok 'gpu:sample:ns::gemm*:12 /samples > 2/ { printf("%s %s %x %d\n", kernel, stall, pc, samples); }'
ok 'gpu:sample:*:31 { @s[stall] = hist(samples); } gpu:sample:vadd { @v = count(); }'
# integers, strings, the kernel key
bad 'gpu:sample { @ = stall + 1; }' 1:24 'type mismatch'
bad 'gpu:sample { @ = sum(stall); }' 1:22 'sum() expects an integer, not string'
bad 'gpu:sample { if (kernel == "vadd") { @ = 1; } }' 1:25 "'kernel' cannot be compared as a string"
# device builtins, other probes' builtins
bad 'gpu:sample { @ = smid; }' 1:18 "builtin 'smid' is not available in gpu:sample probes"
bad 'gpu:sample { @ = duration; }' 1:18 "builtin 'duration' is not available in gpu:sample probes"
bad 'cuda:complete { @ = stall; }' 1:21 "builtin 'stall' is not available in cuda probes"
bad 'gpu:kernel:vadd { @ = samples; }' 1:23 "builtin 'samples' is not available in gpu probes"
# the probe's own parts
bad 'gpu:sample:vadd:4 { @ = count(); }' 1:17 'gpu:sample: PERIOD is log2 of the cycles between samples, 5 to 31, not 4'
bad 'gpu:sample: { @ = count(); }' 1:12 'gpu:sample: empty kernel name GLOB'
bad 'gpu:sample:a:12, gpu:sample:b:13 { @ = count(); }' 1:1 'gpu:sample:b:13: one sampling period per process (12 and 13 given)'
bad 'gpu:sample, gpu:kernel:vadd { @ = count(); }' 1:13 'a clause cannot mix gpu: and host probes'
# -l lists the probe's forms, with a target too
printf 'gpu:sample\ngpu:sample:GLOB\ngpu:sample:GLOB:PERIOD\n' >"$T/want"
"$GT" -l 'gpu:sample*' >"$T/out" 2>"$T/err" && diff -u "$T/want" "$T/out" ||
	{ cat "$T/err"; echo "FAIL: -l 'gpu:sample*'"; exit 1; }
"$GT" -l 'gpu:sample*' -c /bin/true >"$T/out" 2>"$T/err" &&
	diff -u "$T/want" "$T/out" ||
	{ cat "$T/err"; echo "FAIL: -l 'gpu:sample*' -c"; exit 1; }
exit 0
