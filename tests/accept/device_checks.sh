#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance (issue 31): gpu: probes checked where the kernels are known.
# An invalid glob (gpu:kernel:[) is a located error; with -c, argN past
# the matched kernel's PTX parameters is a located error (its PTX read
# 0); a dry run names a matched kernel that has SASS only (it printed
# nothing); a GLOB that matches no kernel of -c's program is a warning
# (it was said only under -d ptx, where it stays an error, said once);
# -lv lists a kernel's parameter types from its PTX.
# Exit 0 pass, 1 fail, 77 skip.
GT=${GPUTRACE:-build/gputrace}
[ -x "$GT" ] || { echo "no gputrace binary at $GT"; exit 1; }
GT=$(cd "$(dirname "$GT")" && pwd)/$(basename "$GT")
fail=0
bad() { echo "FAIL: $*"; fail=1; }

out=$("$GT" --dry-run -e 'gpu:kernel:[ { @x = 1; }' 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q "^stdin:1:12: error: invalid kernel glob '\[': '\[' without '\]'" ||
	bad "gpu:kernel:[: $out"
out=$("$GT" --dry-run -e 'gpu:warp:a[!x]b* { @x = 1; }' 2>&1)
[ $? -eq 0 ] || bad "gpu:warp:a[!x]b*: $out"

NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { [ $fail -eq 0 ] && echo "no nvcc"; exit $((fail ? 1 : 77)); }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-devchk.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cat >"$T/v.cu" <<'CU'
__global__ void vadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}
int main(void) { return 0; }
CU
# vadd with PTX and SASS; sass_kernel (a library's) SASS only
"$NVCC" -Xcompiler -fPIC -c -gencode arch=compute_90,code=sm_90 \
	tests/gpu/agent_sass.cu -o "$T/sass.o" &&
	${CC:-cc} -shared -o "$T/libgtsass.so" "$T/sass.o" &&
	"$NVCC" -cudart shared -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
		-o "$T/app" "$T/v.cu" -L"$T" -lgtsass -Xlinker -rpath,"$T" \
		-Xlinker --no-as-needed || { echo "nvcc failed"; exit 1; }
cd "$T" || exit 1

out=$("$GT" --dry-run -c ./app -e 'gpu:kernel:vadd { @x = arg7; }' 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q '^stdin:1:24: error: arg7: kernel vadd has 4 parameters (arg0 to arg3)' ||
	bad "arg7 of vadd: $out"
out=$("$GT" --dry-run -c ./app -e 'gpu:kernel:vadd:exit { @x = arg3; @y = arg0; }' 2>&1)
[ $? -eq 0 ] || bad "arg3 of vadd: $out"
if [ "$(id -u)" -eq 0 ]; then
	out=$(timeout 20 "$GT" -c ./app -e 'gpu:warp:vad* { @x = arg4; }' 2>&1)
	[ $? -eq 1 ] && echo "$out" | grep -q 'error: arg4: kernel vadd has 4 parameters' ||
		bad "-c, arg4 of vadd: $out"
fi

# -lv: the kernel's parameters from its PTX, as argN reads them
"$GT" -lv 'gpu:kernel:vadd' ./app >"$T/lv" 2>&1
printf '    arg%s\n' '0: .u64' '1: .u64' '2: .u64' '3: .u32' >"$T/want"
grep '^    arg' "$T/lv" | cmp -s - "$T/want" && grep -qx '    threadIdx.x' "$T/lv" ||
	bad "-lv gpu:kernel:vadd: $(cat "$T/lv")"

out=$("$GT" --dry-run -v -c ./app -e 'gpu:kernel:sass* { @x = count(); }' 2>&1)
[ $? -eq 0 ] && echo "$out" | grep -q 'gpu:kernel:sass\*: kernel sass_kernel is skipped: no PTX to instrument (SASS only: sm_90)' ||
	bad "SASS only kernel: $out"

out=$("$GT" --dry-run -c ./app -e 'gpu:kernel:nomatch* { @x = 1; } gpu:kernel:vadd { @y = 1; }' 2>&1)
[ $? -eq 0 ] && echo "$out" | grep -q "warning: gpu:kernel:nomatch\* matches no kernel of './app'" &&
	! echo "$out" | grep -q 'gpu:kernel:vadd' || bad "no match: $out"
out=$("$GT" --dry-run -d ptx -c ./app -e 'gpu:kernel:nomatch* { @x = 1; }' 2>&1)
[ $? -eq 1 ] && [ "$(echo "$out" | grep -c 'nomatch')" -eq 1 ] || bad "no match under -d ptx: $out"
[ $fail -eq 0 ] && echo "device checks: ok"
exit $fail
