# (c, fixed: backends/passes/dead_tensors.py) aot_eager: fuzz seed 533128's family. A product nothing reads (`t3 * (t3 * G_T)`) was handed out of the traced Function as a differentiable output (kept so no compiler drops it), so the Function saved G_T and the backward through t3 checked its version after a later graph wrote G_T in place: "modified by an inplace operation" where eager's backward runs, x.grad None.
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 2

G_T = torch.arange(4.0) * -1.0


def f(x):
    t3 = (-x).abs()
    t3 * (t3 * G_T)
    print("break")
    G_T[0] = 5.0
    return x, t3


def make_inputs(call):
    g = torch.Generator().manual_seed(call)
    return (torch.randn(3, 4, generator=g).requires_grad_(call == 1),), {}
