# (c, fixed: backends/grad_regions.py, backends/aot.py) aot_eager: torch.autograd.grad inside the frame frees the saved tensors of the graph's single
# autograd node, which the returned output also hangs from: backward() through that output then fails
# ("Trying to backward through the graph a second time"); eagerly the two are separate nodes.
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1


def f(w, m):
    out = torch.mm(w, m).select(0, 0)
    gw, = torch.autograd.grad((w * w * 2.0).sum(), [w])
    return out


def make_inputs(call):
    g = torch.Generator().manual_seed(call)
    return (torch.randn(4, 4, generator=g).requires_grad_(), torch.randn(4, 4, generator=g)), {}
