#!/bin/sh
# SPDX-License-Identifier: MIT
# Children made by fork() without exec (docs/agent.md, "Several
# processes of one command"), on the fake driver: two children of a
# parent that makes no driver call each load and launch vadd 5 times;
# the agent follows each (its own HELLO, region, launch numbers), so the
# device count is the sum, cuda:launch's @[pid] (run in each agent) and
# cuda:complete's (the fake CUPTI, loaded afresh in each child) have each
# child's 5 under its pid, and nothing else.  The parent keeps
# its own session when it launches after the children or before forking
# them (then CUPTI is the parent's: its children are not timed);
# children leaving with _exit() still give their final maps and records,
# and so do Python multiprocessing's ('fork', os._exit); a child that
# makes no driver call does not register; without a tracer each child
# prints its own totals.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. tests/progs/agent_lib.sh
. tests/progs/cupti_lib.sh

P='gpu:kernel:vadd { @ = count(); }
cuda:launch:vadd { @h[pid] = count(); }
cuda:complete:vadd { @c[pid] = count(); }'

forked() {	# forked N ENV...: gputrace -v -c prog, HOOKPROG_FORK=N and ENV
	n=$1
	shift
	env HOOKPROG_FORK=$n LD_LIBRARY_PATH=$T GPUTRACE_AGENT_LIB=$AGENT "$@" \
		timeout -k 2 60 "$GT" -v \
		-c "$T/prog $T/vadd.fatbin $VADD" -e "$P" >"$T/gt" 2>"$T/gte" ||
		{ cat "$T/gt" "$T/gte"; fail "gputrace -c, fork with $*"; }
	kids=$(sed -n 's/^child //p' "$T/gt")
	parent=$(sed -n 's/^parent //p' "$T/gt")
	[ "$(echo $kids | wc -w)" = "$n" ] && [ -n "$parent" ] ||
		{ cat "$T/gt"; fail "$*: the program did not report its processes"; }
}

# expect WHAT TOTAL PIDS [CPIDS]: @ is TOTAL, @h 5 for each of PIDS, @c
# 5 for each of CPIDS (default PIDS), nothing else
expect() {
	what=$1
	want="@: $2"
	for p in $3; do
		want="$want
@h[$p]: 5"
	done
	for p in ${4-$3}; do
		want="$want
@c[$p]: 5"
	done
	set -- $3
	got=$(grep '^@' "$T/gt" | sort)
	[ "$got" = "$(echo "$want" | sort)" ] ||
		{ cat "$T/gt" "$T/gte"; fail "$what: maps are
$got
want
$want"; }
	for p in "$@"; do
		grep -qx "gputrace: agent ready in process $p" "$T/gte" ||
			{ cat "$T/gte"; fail "$what: no agent in $p"; }
	done
	! grep -q 'without a final snapshot\|did not send its maps' "$T/gte" ||
		{ cat "$T/gte"; fail "$what: maps lost"; }
}

# launches numbered per process: "launch 1".."launch 5" once in each
numbered() {	# numbered WHAT PROCESSES
	for i in 1 2 3 4 5; do
		[ "$(grep -c "^cuLaunch.* $VADD: instrumented, launch $i " "$T/gt")" = "$2" ] ||
			{ cat "$T/gt"; fail "$1: launch $i is not numbered once per process"; }
	done
}

# only the children use the driver; one more child never does
forked 2 HOOKPROG_FORK_IDLE=1
expect "children only" 80 "$kids"
numbered "children only" 2
idle=$(sed -n 's/^idle //p' "$T/gt")
[ -n "$idle" ] || fail "no idle child"
! grep -q "process $idle\$" "$T/gte" ||
	{ cat "$T/gte"; fail "a child without a driver call registered"; }

# the parent launches after its children, or before forking them
forked 2 HOOKPROG_FORK_PARENT=1
expect "parent after the children" 120 "$kids $parent"
forked 2 HOOKPROG_FORK_LATE=1
expect "parent before forking" 120 "$kids $parent" "$parent"
numbered "parent before forking" 3
# eight at once, forked while the parent's agent thread drains its
# contexts (its locks are taken every 20 ms)
forked 8 HOOKPROG_FORK_LATE=1
expect "eight children of a CUDA parent" 360 "$kids $parent" "$parent"
numbered "eight children of a CUDA parent" 9

# children leaving with _exit(): the agent's _exit takes the last snapshot
forked 2 HOOKPROG_FORK_EXIT=1
expect "children leaving with _exit" 80 "$kids"

# Python's multiprocessing, 'fork': the children run the same program
# (built as a library) through ctypes and leave with os._exit
if command -v python3 >/dev/null 2>&1; then
	$CC $W -shared -fPIC -Dmain=hookprog_main tests/accept/agent_hookprog.c \
		"$T/libcuda.so.1" -ldl -Wl,-rpath,"$T" -o "$T/libhookprog.so" ||
		fail "building agent_hookprog as a library"
	cat >"$T/mp.py" <<'PY'
import ctypes, multiprocessing as mp, os, sys
def say(*words):
    # one write a line: print() writes its pieces apart when unbuffered
    # (PYTHONUNBUFFERED), and the other child's lines come in between
    os.write(1, (" ".join(str(w) for w in words) + "\n").encode())
def child(lib, fatbin, kernel):
    argv = (ctypes.c_char_p * 4)(b"prog", fatbin.encode(), kernel.encode(), None)
    rc = ctypes.CDLL(lib).hookprog_main(3, argv)
    ctypes.CDLL(None).fflush(None)
    say("child", os.getpid())
    sys.exit(rc)
if __name__ == "__main__":
    ps = [mp.get_context("fork").Process(target=child, args=sys.argv[1:4])
          for _ in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    say("parent", os.getpid())
    # a child killed by a signal has a negative exit code
    say("exitcodes", *[p.exitcode for p in ps])
    sys.exit(0 if all(p.exitcode == 0 for p in ps) else 1)
PY
	LD_LIBRARY_PATH=$T GPUTRACE_AGENT_LIB=$AGENT timeout -k 2 60 "$GT" -v \
		-c "python3 $T/mp.py $T/libhookprog.so $T/vadd.fatbin $VADD" \
		-e "$P" >"$T/gt" 2>"$T/gte" ||
		{ cat "$T/gt" "$T/gte"; fail "gputrace -c python3 multiprocessing"; }
	kids=$(sed -n 's/^child //p' "$T/gt")
	[ "$(echo $kids | wc -w)" = 2 ] && grep -q '^parent ' "$T/gt" &&
		grep -qx 'exitcodes 0 0' "$T/gt" ||
		{ cat "$T/gt" "$T/gte"; fail "python3 multiprocessing did not run"; }
	expect "python3 multiprocessing, fork" 80 "$kids"
fi

# no tracer: each child's agent prints its own totals
"$T/cfg" "$T/q.cfg" -g vadd || fail "agent_cfg"
HOOKPROG_FORK=2 LD_LIBRARY_PATH=$T GPUTRACE_AGENT_CONFIG=$T/q.cfg LD_PRELOAD=$AGENT \
	"$T/prog" "$T/vadd.fatbin" $VADD >"$T/out" 2>"$T/err" ||
	{ cat "$T/out" "$T/err"; fail "prog forking under the agent alone"; }
[ "$(grep -cxF 'gputrace-agent: map 0 [gpu 0]: 40' "$T/err")" = 2 ] ||
	{ cat "$T/err"; fail "standalone: not one total per child"; }
exit 0
