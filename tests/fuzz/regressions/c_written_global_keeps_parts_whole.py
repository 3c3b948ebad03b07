# (c, fixed: backends/passes/state_regions.py independent_parts) aot_eager: a graph that wrote a global in place stayed one
# autograd Function, so torch.autograd.grad through one part freed what the returned output needed: backward() then failed
# ("Trying to backward through the graph a second time"); eagerly the two are separate histories (seeds 402898, 406600, 408617).
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 2

G_T = torch.arange(4.0) * -1.0


def f(w, x):
    t1 = x @ torch.where(w > 0, w, G_T)
    G_T.add_(1.0)
    gr, = torch.autograd.grad(((w * w).sum() + w.pow(2).sum()), [w])
    return x, t1


def make_inputs(call):
    g = torch.Generator().manual_seed(call)
    return (torch.randn(4, 4, generator=g).requires_grad_(), torch.randn(3, 4, generator=g).requires_grad_()), {}
