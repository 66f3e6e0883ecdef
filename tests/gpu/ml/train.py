# SPDX-License-Identifier: MIT
"""A small deterministic training job for tests/gpu/ml_*.sh.

Linear, GELU, LayerNorm, cross-entropy and Adam with fixed seeds and
deterministic algorithms; then a CUDA graph of the forward pass replayed
--replays times on a stream of its own, and a Triton vector add
(gt_add_kernel, BLOCK 1024, num_warps 4) launched --adds times.  With
--loop STOP it trains, one Triton add a step, until the file STOP exists
(touching --ready once warm), for attaching to with -p; its model starts
again from the seed every --period steps, so its losses repeat.

Machine-readable lines:
  loss STEP HEX            the step's loss, float.hex(): bit-exact
  capture_stream HANDLE    the stream the graph was captured on
  capture_window T0 T1     CLOCK_MONOTONIC ns (gputrace's nsecs) just
                           after the capture began, just before it ended
  graph_out HEX            checksum of the graph's last output
  triton gt_add_kernel launches K grid G warps W
  add ok                   the Triton sums equal torch's
"""
import argparse
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

BLOCK, WARPS, N = 1024, 4, 1_000_000


@triton.jit
def gt_add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x + offs, mask=mask)
    b = tl.load(y + offs, mask=mask)
    tl.store(out + offs, a + b, mask=mask)


def triton_add(a, b, out):
    grid = (triton.cdiv(N, BLOCK),)
    gt_add_kernel[grid](a, b, out, N, BLOCK=BLOCK, num_warps=WARPS)
    return grid[0]


def setup():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.LayerNorm(256),
        torch.nn.Linear(256, 10)).to(dev)
    x = torch.randn(512, 64, device=dev)
    y = torch.randint(0, 10, (512,), device=dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    a = torch.rand(N, device=dev)
    b = torch.rand(N, device=dev)
    return model, x, y, opt, a, b


def step(model, x, y, opt, i):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"loss {i} {loss.item().hex()}", flush=True)


def graph(model, x, replays):
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(side)
        cap = torch.cuda.Stream()
        print(f"capture_stream {cap.cuda_stream}", flush=True)
        g = torch.cuda.CUDAGraph()
        # the capture window: torch.cuda.graph launches on CAP before
        # cudaStreamBeginCapture and after cudaStreamEndCapture too (its
        # RNG state's fills), which are not nodes; inside the block every
        # launch on CAP is one
        with torch.cuda.graph(g, stream=cap):
            t0 = time.monotonic_ns()
            out = model(x)
            t1 = time.monotonic_ns()
        print(f"capture_window {t0} {t1}", flush=True)
        for _ in range(replays):
            g.replay()
        torch.cuda.synchronize()
        print(f"graph_out {float(out.double().sum()).hex()}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--adds", type=int, default=10)
    ap.add_argument("--loop", help="train until this file exists")
    ap.add_argument("--ready", help="touched once warm (--loop)")
    ap.add_argument("--period", type=int, default=100,
                    help="--loop: steps before the model starts again")
    args = ap.parse_args()
    model, x, y, opt, a, b = setup()
    out = torch.empty_like(a)
    if args.loop:
        # every PERIOD steps the model starts again from its seed: the
        # losses repeat, and a native run of PERIOD steps checks them all
        i = 0
        while not os.path.exists(args.loop):
            if i and i % args.period == 0:
                model, x, y, opt, a, b = setup()
            step(model, x, y, opt, i % args.period)
            grid = triton_add(a, b, out)
            i += 1
            if args.ready and i == 3:
                torch.cuda.synchronize()
                open(args.ready, "w").close()
            time.sleep(0.01)
        torch.cuda.synchronize()
        print(f"triton gt_add_kernel launches {i} grid {grid} warps {WARPS}")
        return
    for i in range(args.steps):
        step(model, x, y, opt, i)
    graph(model, x, args.replays)
    grid = None     # --adds 0: no launch
    for _ in range(args.adds):
        grid = triton_add(a, b, out)
    torch.cuda.synchronize()
    print(f"triton gt_add_kernel launches {args.adds} grid {grid} "
          f"warps {WARPS}")
    if torch.equal(out, a + b):
        print("add ok")


if __name__ == "__main__":
    main()
