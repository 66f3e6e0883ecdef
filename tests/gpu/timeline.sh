#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU: --timeline on a program with two streams and a graph
# (timeline_prog.cu), beside cuda:complete in the same run.  Kernel
# slices per (kernel, stream) must equal cuda:complete's counts; every
# launch that ran has a slice naming its kernel and a flow to its run;
# the copies, the memset and the device memory counter are there; the
# program's results are right.  Then the same on a PyTorch training
# step when python3 has torch.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-tl.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -o "$T/prog" tests/gpu/timeline_prog.cu || { echo "FAIL build"; exit 1; }
nfail=0

"$GT" -q -f json --timeline "$T/tl.json" -c "$T/prog" \
	-e 'cuda:complete { @n[kernel, stream] = count(); }' >"$T/out" 2>"$T/err"
rc=$?
grep -qx ok "$T/out" ||
	{ echo "FAIL the program's results"; nfail=$((nfail + 1)); }
[ $rc = 0 ] || { echo "FAIL status $rc"; cat "$T/err"; nfail=$((nfail + 1)); }
python3 - "$T/tl.json" "$T/out" <<'PY' || nfail=$((nfail + 1))
import json, sys, collections
ev = json.load(open(sys.argv[1]))
maps = {}
for line in open(sys.argv[2]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("type") == "map":
        maps.update(j["data"])
want = collections.Counter()
for k, v in maps["@n"].items():
    kern, stream = k.rsplit(",", 1)
    want[(kern.strip(), int(stream))] = v
X = [e for e in ev if e.get("ph") == "X"]
kern = [e for e in X if e.get("cat") == "kernel"]
got = collections.Counter((e["name"], e["tid"]) for e in kern)
ok = True
def check(cond, what):
    global ok
    print(("PASS " if cond else "FAIL ") + what)
    ok = ok and cond
check(got == want, "kernel slices per (kernel, stream) = cuda:complete: %s vs %s" % (dict(got), dict(want)))
check(sum(got.values()) == 10 + 7 + 2 * 3, "23 kernel runs (%d)" % sum(got.values()))
launch = [e for e in X if e.get("cat") == "cuda" and "Launch" in e["name"]]
named = {e["args"]["correlation"] for e in launch if "kernel" in e["args"]}
check(len(named) == 17, "17 launches name their kernel (%d)" % len(named))
s = {e["id"] for e in ev if e.get("ph") == "s"}
f = {e["id"] for e in ev if e.get("ph") == "f"}
runs = {e["args"]["correlation"] for e in kern if not e["args"]["graph"]}
check(runs <= s and runs <= f and len(runs) == 17, "a flow from each launch to its run")
mem = [e for e in X if e.get("cat") == "memory"]
kinds = collections.Counter(e["name"] for e in mem)
check(kinds["HtoD"] >= 1 and kinds["DtoH"] >= 1 and kinds["memset"] >= 1, "copies and the memset: %s" % dict(kinds))
C = [e for e in ev if e.get("ph") == "C"]
check(any(e["args"]["bytes"] >= 2 * 4 * 65536 for e in C), "device memory counter")
cpu = {e["name"] for e in X if e.get("cat") == "cuda"}
check(any("StreamSynchronize" in n for n in cpu) and any("GraphLaunch" in n for n in cpu) and
      any("Malloc" in n or "MemAlloc" in n for n in cpu), "sync, graph and allocation calls drawn: %s" % sorted(cpu))
sys.exit(0 if ok else 1)
PY

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	cat >"$T/step.py" <<'PY'
import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.LayerNorm(256)).cuda()
opt = torch.optim.Adam(m.parameters())
x = torch.randn(64, 256, device="cuda")
for _ in range(3):
    opt.zero_grad()
    loss = m(x).square().mean()
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("loss", loss.item())
PY
	"$GT" -q -f json --timeline "$T/pt.json" -c "python3 $T/step.py" \
		-e 'cuda:complete { @n = count(); }' >"$T/out" 2>"$T/err"
	python3 - "$T/pt.json" "$T/out" <<'PY' || nfail=$((nfail + 1))
import json, sys
ev = json.load(open(sys.argv[1]))
n = None
for line in open(sys.argv[2]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("type") == "map" and "@n" in j["data"]:
        n = j["data"]["@n"]
kern = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
ok = n is not None and len(kern) == n and n > 0
print(("PASS " if ok else "FAIL ") + "PyTorch step: %d kernel slices, cuda:complete %s" % (len(kern), n))
sys.exit(0 if ok else 1)
PY
else
	echo "SKIP the PyTorch step: python3 has no torch with CUDA"
fi
[ "$nfail" -eq 0 ]
