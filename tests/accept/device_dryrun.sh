#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Device probes through the whole compiler, no GPU needed: for every test
# kernel (tests/cuda/k_*.cu, each with its own nvcc flags), programs that
# use every probe form (kernel/warp x entry/exit), every device builtin,
# every aggregation and printf are compiled, verified, lowered and spliced
# by `gputrace --dry-run -d ptx` (on stderr); ptxas must accept every module printed.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x "$CUDA/bin/nvcc" ] || { echo "no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-dry.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

progs='gpu:kernel:* { @c = count(); @s = sum(threadIdx.x); @mn = min(blockIdx.x); @mx = max(laneid); @a = avg(warpid); @st = stats(smid); }
gpu:kernel:*:exit { @d = hist(duration); @l = lhist(threadIdx.x, 0, 256, 16); @sm = smload(1); }
gpu:warp:* { @w[kernel, lanes] = count(); @t = sum(gtime - launch_ns); @k[blockIdx.x % 4, blockIdx.y, blockIdx.z] = count(); }
gpu:warp:*:exit /laneid == 0/ { @x[threadIdx.y, threadIdx.z] = max(clock); @g = count(); @p = sum(pid); @n = max(nsmid); @gd = max(gridDim.x + gridDim.y + gridDim.z + blockDim.x + blockDim.y + blockDim.z); @la = max(launch); @gpu = max(gpu); }
gpu:kernel:* /threadIdx.x == 0 && blockIdx.x < 2/ { printf("block %d arg0 %d kernel %s\n", blockIdx.x, arg0, kernel); @v = arg0; if (@v > 5) { delete(@v); } }
gpu:warp:* { @pk[kernel] = count(); $i = threadIdx.x; if (*(int32 *)(arg0 + 4 * $i) > 100) { @big = count(); } @r = sum(*(uint8 *)arg0); }
gpu:kernel:* /threadIdx.x % 3 == 0/ { @fc = count(); @fh = hist(threadIdx.x); @fs = smload(1); }
gpu:warp:* /blockIdx.x > 1/ { @wc = count(); @wh = hist(warpid); }'

nfail=0
for src in tests/cuda/k_*.cu; do
	b=$(basename "$src" .cu)
	arch=$(sed -n '1s|^// nvcc: -arch=\(sm_[0-9a]*\).*|\1|p' "$src")
	arch=${arch:-sm_90}
	cc=${arch#sm_}
	# PTX and SASS for the file's own target, in a fatbin like nvcc's default
	"$CUDA/bin/nvcc" -gencode "arch=compute_$cc,code=[sm_$cc,compute_$cc]" \
		-c -o "$T/$b.o" "$src" || { echo "FAIL nvcc $b"; nfail=$((nfail + 1)); continue; }
	printf '%s\n' "$progs" | while IFS= read -r p; do
		"$GT" --dry-run -d ptx -e "$p" "$T/$b.o" >/dev/null 2>"$T/out" ||
			{ echo "FAIL $b: gputrace: $(grep -m3 gputrace: "$T/out")"; echo x >>"$T/bad"; continue; }
		# each module starts at its .version line
		awk -v d="$T" '/^\.version/ { n++ } n { print > (d "/mod" n ".ptx") }' "$T/out"
		for m in "$T"/mod*.ptx; do
			[ -f "$m" ] || { echo "FAIL $b: no module printed for: $p"; echo x >>"$T/bad"; continue; }
			if ! "$CUDA/bin/ptxas" -arch="$arch" "$m" -o /dev/null 2>"$T/ptxas"; then
				echo "FAIL $b: ptxas: $(head -2 "$T/ptxas") (program: $p)"
				echo x >>"$T/bad"
			fi
			rm -f "$m"
		done
	done
done
# a branch on a value read from device memory keeps its body: the
# verifier must not take the read's zeroed buffer for a constant
"$GT" --dry-run -d ptx -e 'gpu:kernel:k { if (*(int32 *)(arg0 + 4 * threadIdx.x) > 100) { @big = count(); } @n = count(); }' 2>&1 |
	awk '/^\.func __gt_probe_0/,/^}/' >"$T/read.ptx"
[ "$(grep -c 'add.u64 %gt_d0_[01]a' "$T/read.ptx")" = 2 ] ||
	{ echo "FAIL: the branch on a device read lost its update"; cat "$T/read.ptx"; echo x >>"$T/bad"; }
# a filter before inline updates does not branch: the lanes it drops
# skip (%pskip), the count's lanes are a ballot of the others, hist's
# skippers match on a bucket of their own; with `lanes` it branches
probe0() {
	"$GT" --dry-run -d ptx -e "$1" 2>&1 | awk '/^\.func __gt_probe_0/,/^}/'
}
probe0 'gpu:kernel:k /threadIdx.x % 3 == 0/ { @c = count(); @h = hist(threadIdx.x); }' >"$T/filter.ptx"
grep -q 'or.pred %pskip, %pskip, %p0;' "$T/filter.ptx" &&
	grep -q 'vote.sync.ballot.b32 %u0, !%pskip, %u0;' "$T/filter.ptx" &&
	grep -q 'selp.b32 %u4, -1, %u3, %pskip;' "$T/filter.ptx" &&
	[ "$(grep -c '@%p0 bra \$L[0-9]' "$T/filter.ptx")" -le 1 ] ||
	{ echo "FAIL: a filter before inline updates branches"; cat "$T/filter.ptx"; echo x >>"$T/bad"; }
# a warp clause's sum of a map without key is inline too
probe0 'gpu:warp:k:exit { @s = sum(laneid); }' >"$T/wsum.ptx"
grep -q 'red.global.add.u64 \[%t0+144\], %r3;' "$T/wsum.ptx" && ! grep -q 'call' "$T/wsum.ptx" ||
	{ echo "FAIL: a warp clause's sum calls the runtime"; cat "$T/wsum.ptx"; echo x >>"$T/bad"; }
probe0 'gpu:kernel:k /threadIdx.x % 3 == 0/ { @c = count(); @l = sum(lanes); }' >"$T/lanes.ptx"
grep -q 'or.pred %pskip' "$T/lanes.ptx" &&
	{ echo "FAIL: a filter before lanes does not branch"; echo x >>"$T/bad"; }
[ -f "$T/bad" ] && exit 1
[ $nfail -eq 0 ] || exit 1
echo "all modules assembled"
exit 0
