# (c, fixed: backends/passes/state_regions.py) aot_eager: fuzz seed 401064. The region pass ran a graph's independent parts in the order of their first node; the part of `t` (a constant made first) draws with rand_like after the other part's rand, so the parts drew out of order (eager=0.0435 compiled=0.6028).
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 2


def f(x):
    t = torch.tensor(1.5)
    a = torch.rand(())
    b = torch.rand_like(t).abs()
    return a * 1.5 + x.sum() * 0


def make_inputs(call):
    return (torch.randn(3, 4, generator=torch.Generator().manual_seed(call)),), {}
