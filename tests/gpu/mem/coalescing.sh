# SPDX-License-Identifier: MIT
# Sourced by tests/gpu/mem_real.sh and mem_triton.sh (from the repository
# root, after T is made): tools/coalescing.gt on a program.  Gives:
#   ok / bad / expect_eq	PASS/FAIL lines; nfail counts failures
#   coalescing NAME CMD	gputrace -q -v -c CMD tools/coalescing.gt: the
#			output in $T/NAME.out, .err, the status in .rc, the
#			rows in $T/NAME.rows: KERNEL<TAB>INSN<TAB>LINE<TAB>
#			REQUESTS<TAB>AVG_SECTORS<TAB>EFFICIENCY_PCT
#   same_output NAME PATTERN
#			status 0 and the lines matching PATTERN (grep) as in
#			$T/native.out
#   rows_per_kernel NAME FILE
#			a row for each kernel named in FILE (one a line), or
#			-v's line saying why its memory instructions are left
#			out (not all kernels)
#   plausible NAME	every row: requests > 0, 1 <= average sectors <= 64,
#			efficiency 1..3200 (%)
GT=${GPUTRACE:-build/gputrace}
. tests/progs/gpu_expect.sh	# ok, bad, expect_eq, nfail

coalescing() {	# NAME CMD
	timeout 240 "$GT" -q -v -c "$2" tools/coalescing.gt >"$T/$1.out" 2>"$T/$1.err"
	echo $? >"$T/$1.rc"
	sed -n 's/^@\(requests\|avg_sectors\|efficiency_pct\)\[\(.*\), \([0-9]*\), \([0-9]*\)\]: \([0-9]*\)$/\1\t\2\t\3\t\4\t\5/p' \
		"$T/$1.out" |
		awk -F'\t' '{ k = $2 FS $3 FS $4; v[$1, k] = $5; keys[k] = 1 }
			END { for (k in keys) print k FS v["requests", k] FS v["avg_sectors", k] FS v["efficiency_pct", k] }' |
		sort >"$T/$1.rows"
}

same_output() {	# NAME PATTERN
	expect_eq "$1: gputrace status" "$(cat "$T/$1.rc")" 0
	if [ -n "$(grep "$2" "$T/native.out")" ] &&
	   [ "$(grep "$2" "$T/$1.out")" = "$(grep "$2" "$T/native.out")" ]; then
		ok "$1: results identical to the native run ($(grep "$2" "$T/native.out" | tr '\n' ' '))"
	else
		bad "$1: results" "native: $(grep "$2" "$T/native.out" | tr '\n' ' '); traced: $(grep "$2" "$T/$1.out" | tr '\n' ' ')"
		sed 's/^/    | /' "$T/$1.err" | tail -20
	fi
}

rows_per_kernel() {	# NAME FILE
	missing=0 excused=0
	while IFS= read -r k; do
		n=$(awk -F'\t' -v k="$k" '$1 == k' "$T/$1.rows" | wc -l)
		# -v names the kernel by its demangled name ("void ...(...)")
		why=$(grep -F "$(echo "$k" | sed 's/[<(].*//')" "$T/$1.err" |
			grep 'left out' | head -1)
		if [ "$n" -gt 0 ]; then
			echo "    $n instructions: $(echo "$k" | cut -c1-100)"
		elif [ -n "$why" ]; then
			# a kernel the splice cannot take is told, never broken
			excused=$((excused + 1))
			echo "    no row, as -v says: $why"
		else
			missing=$((missing + 1))
			echo "    no row: $k"
			grep -F "$(echo "$k" | sed 's/[<(].*//')" "$T/$1.err" |
				grep -i 'skipped\|SASS\|cannot' | head -3 | sed 's/^/      | /'
		fi
	done <"$2"
	all=$(wc -l <"$2")
	[ "$missing" = 0 ] && [ "$excused" -lt "$all" ] &&
		ok "$1: coalescing.gt rows for $((all - excused)) of $all kernels, $excused left out with a reason ($(wc -l <"$T/$1.rows") instructions)" ||
		bad "$1: coalescing.gt rows" "$missing of $all kernels have none and no reason, $excused left out with one"
}

plausible() {	# NAME
	awk -F'\t' '!($4 > 0 && $5 >= 1 && $5 <= 64 && $6 >= 1 && $6 <= 3200)' \
		"$T/$1.rows" >"$T/$1.odd"
	if [ -s "$T/$1.rows" ] && [ ! -s "$T/$1.odd" ]; then
		ok "$1: every row plausible (sectors $(cut -f5 "$T/$1.rows" | sort -n | sed -n '1p;$p' | tr '\n' ' '); efficiency $(cut -f6 "$T/$1.rows" | sort -n | sed -n '1p;$p' | tr '\n' ' '))"
	else
		bad "$1: implausible rows (kernel, insn, line, requests, sectors, %)" \
			"$(head -5 "$T/$1.odd" | tr '\t\n' ' |')"
	fi
}
