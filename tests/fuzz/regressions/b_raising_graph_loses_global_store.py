# (b, fixed: convert/raising_graphs.py undoes writes into inference tensors in inference mode) eager backend: a graph op that fails only at run time (an in-place write to an inference tensor
# outside inference_mode; fake tensors do not know it raises) after a global store: the store is lost
# (eagerly G_NAME is 'box' when the exception leaves the call).
import torch

FUZZ_BACKEND = "eager"
FUZZ_CALLS = 1
G_T = torch.arange(4.0)
G_NAME = "g"


def f(w):
    global G_NAME, G_T
    with torch.inference_mode():
        G_T = G_T * 0.5 + (w @ w).sum(0)
    print("break")
    G_NAME = "box"
    view = G_T[1:3]
    view[0] = 5.0


def make_inputs(call):
    return (torch.randn(4, 4, generator=torch.Generator().manual_seed(call)).requires_grad_(),), {}
