# SPDX-License-Identifier: MIT
"""A small model under torch.compile (Inductor's Triton kernels) for
tests/gpu/ml_compiled.sh: a forward pass of Linear, GELU, LayerNorm,
softmax run --calls times.

Machine-readable lines:
  out CALL HEX     checksum of each call's output, float.hex()
  compiled ok      the compiled model's output equals eager's closely
"""
import argparse

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.LayerNorm(128),
        torch.nn.Linear(128, 64), torch.nn.Softmax(dim=-1)).to(dev)
    x = torch.randn(256, 64, device=dev)
    fast = torch.compile(model)
    with torch.no_grad():
        for i in range(args.calls):
            out = fast(x)
            print(f"out {i} {float(out.double().sum()).hex()}", flush=True)
        if torch.allclose(out, model(x), rtol=1e-3, atol=1e-4):
            print("compiled ok")


if __name__ == "__main__":
    main()
