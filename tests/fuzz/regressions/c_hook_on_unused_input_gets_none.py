# (c, fixed: backends/passes/unreached_inputs.py) aot_eager: fuzz seed 516478. A leaf the graph only held as a placeholder (`alias = x2`) was an input of the traced Function, so each backward through the Function visited it and called its hook with None (`grad * 0.5`: TypeError inside backward(), the other leaf's .grad half of eager's).
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 2


def f(x, *, x2):
    for i in range(2):
        ((x * torch.where(x > 0, x, torch.cat([x[:1], x[1:]]))).sum() + x.pow(2).sum()).backward()
        h = x2.register_hook(lambda grad: grad * 0.5)
        alias = x2
    return x2


def make_inputs(call):
    g = torch.Generator().manual_seed(call)
    return (torch.randn(3, 4, generator=g).requires_grad_(),), {"x2": torch.randn(3, 4, generator=g).requires_grad_()}
