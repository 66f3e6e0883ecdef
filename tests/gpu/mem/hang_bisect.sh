#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Issue 34's hang, taken apart on the GPU (not part of `make gpu-check`:
# run it by hand, `sh tests/gpu/mem/hang_bisect.sh`, from the repository
# root).  tests/gpu/mem.cu under gpu:mem programs that differ from the
# one that hangs (A, the big global clause, with B, the shared clause)
# by one thing each, every run under a time limit: which ones finish
# with the program's native results and which ones hang tells the cause
# apart (the map B updates, the key, the clause order, the figures the
# global clause computes, both clauses in one kernel or not).
#
#   HANG_S=20	seconds before a run counts as hung
#   ARCHS="90"	PTX targets to build mem.cu for ("75 90": both)
#   ONLY='ab* b_n'	variants to run (shell patterns on the names below)
#
# One line per run: NAME  ok | HANG | FAIL (why); a hung run also shows
# the last lines gputrace -v printed.  Exit status 1 if any run hung or
# failed, 77 without a GPU or nvcc.
cd "$(dirname "$0")/../../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
HANG_S=${HANG_S:-20}
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-memhang.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# A (the global clause: BODY on every kernel) and B (the shared clause)
# hang together; each alone does not
BODY='{ @s[kernel, store, sectors] = count(); @l[kernel, store, lanes] = count(); @n[kernel] = count(); @lo[kernel, store] = min(addr); @hi[kernel, store] = max(addr); @z[kernel, store] = sum(size * lanes); @i[kernel, insn] = count(); }'
A="gpu:mem:* $BODY"
B='gpu:mem:*:shared { @c[kernel, arg1, store, conflicts] = count(); }'

# NAME, then PROGRAM, per variant
variants() {
	printf '%s\n%s\n' a "$A"
	printf '%s\n%s\n' b "$B"
	printf '%s\n%s\n' ab "$A $B"
	# B first: its map is device map 0, A's 1..7
	printf '%s\n%s\n' ba "$B $A"
	# B's key without the kernel argument (88 -> 80 bytes)
	printf '%s\n%s\n' ab_noarg "$A gpu:mem:*:shared { @c[kernel, store, conflicts] = count(); }"
	# A on every kernel but smem: A + B's maps, no kernel with both
	printf '%s\n%s\n' ab_nosmem "gpu:mem:[ugt]*,gpu:mem:stride* $BODY $B"
	# A on smem alone: nothing counted before smem runs
	printf '%s\n%s\n' ab_smem "gpu:mem:smem $BODY $B"
	# B with one of A's updates at a time
	printf '%s\n%s\n' b_n "$B gpu:mem:* { @n[kernel] = count(); }"
	printf '%s\n%s\n' b_i "$B gpu:mem:* { @i[kernel, insn] = count(); }"
	printf '%s\n%s\n' b_s "$B gpu:mem:* { @s[kernel, store, sectors] = count(); }"
	printf '%s\n%s\n' b_lo "$B gpu:mem:* { @lo[kernel, store] = min(addr); }"
	printf '%s\n%s\n' b_z "$B gpu:mem:* { @z[kernel, store] = sum(size * lanes); }"
	# the runtime paths B's update takes: no key (inline), one word
	printf '%s\n%s\n' a_b0 "$A gpu:mem:*:shared { @c = count(); }"
	printf '%s\n%s\n' a_b8 "$A gpu:mem:*:shared { @c[conflicts] = count(); }"
	# A's updates on maps without key, then two keyed ones
	printf '%s\n%s\n' a0_b "gpu:mem:* { @a = count(); @b = count(); @c2 = count(); @d = count(); } $B"
	printf '%s\n%s\n' a2_b "gpu:mem:* { @n[kernel] = count(); @i[kernel, insn] = count(); } $B"
	printf '%s\n%s\n' a3_b "gpu:mem:* { @n[kernel] = count(); @i[kernel, insn] = count(); @s[kernel, store, sectors] = count(); } $B"
	# one clause, no shared probe, but seven updates on smem twice
	printf '%s\n%s\n' aa "$A gpu:mem:smem $BODY"
}

nbad=0
for cc in ${ARCHS:-90}; do
	"$NVCC" -O2 -lineinfo -gencode "arch=compute_$cc,code=compute_$cc" \
		-o "$T/mem" tests/gpu/mem.cu || { echo "FAIL: nvcc compute_$cc"; exit 1; }
	"$T/mem" >"$T/native.out" || { echo "FAIL: native run"; exit 1; }
	grep '^checksum ' "$T/native.out" >"$T/native.sum"
	variants >"$T/list"
	while IFS= read -r name && IFS= read -r prog; do
		want=0
		set -f
		for pat in ${ONLY:-*}; do
			# shellcheck disable=SC2254
			case $name in $pat) want=1 ;; esac
		done
		set +f
		[ $want -eq 1 ] || continue
		tag="compute_$cc $name"
		timeout -k 5 "$HANG_S" "$GT" -v -q -c "$T/mem" -e "$prog" \
			>"$T/out" 2>"$T/err" </dev/null
		rc=$?
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			echo "$tag: HANG (killed after $HANG_S s)"
			tail -n 2 "$T/err" | sed 's/^/    /'
			nbad=$((nbad + 1))
		elif [ $rc -ne 0 ]; then
			echo "$tag: FAIL (exit status $rc)"
			tail -n 3 "$T/err" | sed 's/^/    /'
			nbad=$((nbad + 1))
		elif ! grep '^checksum ' "$T/out" | cmp -s "$T/native.sum" -; then
			echo "$tag: FAIL (results differ from the native run)"
			nbad=$((nbad + 1))
		else
			echo "$tag: ok"
		fi
	done <"$T/list"
done
[ $nbad -eq 0 ]
