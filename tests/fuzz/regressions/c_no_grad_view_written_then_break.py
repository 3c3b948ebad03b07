# (c, fixed: backends/grad_regions.py) aot_eager: a view of a grad-requiring input made and written under no_grad, live across a graph
# break: the backend fails ("A view was created in no_grad mode and its base ... has been modified").
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1


def f(w):
    with torch.no_grad():
        row = w[0]
        row.zero_()
    print("break")


def make_inputs(call):
    return (torch.randn(4, 4, generator=torch.Generator().manual_seed(call)).requires_grad_(),), {}
