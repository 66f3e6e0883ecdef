#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU: -c on a launcher of two CUDA processes (multiproc.cu), as torchrun
# starts its ranks: the agent is in each, device probes work in each and
# `pid` tells them apart.  Worker i makes 3 * (i + 1) launches of 256
# warps (64 blocks of 128 threads): @w[pid] must be 768 and 1536 for the
# workers' pids, @k[pid] (gpu:kernel, every thread) 24576 and 49152,
# @l[pid] 3 and 6, @c[pid] (cuda:complete) 3 and 6; each worker's
# results right.  Modes: workers started as launchers do (fork, then
# exec); forked without exec, the parent never touching CUDA (the agent
# starts afresh in each child, docs/agent.md; they leave with _exit);
# the same, then the parent's own worker 2 (9 launches) once they are
# gone.  Then, with torch, a 2-rank gloo job on one GPU
# (torch.distributed.run): each rank's kernels counted under its pid;
# and Python multiprocessing with the 'fork' start method where only the
# children use CUDA (torch, then mp_worker from multiproc.cu built as a
# library): exact mp_vadd counts per child pid, every child's launches
# equal its completions, none under the parent's pid.
cd "$(dirname "$0")/../.." || exit 1
GT=${GPUTRACE:-build/gputrace}
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-mp.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
"$NVCC" -O2 -o "$T/multiproc" tests/gpu/multiproc.cu || { echo "FAIL build"; exit 1; }
nfail=0
verdict() {	# verdict OK WHAT FAILED: PASS WHAT, or FAIL FAILED with the output
	if [ "$1" = 1 ]; then
		echo "PASS $2"
	else
		echo "FAIL $3"
		cat "$T/out"
		grep -v 'info: dlsym' "$T/err" | tail -n 20
		nfail=$((nfail + 1))
	fi
}

for mode in exec fork forkparent; do
	want=2
	[ $mode = forkparent ] && want=3
	timeout 120 "$GT" -q -c "$T/multiproc $mode" -e '
gpu:warp:mp_vadd { @w[pid] = count(); }
gpu:kernel:mp_vadd { @k[pid] = count(); }
cuda:launch:mp_vadd { @l[pid] = count(); }
cuda:complete:mp_vadd { @c[pid] = count(); }' >"$T/out" 2>"$T/err"
	rc=$?
	ok=1
	[ $rc = 0 ] || ok=0
	for w in $(sed -n 's/^worker \([0-9]*\) launches \([0-9]*\) ok$/\1:\2/p' "$T/out"); do
		p=${w%:*} n=${w#*:}
		grep -qx "@w\[$p\]: $((n * 256))" "$T/out" || ok=0
		grep -qx "@k\[$p\]: $((n * 8192))" "$T/out" || ok=0
		grep -qx "@l\[$p\]: $n" "$T/out" || ok=0
		grep -qx "@c\[$p\]: $n" "$T/out" || ok=0
	done
	[ "$(grep -c '^worker [0-9]* launches [369] ok$' "$T/out")" = $want ] || ok=0
	[ "$(grep -c '^@w\[' "$T/out")" = $want ] || ok=0
	verdict $ok "$mode: $want workers, exact per-pid counts" "$mode: status $rc"
done

if python3 -c 'import torch, torch.distributed; assert torch.cuda.is_available()' 2>/dev/null; then
	cat >"$T/ddp.py" <<'PY'
import os, sys, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
m = torch.nn.Linear(128, 128).cuda()
x = torch.randn(32, 128, device="cuda")
for _ in range(5):
    y = m(x).relu().sum()
    y.backward()
    for p in m.parameters():
        g = p.grad.cpu()
        dist.all_reduce(g)
        p.grad.copy_(g)
torch.cuda.synchronize()
# one write a line (the other rank's lines must not come in between)
sys.stdout.write(f"rank {rank} pid {os.getpid()} loss {y.item()}\n")
sys.stdout.flush()
dist.destroy_process_group()
PY
	timeout 240 "$GT" -q -c "python3 -m torch.distributed.run --nproc_per_node=2 $T/ddp.py" \
		-e 'cuda:launch { @l[pid] = count(); } cuda:complete { @c[pid] = count(); }' \
		>"$T/out" 2>"$T/err"
	rc=$?
	ok=1
	n=0
	for p in $(sed -n 's/^rank [01] pid \([0-9]*\) loss .*/\1/p' "$T/out"); do
		l=$(sed -n "s/^@l\[$p\]: //p" "$T/out")
		c=$(sed -n "s/^@c\[$p\]: //p" "$T/out")
		[ -n "$l" ] && [ "$l" -gt 0 ] && [ "$l" = "$c" ] || ok=0
		n=$((n + 1))
	done
	[ $rc = 0 ] && [ $n = 2 ] || ok=0
	verdict $ok "torch.distributed.run, 2 gloo ranks: launches = completions per rank pid" \
		"torch.distributed.run: status $rc"

	# multiprocessing, 'fork': the parent imports torch, never CUDA
	"$NVCC" -O2 -shared -Xcompiler -fPIC -DMP_LIB -o "$T/libmp.so" \
		tests/gpu/multiproc.cu || { echo "FAIL build libmp"; exit 1; }
	cat >"$T/mpfork.py" <<'PY'
import ctypes, multiprocessing as mp, os, sys, torch
def child(i):
    x = torch.ones(4096, device="cuda")
    y = (x * 2 + 1).sum()
    torch.cuda.synchronize()
    r = ctypes.CDLL(sys.argv[1]).mp_worker(i)
    sys.stdout.write(f"torch child {os.getpid()} sum {y.item()}\n")
    sys.stdout.flush()
    sys.exit(r)
if __name__ == "__main__":
    ps = [mp.get_context("fork").Process(target=child, args=(i,))
          for i in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    sys.stdout.write(f"parent {os.getpid()} cuda {torch.cuda.is_initialized()}\n")
    sys.stdout.flush()
    # a child killed by a signal has a negative exit code
    sys.exit(0 if all(p.exitcode == 0 for p in ps) else 1)
PY
	timeout 240 "$GT" -q -c "python3 $T/mpfork.py $T/libmp.so" -e '
gpu:warp:mp_vadd { @w[pid] = count(); }
gpu:kernel:mp_vadd { @k[pid] = count(); }
cuda:launch:mp_vadd { @l[pid] = count(); }
cuda:launch { @a[pid] = count(); }
cuda:complete { @c[pid] = count(); }' >"$T/out" 2>"$T/err"
	rc=$?
	ok=1
	for w in $(sed -n 's/^worker \([0-9]*\) launches \([0-9]*\) ok$/\1:\2/p' "$T/out"); do
		p=${w%:*} n=${w#*:}
		grep -qx "@w\[$p\]: $((n * 256))" "$T/out" || ok=0
		grep -qx "@k\[$p\]: $((n * 8192))" "$T/out" || ok=0
		grep -qx "@l\[$p\]: $n" "$T/out" || ok=0
		a=$(sed -n "s/^@a\[$p\]: //p" "$T/out")
		c=$(sed -n "s/^@c\[$p\]: //p" "$T/out")
		[ -n "$a" ] && [ "$a" -gt "$n" ] && [ "$a" = "$c" ] || ok=0
	done
	[ "$(grep -c '^worker [0-9]* launches [36] ok$' "$T/out")" = 2 ] &&
		[ "$(grep -c '^torch child [0-9]* sum 12288.0$' "$T/out")" = 2 ] &&
		[ "$(grep -c '^@a\[' "$T/out")" = 2 ] || ok=0
	pp=$(sed -n 's/^parent \([0-9]*\) cuda False$/\1/p' "$T/out")
	[ -n "$pp" ] && ! grep -q "^@.\[$pp\]" "$T/out" || ok=0
	[ $rc = 0 ] || ok=0
	verdict $ok "multiprocessing fork: 2 children using CUDA, exact per-pid counts" \
		"multiprocessing fork: status $rc"
else
	echo "SKIP torch.distributed, multiprocessing: python3 has no torch with CUDA"
fi
[ "$nfail" -eq 0 ]
