# (c, fixed: backends/grad_regions.py, backends/aot.py) aot_eager: a view of a global taken before a graph break (so it is a graph output), the global
# saved for backward by a dead op and then written in place: the backend's joint trace fails ("one of
# the variables needed for gradient computation has been modified by an inplace operation").
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1
G_T = torch.arange(4.0)


def f(w):
    view = G_T[1:3]
    unused = w * G_T[:, None]
    G_T.add_(1.0)
    print("break")


def make_inputs(call):
    return (torch.randn(4, 4, generator=torch.Generator().manual_seed(call)).requires_grad_(),), {}
