#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run every test this machine can run and print one line per case,
# "PASS name", "FAIL name: why" or "SKIP name: why", then a last line
# "N passed, N failed, N skipped".  Exit 1 if any case failed.
#
#   sh tests/run.sh [unit] [diff] [errors] [accept] [fuzz]   (default: all)
#
# Environment:
#   GPUTRACE_BIN  gputrace binary to test (default build-asan/gputrace,
#                 else build/gputrace)
#   BPFTRACE      reference bpftrace for the differential suite (bpftrace)
#   ONLY          shell pattern; run only cases whose name matches it,
#                 e.g. ONLY='diff/0*' or ONLY='*hist*'
#   TIMEOUT       seconds allowed to one program run (20)
#   FUZZ_SMOKE    seconds of fuzzing per harness in the fuzz part (5)
#
# Parts (arguments; all by default): unit diff errors accept fuzz gpu
# (gpu only lists tests/gpu/*.sh as skipped: make gpu-check runs them).
#
# docs/testing.md says what each part checks and how to add a case.

cd "$(dirname "$0")/.." || exit 1
TOP=$(pwd)
TIMEOUT=${TIMEOUT:-20}
BPFTRACE=${BPFTRACE:-bpftrace}
ONLY=${ONLY:-*}
FUZZ_SMOKE=${FUZZ_SMOKE:-5}

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

npass=0
nfail=0
nskip=0

TMP=$(mktemp -d "${TMPDIR:-/tmp}/gt-tests.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# reason_of "NAME: WHY": WHY, or nothing when there is no ": ".
reason_of() {
	case "$1" in
	*": "*) echo "${1#*: }" ;;
	esac
}

pass() {
	npass=$((npass + 1))
	echo "PASS $1"
}

fail() {
	nfail=$((nfail + 1))
	echo "FAIL $1${2:+: $2}"
}

skip() {
	nskip=$((nskip + 1))
	echo "SKIP $1${2:+: $2}"
}

# wanted NAME: is this case selected by $ONLY?
wanted() {
	# shellcheck disable=SC2254
	case "$1" in
	$ONLY) return 0 ;;
	esac
	return 1
}

# indent FILE [N]: show N (30) lines of FILE, indented, so that they
# cannot be mistaken for result lines (bpftrace's harmless RLIMIT_MEMLOCK
# complaint left out): from its start, or, when its first "FAIL" line
# comes later, from 20 lines before that one (a test prints what passed
# before what failed, and what it saw just before it fails) to N after.
indent() {
	grep -v RLIMIT_MEMLOCK "$1" >"$TMP/indent"
	at=$(grep -n -m 1 '^FAIL' "$TMP/indent" | cut -d: -f1)
	from=1
	n=${2:-30}
	if [ -n "$at" ]; then
		[ "$at" -gt 20 ] && from=$((at - 20))
		n=$((at - from + n))
	fi
	sed -n "$from,\$p" "$TMP/indent" | head -n "$n" | sed 's/^/    | /'
}

# has_sanitizer_report FILE
has_sanitizer_report() {
	grep -qE 'ERROR: (Address|Leak|UndefinedBehavior|Thread|Memory)Sanitizer|LeakSanitizer|runtime error:' "$1"
}

# why_status RC: words for an abnormal exit status, empty when normal.
why_status() {
	if [ "$1" -eq 124 ]; then
		echo "timed out after ${TIMEOUT}s"
	elif [ "$1" -gt 128 ]; then
		echo "killed by signal $(($1 - 128))"
	fi
}

# Which gputrace?  The ASan build catches more; fall back to the plain one.
if [ -n "$GPUTRACE_BIN" ]; then
	GT=$GPUTRACE_BIN
elif [ -x build-asan/gputrace ]; then
	GT=build-asan/gputrace
else
	GT=build/gputrace
fi
case "$GT" in
/*) ;;
*/*) GT=$TOP/$GT ;;
*) GT=$(command -v "$GT" || echo "$GT") ;;
esac

# have_gt NAME: fail NAME and return 1 when there is no binary to test.
have_gt() {
	[ -x "$GT" ] && return 0
	fail "$1" "no gputrace binary ($GT); run make"
	return 1
}

# ---------------------------------------------------------------- unit --

run_units() {
	dir=build-asan/tests
	ls "$dir"/* >/dev/null 2>&1 || dir=build/tests
	for t in "$dir"/*; do
		if [ ! -f "$t" ] || [ ! -x "$t" ]; then
			continue
		fi
		name=unit/$(basename "$t")
		wanted "$name" || continue
		timeout -k 5 120 "$t" </dev/null >"$TMP/out" 2>"$TMP/err"
		rc=$?
		nlines=0
		nfails=0
		while IFS= read -r line; do
			case "$line" in
			"PASS "*)
				pass "$name/${line#PASS }" ;;
			"FAIL "*)
				nfails=$((nfails + 1))
				line=${line#FAIL }
				fail "$name/${line%%: *}" "$(reason_of "$line")" ;;
			"SKIP "*)
				line=${line#SKIP }
				skip "$name/${line%%: *}" "$(reason_of "$line")" ;;
			*)
				continue ;;
			esac
			nlines=$((nlines + 1))
		done <"$TMP/out"
		why=$(why_status "$rc")
		if has_sanitizer_report "$TMP/err"; then
			fail "$name" "sanitizer report"
			indent "$TMP/err" 40
		elif [ -n "$why" ]; then
			fail "$name" "$why"
			indent "$TMP/err"
		elif [ "$rc" -ne 0 ] && [ "$nfails" -eq 0 ]; then
			fail "$name" "exit status $rc with no FAIL line"
			indent "$TMP/err"
		elif [ "$nlines" -eq 0 ]; then
			fail "$name" "printed no PASS/FAIL/SKIP line"
		fi
	done
}

# ---------------------------------------------------------------- diff --

# args_of FILE: the words of a "// args: ..." first line, if any.
args_of() {
	sed -n '1s|^// args:||p' "$1"
}

# flags_of FILE: options from a "// flags: ..." line among the first three
# (e.g. -f json), given to both tracers before the file.
flags_of() {
	sed -n '1,3s|^// flags:||p' "$1"
}

# cmd_of FILE: the command of a "// cmd: ..." line among the first five,
# given to both tracers as -c (one argument, spaces kept).
cmd_of() {
	sed -n '1,5s|^// cmd: *||p' "$1"
}

# needs_of FILE: what the case needs from the kernel, from a
# "// needs: ..." line among the first five (tracefs, kprobes, hardware,
# usdt).
needs_of() {
	sed -n '1,5s|^// needs:||p' "$1"
}

# lacking NEEDS: why this machine cannot run a case that needs NEEDS, or
# nothing.  tracefs is mounted at /sys/kernel/tracing when the kernel has
# it but nobody mounted it (and left mounted: other runs may be using it).
lacking() {
	for n in $1; do
		case $n in
		tracefs)
			[ -d /sys/kernel/tracing/events ] ||
				[ -d /sys/kernel/debug/tracing/events ] ||
				mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
				{ echo "no tracefs (not in the kernel, or cannot be mounted)"; return; }
			;;
		kprobes)
			[ -e /sys/bus/event_source/devices/kprobe/type ] ||
				{ echo "kernel without kprobes (CONFIG_KPROBES off: no kprobe PMU)"; return; }
			;;
		hardware)
			"$BPFTRACE" -e 'hardware:cycles:1000000 { exit(); } interval:ms:200 { exit(); }' \
				</dev/null 2>&1 | grep -q 'perf_event_open failed' &&
				{ echo "no hardware performance counters (a VM?)"; return; }
			;;
		usdt)
			[ -x build/progs/usdt_target ] ||
				{ echo "build/progs/usdt_target not built (needs <sys/sdt.h>: systemtap-sdt-dev)"; return; }
			;;
		esac
	done
}

# strip_attach FILE: drop the tracers' "Attaching N probes..." banner
# (text or JSON).
strip_attach() {
	sed -E -e '/^Attach(ing|ed) [0-9]+ probes?(\.\.\.)?$/d' \
		-e '/^\{"type": "attached_probes"/d' "$1"
}

# diff_recorded FILE NAME FLAGS ARGS [-c CMD]: where bpftrace 0.17 is
# known to be wrong or nondeterministic on FILE, its "// bpftrace:" line
# says why and gputrace's output is compared with FILE's .expect, which
# holds bpftrace's right answer (recorded from a bpftrace without the
# bug, or worked out by hand as the line explains).  Exit status 0.
diff_recorded() {
	f=$1 name=$2 flags=$3 args=$4
	shift 4
	if ! sed -n '1,5p' "$f" | grep -q '^// bpftrace:'; then
		fail "$name" "${f%.bt}.expect without a '// bpftrace: why' line"
		return
	fi
	# shellcheck disable=SC2086
	timeout -k 5 "$TIMEOUT" "$GT" $flags "$@" "$f" $args </dev/null \
		>"$TMP/g.out" 2>"$TMP/g.err"
	grc=$?
	strip_attach "$TMP/g.out" >"$TMP/gputrace"
	gwhy=$(why_status "$grc")
	if has_sanitizer_report "$TMP/g.err"; then
		fail "$name" "sanitizer report"
		indent "$TMP/g.err" 40
	elif [ -n "$gwhy" ]; then
		fail "$name" "gputrace $gwhy"
		indent "$TMP/g.err" 10
	elif ! cmp -s "${f%.bt}.expect" "$TMP/gputrace"; then
		fail "$name" "stdout differs from the recorded ${f%.bt}.expect"
		diff -u --label expected --label gputrace \
			"${f%.bt}.expect" "$TMP/gputrace" >"$TMP/diff"
		indent "$TMP/diff" 30
	elif [ "$grc" -ne 0 ]; then
		fail "$name" "exit status $grc, want 0"
		indent "$TMP/g.err" 10
	else
		pass "$name"
	fi
}

run_diff() {
	why=
	if [ "$(id -u)" -ne 0 ]; then
		why="needs root"
	elif ! timeout -k 5 "$TIMEOUT" "$BPFTRACE" -e 'BEGIN { exit(); }' \
			</dev/null >/dev/null 2>&1; then
		why="$BPFTRACE is not runnable here"
	fi
	for f in tests/diff/*.bt; do
		[ -f "$f" ] || continue
		name=diff/$(basename "$f" .bt)
		wanted "$name" || continue
		if [ -n "$why" ]; then
			skip "$name" "$why"
			continue
		fi
		have_gt "$name" || continue
		lack=$(lacking "$(needs_of "$f")")
		if [ -n "$lack" ]; then
			skip "$name" "$lack"
			continue
		fi
		args=$(args_of "$f")
		flags=$(flags_of "$f")
		cmd=$(cmd_of "$f")
		set -- ${cmd:+-c} ${cmd:+"$cmd"}
		if [ -f "${f%.bt}.expect" ]; then
			diff_recorded "$f" "$name" "$flags" "$args" "$@"
			continue
		fi
		# Both tracers at once: each mostly waits on the kernel.
		# shellcheck disable=SC2086
		(
			timeout -k 5 "$TIMEOUT" "$BPFTRACE" $flags "$@" "$f" $args </dev/null \
				>"$TMP/b.out" 2>"$TMP/b.err"
			echo $? >"$TMP/b.rc"
		) &
		# shellcheck disable=SC2086
		(
			timeout -k 5 "$TIMEOUT" "$GT" $flags "$@" "$f" $args </dev/null \
				>"$TMP/g.out" 2>"$TMP/g.err"
			echo $? >"$TMP/g.rc"
		) &
		wait
		brc=$(cat "$TMP/b.rc")
		grc=$(cat "$TMP/g.rc")
		strip_attach "$TMP/b.out" >"$TMP/bpftrace"
		strip_attach "$TMP/g.out" >"$TMP/gputrace"
		bwhy=$(why_status "$brc")
		gwhy=$(why_status "$grc")
		if [ -n "$bwhy" ]; then
			fail "$name" "bpftrace $bwhy"
			indent "$TMP/b.err" 10
		elif has_sanitizer_report "$TMP/g.err"; then
			fail "$name" "sanitizer report"
			indent "$TMP/g.err" 40
		elif [ -n "$gwhy" ]; then
			fail "$name" "gputrace $gwhy"
			indent "$TMP/g.err" 10
		elif ! cmp -s "$TMP/bpftrace" "$TMP/gputrace"; then
			fail "$name" "stdout differs from bpftrace's"
			diff -u --label bpftrace --label gputrace \
				"$TMP/bpftrace" "$TMP/gputrace" >"$TMP/diff"
			indent "$TMP/diff" 30
			indent "$TMP/g.err" 10
		elif [ "$brc" -ne "$grc" ]; then
			fail "$name" "exit status $grc, bpftrace's $brc"
			indent "$TMP/g.err" 10
		else
			pass "$name"
		fi
	done
}

# -------------------------------------------------------------- errors --

# caret_ok FILE LINE COL STDERR: does STDERR show source line LINE of
# FILE followed by a caret line with "^" under column COL?  A gutter
# before the source text ("  3 | ") is allowed if the caret line has one
# of the same width.
caret_ok() {
	# a NUL byte shows as a space (41_nul_byte)
	SRC=$(sed -n "$2p" "$1" | tr '\0' ' ') COL=$3 awk '
	BEGIN { src = ENVIRON["SRC"]; col = ENVIRON["COL"] + 0 }
	seen {
		at = p + col
		if (substr($0, at, 1) == "^" &&
		    substr($0, p + 1, col - 1) ~ /^[ \t]*$/) {
			ok = 1
			exit
		}
		seen = 0
	}
	{
		p = length($0) - length(src)
		if (p >= 0 && substr($0, p + 1) == src)
			seen = 1
	}
	END { exit !ok }' "$4"
}

# message_of PREFIX FILE: the text after PREFIX on FILE's lines holding it
# (so that the file name cannot match the expected message).
message_of() {
	WANT=$1 awk '{
		i = index($0, ENVIRON["WANT"])
		if (i)
			print substr($0, i + length(ENVIRON["WANT"]))
	}' "$2"
}

# matches_any "A|B|...": does stdin hold A or B or ... (any case)?
matches_any() {
	cat >"$TMP/msg"
	set -f
	old_ifs=$IFS
	IFS='|'
	# shellcheck disable=SC2086
	set -- $1
	IFS=$old_ifs
	set +f
	for alt in "$@"; do
		grep -qiF -- "$alt" "$TMP/msg" && return 0
	done
	return 1
}

run_errors() {
	for f in tests/errors/*.bt; do
		[ -f "$f" ] || continue
		name=errors/$(basename "$f" .bt)
		wanted "$name" || continue
		have_gt "$name" || continue
		hdr=$(sed -n '1p' "$f")
		case "$hdr" in
		"// expect: "*:*) ;;
		*)
			fail "$name" "first line is not '// expect: LINE:COL [MESSAGE]'"
			continue ;;
		esac
		spec=${hdr#// expect: }
		loc=${spec%% *}
		msg=${spec#"$loc"}
		msg=${msg# }
		line=${loc%%:*}
		col=${loc#*:}
		timeout -k 5 "$TIMEOUT" "$GT" "$f" </dev/null \
			>"$TMP/out" 2>"$TMP/err"
		rc=$?
		why=$(why_status "$rc")
		want="$f:$line:$col: error:"
		if has_sanitizer_report "$TMP/err"; then
			fail "$name" "sanitizer report"
			indent "$TMP/err" 40
		elif [ -n "$why" ]; then
			fail "$name" "$why"
			indent "$TMP/err" 10
		elif [ "$rc" -ne 1 ]; then
			fail "$name" "exit status $rc, want 1"
			indent "$TMP/err" 10
		elif ! grep -qF -- "$want" "$TMP/err"; then
			fail "$name" "no '$want' on stderr"
			indent "$TMP/err" 10
		elif [ -n "$msg" ] && ! message_of "$want" "$TMP/err" |
				matches_any "$msg"; then
			fail "$name" "error message lacks '$msg'"
			indent "$TMP/err" 10
		elif ! caret_ok "$f" "$line" "$col" "$TMP/err"; then
			fail "$name" "no source line with a caret under column $col"
			indent "$TMP/err" 10
		elif grep -qE 'error: *$' "$TMP/err"; then
			fail "$name" "an error line with no message"
			indent "$TMP/err" 10
		else
			pass "$name"
		fi
	done
}

# -------------------------------------------------------------- accept --

run_accept() {
	export GPUTRACE="$GT"
	for s in tests/accept/*.sh; do
		[ -f "$s" ] || continue
		name=accept/$(basename "$s" .sh)
		wanted "$name" || continue
		have_gt "$name" || continue
		timeout -k 5 120 sh "$s" </dev/null >"$TMP/out" 2>&1
		rc=$?
		case $rc in
		0)	pass "$name" ;;
		77)	skip "$name" "$(tail -n 1 "$TMP/out")" ;;
		*)
			why=$(why_status "$rc")
			fail "$name" "${why:-exit status $rc}"
			indent "$TMP/out" ;;
		esac
	done
}

# ---------------------------------------------------------------- fuzz --

# Each libFuzzer harness (tests/fuzz/README.md, built by `make fuzz-build`):
# its seeds replayed, each past crasher replayed alone, then a short run.
run_fuzz() {
	for src in tests/fuzz/fuzz_*.c; do
		[ -f "$src" ] || continue
		h=$(basename "$src" .c)
		h=${h#fuzz_}
		bin=build-fuzz/fuzz_$h
		if [ ! -x "$bin" ]; then
			wanted "fuzz/$h" && fail "fuzz/$h" "no $bin; run make fuzz-build"
			continue
		fi
		name=fuzz/$h/seeds
		if wanted "$name"; then
			timeout -k 5 300 "$bin" -runs=0 -close_fd_mask=2 \
				"tests/fuzz/$h/seeds" >"$TMP/out" 2>&1
			fuzz_result "$name" $?
		fi
		for c in tests/fuzz/"$h"/crashers/*; do
			[ -f "$c" ] || continue
			name=fuzz/$h/crashers/$(basename "$c")
			wanted "$name" || continue
			timeout -k 5 120 "$bin" -close_fd_mask=2 "$c" \
				>"$TMP/out" 2>&1
			fuzz_result "$name" $?
		done
		name=fuzz/$h/smoke
		wanted "$name" || continue
		rm -rf "$TMP/corpus" "$TMP/art"
		mkdir -p "$TMP/corpus" "$TMP/art"
		timeout -k 5 $((FUZZ_SMOKE + 60)) "$bin" -max_total_time="$FUZZ_SMOKE" \
			-close_fd_mask=2 -dict="tests/fuzz/$h/dict" \
			-artifact_prefix="$TMP/art/" "$TMP/corpus" \
			"tests/fuzz/$h/seeds" >"$TMP/out" 2>&1
		fuzz_result "$name" $?
	done
}

# fuzz_result NAME RC: pass on 0 without a sanitizer report, else fail
# showing the end of libFuzzer's output (its crash report).
fuzz_result() {
	why=$(why_status "$2")
	if has_sanitizer_report "$TMP/out"; then
		fail "$1" "sanitizer report"
		tail -n 40 "$TMP/out" | sed 's/^/    | /'
	elif [ "$2" -ne 0 ]; then
		fail "$1" "${why:-exit status $2}"
		tail -n 40 "$TMP/out" | sed 's/^/    | /'
	else
		pass "$1"
	fi
}

# gpu: make check runs none of tests/gpu/*.sh (make gpu-check does, on a
# GPU machine), and says so: one SKIP line each, counted as skipped.
run_gpu() {
	if nvidia-smi -L >/dev/null 2>&1; then
		why="not part of make check: make gpu-check runs it"
	else
		why="no GPU here (nvidia-smi -L failed): make gpu-check runs it on a GPU machine"
	fi
	for s in tests/gpu/*.sh; do
		name=gpu/$(basename "$s" .sh)
		[ "$name" = gpu/run ] && continue
		wanted "$name" && skip "$name" "$why"
	done
}

parts=${*:-unit diff errors accept fuzz gpu}
for part in $parts; do
	case $part in
	unit)	run_units ;;
	diff)	run_diff ;;
	errors)	run_errors ;;
	accept)	run_accept ;;
	fuzz)	run_fuzz ;;
	gpu)	run_gpu ;;
	*)	echo "run.sh: unknown part '$part'" >&2; exit 2 ;;
	esac
done

echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
