# (c, fixed: backends/grad_regions.py) aot_eager: a parameter updated in place under no_grad, unrelated to the output, gets a zero
# .grad after backward() (eager leaves it None).
import torch
from torch import nn

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1


def f(x, lin):
    with torch.no_grad():
        lin.bias.add_(0.1)
    return x * 2


def make_inputs(call):
    g = torch.Generator().manual_seed(call)
    lin = nn.Linear(4, 4)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(4, 4, generator=g))
        lin.bias.zero_()
    return (torch.randn(3, 4, generator=g).requires_grad_(), lin), {}
