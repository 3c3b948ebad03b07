# (c, fixed: backends/overlapping_writes.py) aot_eager: zero_() of a global's expand()ed view (stride 0: many elements, one memory
# location): functionalization writes the view back into the base as if its elements were distinct (the expand's inverse sums
# them): G_T became [0, -0.75, -1.5, -2.25] where eager zeroes it (seed 709265).
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1
G_T = torch.arange(4.0) * 0.25


def f(w):
    G_T.expand(4, 4).zero_()
    return w * 2.0


def make_inputs(call):
    return (torch.randn(4, 4, generator=torch.Generator().manual_seed(call)).requires_grad_(),), {}
