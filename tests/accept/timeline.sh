#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: --timeline without a GPU.  The fake libcupti
# (agent_fakecupti.c) turns every kernel the fake libcuda runs into a
# cuLaunchKernel driver record on the calling thread and a kernel record
# with the same correlation id.  The file the agent writes must be one
# JSON array (Chrome Trace Event format) with: a kernel slice per run
# (agent_hookprog: vadd 5 times plus 3 graph runs, uses_global once), a
# cuLaunchKernel slice naming each kernel, a flow from each launch to
# its run, the process, thread, GPU and stream named.  Then the same
# after the tracer is SIGKILLed mid-run (the agent closes the file), and
# the refusals: --timeline without -c/-p, a file that cannot be written.
. tests/progs/agent_lib.sh

CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
$CC $W -shared -fPIC -I"$CUDA_INC" -Wl,-soname,libcupti.so.13 \
	tests/accept/agent_fakecupti.c -o "$T/libcupti.so.13" -lpthread ||
	fail "building the fake libcupti"
command -v python3 >/dev/null || { echo "no python3 to read the JSON"; exit 77; }

# check FILE: the structure above, from the JSON alone
check() {
	python3 - "$1" <<'PY' || fail "timeline content ($1)"
import json, sys
ev = json.load(open(sys.argv[1]))
X = [e for e in ev if e.get("ph") == "X"]
kern = [e for e in X if e.get("cat") == "kernel"]
launch = [e for e in X if e.get("cat") == "cuda"]
names = sorted(e["name"] for e in kern)
want = ["uses_global"] + ["vadd"] * 8
assert names == want, names
assert all(e["dur"] == 1.0 and e["args"]["grid"] == [4, 1, 1] and
           e["args"]["block"] == [64, 1, 1] for e in kern), kern[0]
assert len(launch) == 9 and all(e["name"] == "cuLaunchKernel" for e in launch)
assert sorted(e["args"]["kernel"] for e in launch) == want
assert all(e["dur"] == 0.1 for e in launch)
corr = {e["args"]["correlation"] for e in launch}
assert corr == {e["args"]["correlation"] for e in kern} and len(corr) == 9
s = {e["id"]: e for e in ev if e.get("ph") == "s"}
f = {e["id"]: e for e in ev if e.get("ph") == "f"}
assert set(s) == corr and set(f) == corr, (s.keys(), f.keys())
for e in kern:
    fl = f[e["args"]["correlation"]]
    assert fl["pid"] == e["pid"] and fl["tid"] == e["tid"] and fl["ts"] == e["ts"]
for e in launch:
    fl = s[e["args"]["correlation"]]
    assert fl["pid"] == e["pid"] and fl["tid"] == e["tid"] and fl["ts"] == e["ts"]
M = [e for e in ev if e.get("ph") == "M"]
meta = {(e["name"], e["pid"], e.get("tid")): e["args"].get("name") for e in M}
gpu = kern[0]["pid"]
assert meta[("process_name", gpu, 0)] == "GPU 0", meta
assert meta[("thread_name", gpu, 7)] == "stream 7", meta
cpu = launch[0]["pid"]
assert meta[("process_name", cpu, 0)] == "prog", meta
assert meta[("thread_name", cpu, launch[0]["tid"])] == "prog", meta
assert gpu != cpu and kern[0]["ts"] > launch[0]["ts"]
PY
}

run() {	# TRACER-ARGS...: gputrace -c on the hook program
	LD_LIBRARY_PATH=$T HOOKPROG_GRAPH=1 GPUTRACE_AGENT_LIB=$AGENT \
		timeout -k 2 30 "$GT" -q "$@" \
		-c "$T/prog $T/vadd.fatbin $VADD $GLOBAL" >"$T/out" 2>"$T/err" </dev/null
}

# the timeline alone (no program), with a relative path
case $GT in /*) gt=$GT ;; *) gt=$(pwd)/$GT ;; esac
(cd "$T" && LD_LIBRARY_PATH=$T HOOKPROG_GRAPH=1 GPUTRACE_AGENT_LIB=$AGENT \
	timeout -k 2 30 "$gt" -q --timeline tl.json \
	-c "$T/prog $T/vadd.fatbin $VADD $GLOBAL" >"$T/out" 2>"$T/err" </dev/null) ||
	{ cat "$T/out" "$T/err"; fail "gputrace --timeline -c failed"; }
check "$T/tl.json"
tail -n 1 "$T/tl.json" | grep -qx ']' || fail "the file does not end the array"

# beside a program, which runs as usual
run --timeline "$T/tl2.json" -e 'cuda:complete { @n = count(); }' ||
	{ cat "$T/out" "$T/err"; fail "gputrace --timeline with cuda:complete"; }
grep -qx '@n: 9' "$T/out" || { cat "$T/out" "$T/err"; fail "cuda:complete beside the timeline"; }
check "$T/tl2.json"

# the tracer killed mid-run: the agent sees the socket close and ends
# the file (the program waits for HOOKPROG_WAIT_FILE before it exits)
LD_LIBRARY_PATH=$T HOOKPROG_GRAPH=1 HOOKPROG_WAIT_FILE=$T/go \
	GPUTRACE_AGENT_LIB=$AGENT "$GT" -q --timeline "$T/tl3.json" \
	-c "$T/prog $T/vadd.fatbin $VADD $GLOBAL" >"$T/out" 2>"$T/err" </dev/null &
gt=$!
i=0
until [ "$(grep -c '"cat":"kernel"' "$T/tl3.json" 2>/dev/null)" = 9 ] ||
	[ $i -ge 100 ]; do
	sleep 0.1; i=$((i + 1))
done
kill -9 $gt
wait $gt 2>/dev/null
i=0
until tail -n 1 "$T/tl3.json" 2>/dev/null | grep -qx ']' || [ $i -ge 50 ]; do
	sleep 0.1; i=$((i + 1))
done
touch "$T/go"
check "$T/tl3.json"

# refusals
"$GT" --timeline "$T/x.json" -e 'BEGIN { exit(); }' >"$T/out" 2>"$T/err" &&
	fail "--timeline without -c or -p was accepted"
grep -q -- '--timeline needs -c CMD or -p PID' "$T/err" ||
	{ cat "$T/err"; fail "the refusal's words"; }
run --timeline /nonexistent/dir/tl.json
grep -q 'cannot write /nonexistent/dir/tl.json' "$T/err" ||
	{ cat "$T/err"; fail "an unwritable file is not reported"; }
exit 0
