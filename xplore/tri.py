import os, sys, torch, triton, triton.language as tl

@triton.jit
def add_kernel(x, y, o, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

n = 1 << 20
x = torch.randn(n, device="cuda"); y = torch.randn(n, device="cuda"); o = torch.empty_like(x)
for _ in range(5):
    add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024, num_warps=4)
torch.cuda.synchronize()
print("add ok", bool(torch.equal(o, x + y)))
if len(sys.argv) > 1:
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.LayerNorm(64)).cuda()
    cm = torch.compile(m)
    z = cm(torch.randn(32, 64, device="cuda")); torch.cuda.synchronize()
    print("compiled ok", z.shape)
