# SPDX-License-Identifier: MIT
# A small deterministic PyTorch training loop (tests/gpu/sample.sh):
# Linear layers (cuBLAS GEMMs), ReLU, MSE loss, SGD; prints each step's
# loss exactly, so a run under gputrace can be compared with a native one.
# Needs CUBLAS_WORKSPACE_CONFIG=:4096:8 for deterministic GEMMs.
# Arguments: [STEPS [READY [STOP]]]: the steps (200), a file created
# after the first step (for gputrace -p), and a file whose existence ends
# the loop at its next printed loss (a -p test of any length; a native
# run of that loss's step + 1 steps prints the same lines).
import os
import sys

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
ready = sys.argv[2] if len(sys.argv) > 2 else None
stop = sys.argv[3] if len(sys.argv) > 3 else None

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
dev = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
    torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
    torch.nn.Linear(2048, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(512, 1024, device=dev)
y = torch.randn(512, 10, device=dev)
for step in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print("loss %d %r" % (step, loss.item()), flush=True)
        if stop and os.path.exists(stop):
            break
    if step == 0 and ready:
        open(ready, "w").close()
