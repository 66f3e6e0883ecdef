# SPDX-License-Identifier: MIT
"""CuPy's way to NVRTC, without CuPy (tests/accept/agent_nvrtc.sh):
ctypes.CDLL(libnvrtc) and a function pointer per getattr, as
cupy_backends/cuda/_softlink.pyx does, a RawKernel compiled for a real
architecture (a cubin), the cubin written to OUT and loaded and launched
5 times (4 x 64) through the driver, opened the same way.

    python3 agent_nvrtc.py LIBNVRTC LIBCUDA OUT.cubin [OPTION...]
"""
import ctypes
import sys

SRC = b"""
extern "C" __global__ void gt_nvrtc_add(const float *x, const float *y,
                                        float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n)
        out[i] = x[i] + y[i];
}
"""


def main():
    nvrtc = ctypes.CDLL(sys.argv[1])
    cuda = ctypes.CDLL(sys.argv[2])
    out, opts = sys.argv[3], [o.encode() for o in sys.argv[4:]]
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    prog = vp()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), SRC, b"add.cu", 0,
                                None, None):
        sys.exit("nvrtcCreateProgram failed")
    arr = (ctypes.c_char_p * len(opts))(*opts)
    r = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    if r:
        sys.exit(f"nvrtcCompileProgram: {r}")
    n = sz()
    nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cubin = ctypes.create_string_buffer(n.value)
    if nvrtc.nvrtcGetCUBIN(prog, cubin):
        sys.exit("nvrtcGetCUBIN failed")
    with open(out, "wb") as f:
        f.write(cubin.raw)
    mod, fn = vp(), vp()
    if (cuda.cuModuleLoadData(ctypes.byref(mod), cubin) or
            cuda.cuModuleGetFunction(ctypes.byref(fn), mod,
                                     b"gt_nvrtc_add")):
        sys.exit("cannot load the cubin")
    buf = (ctypes.c_float * 4)()
    ptr = ctypes.c_uint64(ctypes.addressof(buf))
    cnt = ctypes.c_int(256)
    params = (vp * 4)(*(ctypes.cast(ctypes.byref(x), vp)
                        for x in (ptr, ptr, ptr, cnt)))
    launch = cuda.cuLaunchKernel
    launch.argtypes = [vp] + [ctypes.c_uint] * 7 + [vp, vp, vp]
    for _ in range(5):
        if launch(fn, 4, 1, 1, 64, 1, 1, 0, None, params, None):
            sys.exit("cuLaunchKernel failed")


if __name__ == "__main__":
    main()
