# (c, fixed: translate/values/managers/raise_unwinding.py) aot_eager: fuzz seed 512181. A resume function started inside a no_grad block (int() of a tensor broke it), left the block, then its graph raised in an autocast block (a bfloat16 einsum into a float32 mv); the graph's handler put grad mode back as the graph started (off) where eager leaves it on.
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 2


def f(w):
    with torch.no_grad():
        k = int(w.detach().abs().sum().clamp(max=20))
    with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
        y = torch.mv(torch.arange(16.0).view(4, 4) / 8, torch.einsum("ij,j->i", torch.full((4, 4), -1.0), w[0]) * 2)
    return y, k


def make_inputs(call):
    return (torch.randn(4, 4, generator=torch.Generator().manual_seed(call)).requires_grad_(),), {}
