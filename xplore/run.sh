set -x
nvidia-smi -L
export TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ti
python3 xplore/tri.py 1 2>&1 | tail -3
find /tmp/tc /tmp/ti -name '*.cubin' | head -20
c=$(find /tmp/tc -name 'add_kernel.cubin' | head -1); cp $c $OUT/add_kernel.cubin; cp ${c%.cubin}.ptx $OUT/add_kernel.ptx 2>/dev/null
i=$(find /tmp/tc /tmp/ti -name 'triton_*.cubin' | head -1); cp $i $OUT/inductor.cubin; cp ${i%.cubin}.ptx $OUT/inductor.ptx 2>/dev/null
ls -la $OUT
build/gputrace -q -v -c 'python3 xplore/tri.py' -e 'gpu:warp:add_kernel { @w = count(); } cuda:launch { @l[kernel] = count(); }' 2>&1 | grep -v 'info: dlsym' | tail -25
python3 -c "import os; print(os.listdir('/proc/self/fd'))"
ls /usr/local/cuda*/extras/CUPTI/lib64/ 2>/dev/null | head; ls /usr/local/cuda/lib64 | grep -i cupti
