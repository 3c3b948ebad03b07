# (c, fixed: backends/grad_regions.py) aot_eager: a view of a leaf made under no_grad and returned comes back with a ViewBackward0
# grad_fn, so backward() through it fills the leaf's .grad (eager: no grad_fn, .grad stays None).
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1


def f(x):
    with torch.no_grad():
        rows = x.view(x.shape[0], -1)
    return rows


def make_inputs(call):
    return (torch.randn(3, 4, generator=torch.Generator().manual_seed(call)).requires_grad_(),), {}
