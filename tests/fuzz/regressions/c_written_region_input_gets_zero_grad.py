# (c, fixed: backends/passes/none_grads.py, state_regions.py) aot_eager + autocast, fuzz seed 100619: a value made under autocast, written in place after the block, then backward() through a loss of x alone: w.grad None eagerly, zeros compiled.
# The written value is an input of the grad region (one more output of its Function); that region lost the
# value's autograd identity at its entry, and the None-gradient pass did not count written inputs as outputs.
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 2


def f(w, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ac = torch.mv(w, torch.ones(4))
    ac[1:3] = ac[:2].clone()
    (x.pow(2).sum()).backward()


def make_inputs(call):
    g = torch.Generator().manual_seed(1006190 + call)
    return (torch.randn(4, 4, generator=g).requires_grad_(), torch.randn(2, 4, generator=g).requires_grad_()), {}
