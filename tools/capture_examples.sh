#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Capture tools/NAME_example.txt for every tool (or the NAMEs given): real
# output from a GPU.  Run from the repository root, after `make`, on a
# machine with an NVIDIA GPU, nvcc (CUDA_HOME, default /usr/local/cuda),
# cuBLAS and NVRTC, as root:
#
#   sh tools/capture_examples.sh [NAME...]
#
# Builds the workloads (tests/gpu/gpuprog.cu and tests/gpu/real/*.cu, as
# the GPU tests build them) into a temporary directory and runs each tool
# there on one of them, with build/ first in PATH and tools/ linked in,
# so each "# COMMAND" line is exactly what ran, followed by what it
# printed (stdout and stderr, the workload's own lines included).  A tool
# may have more than one command (gpustalls also runs on the PyTorch loop
# of tests/gpu/sample_torch.py when python3 has torch); their outputs
# follow each other in one file.  Each workload first runs alone; a file
# is written only when that run and every gputrace run exit 0 within the
# time limit (LIMIT, 180 s), the traced run prints the workload's own
# result lines (checksum, or each loss) unchanged, and gputrace did not
# warn that no probe could fire.  Exits 1 if any tool failed.
cd "$(dirname "$0")/.." || exit 1
TOP=$(pwd)
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
LIMIT=${LIMIT:-180}
[ -x build/gputrace ] || { echo "no build/gputrace: run make first" >&2; exit 1; }
[ -f build/libgputrace-agent.so ] || { echo "no build/libgputrace-agent.so: run make first" >&2; exit 1; }
[ -x "$NVCC" ] || NVCC=$(command -v nvcc) || { echo "no nvcc" >&2; exit 1; }
nvidia-smi -L >/dev/null 2>&1 || { echo "no NVIDIA GPU (nvidia-smi -L failed)" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/gt-examples.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

echo "building the workloads in $T ..."
"$NVCC" -O2 -o "$T/gpuprog" tests/gpu/gpuprog.cu &
"$NVCC" -O2 -lineinfo -o "$T/memprog" tests/gpu/mem.cu &
"$NVCC" -O2 -arch=sm_90 -o "$T/graphs" tests/gpu/real/graphs.cu -lpthread &
"$NVCC" -O2 -arch=sm_90 -o "$T/thrust_cub" tests/gpu/real/thrust_cub.cu &
"$NVCC" -O2 -arch=sm_90 -o "$T/gemm" tests/gpu/real/gemm.cu -lcublas &
"$NVCC" -O2 -arch=sm_90 -std=c++17 -o "$T/launch_forms" \
	tests/gpu/real/launch_forms.cu -lcuda -lnvrtc -lpthread &
wait
for p in gpuprog memprog graphs thrust_cub gemm launch_forms; do
	[ -x "$T/$p" ] || { echo "building $p failed" >&2; exit 1; }
done
ln -s "$TOP/tools" "$T/tools"
ln -s "$TOP/tests/gpu/sample_torch.py" "$T/sample_torch.py"

# the command of each tool, run in $T
cmd_of() {
	case $1 in
	kernelcount)	echo "gputrace -q -c './thrust_cub 30' tools/kernelcount.gt" ;;
	kerneltime)	echo "gputrace -q -c './gemm 20' tools/kerneltime.gt" ;;
	kernelqueue)	echo "gputrace -q -c './graphs 100' tools/kernelqueue.gt" ;;
	kernellat)	echo "gputrace -q -c './gpuprog vadd 1048576 20' tools/kernellat.gt" ;;
	smload)		echo "gputrace -q -c './gpuprog imbalanced 1056' tools/smload.gt" ;;
	warpimbalance)	echo "gputrace -q -c './gpuprog imbalanced 64' tools/warpimbalance.gt 60" ;;
	cudamemcpy)	echo "gputrace -q -c './thrust_cub 3' tools/cudamemcpy.gt" ;;
	cudamalloc)	echo "gputrace -q -c './thrust_cub 3' tools/cudamalloc.gt" ;;
	cudasync)	echo "gputrace -q -c './graphs 100' tools/cudasync.gt" ;;
	cudagraph)	echo "gputrace -q -c './graphs 100' tools/cudagraph.gt" ;;
	launchgeom)	echo "gputrace -q -c './launch_forms 20' tools/launchgeom.gt" ;;
	kernelargs)	echo "gputrace -q -c './gpuprog multi' tools/kernelargs.gt" ;;
	warpsample)	echo "gputrace -q -c './gpuprog vadd 262144 3' tools/warpsample.gt" ;;
	gpustalls)	echo "gputrace -q -c './gemm 20' tools/gpustalls.gt"
		# deterministic GEMMs, so the losses can be compared
		python3 -c 'import torch' 2>/dev/null &&
			echo "CUBLAS_WORKSPACE_CONFIG=:4096:8 gputrace -q -c 'python3 sample_torch.py 200' tools/gpustalls.gt" ;;
	coalescing)	echo "gputrace -q -c './memprog' tools/coalescing.gt" ;;
	memheat)	echo "gputrace -q -c './gpuprog vadd 16777216 3' tools/memheat.gt" ;;
	bankconflicts)	echo "gputrace -q -c './memprog' tools/bankconflicts.gt" ;;
	esac
}

if [ $# -gt 0 ]; then
	names=$*
else
	names=$(for f in tools/*.gt; do basename "$f" .gt; done | grep -v '^demo$')
fi
nfail=0
# run one command of a tool: its output to $T/$t.txt (appended), or the
# reason it failed on stdout
capture() {
	cmd=$1
	# the workload alone, with the command's environment: it must work,
	# and gives the result lines to expect
	pre=$(echo "$cmd" | sed -n 's/^\(.*\)gputrace .*/\1/p')
	w=$(echo "$cmd" | sed -n "s/.* -c '\([^']*\)'.*/\1/p")
	if ! (cd "$T" && timeout -k 5 "$LIMIT" sh -c "$pre$w") </dev/null \
	     >"$T/$t.native" 2>&1; then
		echo "the workload '$w' failed on its own:"
		sed 's/^/    | /' "$T/$t.native" | head -10
		return
	fi
	grep '^checksum \|^loss ' "$T/$t.native" >"$T/$t.sums"
	(
		cd "$T" || exit 1
		[ -s "$T/$t.txt" ] && echo
		echo "# $cmd"
		PATH=$TOP/build:$PATH LC_ALL=C.UTF-8 \
			timeout -k 5 "$LIMIT" sh -c "$cmd" </dev/null 2>&1
	) >"$T/$t.one"
	rc=$?
	cat "$T/$t.one" >>"$T/$t.txt"
	if [ $rc -ne 0 ]; then
		echo "exit status $rc"
	elif [ ! -s "$T/$t.sums" ] ||
	     [ "$(grep -cxF -f "$T/$t.sums" "$T/$t.one")" -ne \
	       "$(wc -l <"$T/$t.sums")" ]; then
		echo "the workload's results changed or it did not finish (want:"
		sed 's/^/    | /' "$T/$t.sums"
		echo ")"
	elif grep -q 'gputrace: WARNING: .*\(could fire\|did not fire\)' "$T/$t.one"; then
		echo "no probe could fire"
	fi
}

for t in $names; do
	cmds=$(cmd_of "$t")
	if [ -z "$cmds" ]; then
		echo "FAIL $t: no workload chosen for it in $0" >&2
		nfail=$((nfail + 1))
		continue
	fi
	: >"$T/$t.txt"
	why=
	while IFS= read -r cmd; do
		echo "$t: $cmd"
		why=$(capture "$cmd" </dev/null)
		[ -z "$why" ] || break
	done <<EOC
$cmds
EOC
	if [ -z "$why" ]; then
		cp "$T/$t.txt" "tools/${t}_example.txt"
	else
		echo "FAIL $t: $why; output:" >&2
		sed 's/^/    | /' "$T/$t.txt" | head -30 >&2
		nfail=$((nfail + 1))
	fi
done
[ $nfail -eq 0 ] || { echo "$nfail tools failed" >&2; exit 1; }
echo "wrote tools/*_example.txt; review them, then commit"
