#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: cuda: probes on the CUDA toolkit's driver stub (every call
# fails with 34, CUDA_ERROR_STUB_LIBRARY): launch geometry from
# registers, the stack (blockDim.z, shmem, stream) and cuLaunchKernelEx's
# config in memory, 32-bit arguments masked; memcpy kinds and sizes;
# malloc sizes saved at entry with the return value; free, sync, graph.
# The workload (tests/progs/cuda_stub.c) runs one round under -c.
. "$(dirname "$0")/../progs/cuda_lib.sh"

dir=$(stub_dir) || { echo "no CUDA toolkit driver stub"; exit 77; }
run "$dir" -c "$STUB -n 1" -e '
cuda:launch {
	@[func, gridDim.x, gridDim.y, gridDim.z, blockDim.x, blockDim.y,
	  blockDim.z, shmem, stream] = count();
	@k[kernel, probe] = count();
}
cuda:memcpy { @m[kind] = sum(size); }
cuda:malloc { @a[func] = sum(size); @r[retval] = count(); }
cuda:free { @f[func] = count(); }
cuda:sync /duration > 0 && duration < 1000000000/ { @s = count(); }
cuda:graph { @g[stream] = count(); }' ||
	{ echo "gputrace failed:"; cat "$T/err"; exit 1; }
want "

@[cuLaunchKernel, 1, 1, 1, 32, 1, 1, 0, 0]: 1
@[cuLaunchKernel, 4, 1, 1, 128, 1, 1, 0, 0]: 2
@[cuLaunchKernel, 5, 1, 1, 1, 1, 1, 0, 0]: 3
@[cuLaunchKernel, 6, 1, 1, 1, 1, 1, 0, 0]: 3
@[cuLaunchKernel_ptsz, 8, 2, 1, 64, 2, 3, 256, 5]: 3
@[cuLaunchCooperativeKernel, 16, 1, 1, 32, 1, 1, 0, 0]: 5
@[cuLaunchKernelEx, 2, 3, 4, 256, 1, 1, 1024, 7]: 6
@[cuLaunchKernel, 3, 1, 1, 1, 1, 1, 0, 0]: 9
@a[cuMemAllocPitch_v2]: 1000
@a[cuMemAlloc_v2]: 4096
@a[cuMemAllocHost_v2]: 8192
@a[cuMemAllocManaged]: 65536
@f[cuMemFreeHost]: 1
@f[cuMemFree_v2]: 2
@g[5]: 1
@k[unknown, cuda:launch]: 32
@m[DtoH]: 200
@m[DtoD]: 300
@m[HtoD]: 1100
@m[any]: 4000
@r[34]: 4
@s: 2"
