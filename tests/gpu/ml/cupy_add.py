# SPDX-License-Identifier: MIT
"""A CuPy RawKernel for tests/gpu/ml_cupy.sh: a vector add of N floats,
block 256, launched --launches times.  NVRTC makes a cubin, or PTX with
CUPY_COMPILE_WITH_PTX=1 (CuPy reads it at import).

Machine-readable lines:
  cupy gt_cupy_add launches K grid G block B
  checksum HEX
  results ok       every sum equals x + y
"""
import argparse

import cupy as cp

SRC = r"""
extern "C" __global__ void gt_cupy_add(const float *x, const float *y,
                                       float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        out[i] = x[i] + y[i];
}
"""
N, BLOCK = 1 << 20, 256


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=10)
    args = ap.parse_args()
    kern = cp.RawKernel(SRC, "gt_cupy_add")
    rng = cp.random.default_rng(0)
    x = rng.random(N, dtype=cp.float32)
    y = rng.random(N, dtype=cp.float32)
    out = cp.empty_like(x)
    grid = (N + BLOCK - 1) // BLOCK
    for _ in range(args.launches):
        kern((grid,), (BLOCK,), (x, y, out, cp.int32(N)))
    cp.cuda.Device().synchronize()
    print(f"cupy gt_cupy_add launches {args.launches} grid {grid} "
          f"block {BLOCK}")
    print(f"checksum {float(out.astype(cp.float64).sum()).hex()}")
    if bool((out == x + y).all()):
        print("results ok")


if __name__ == "__main__":
    main()
