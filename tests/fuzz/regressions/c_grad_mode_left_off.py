# (c, fixed: backends/grad_regions.py) aot_eager: a loop building grad-requiring tensors in a comprehension, then a no_grad block with a
# graph break and an in-place write of an input: grad mode is left disabled after the compiled call.
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1


def f(x, w):
    for row in x:
        t = [torch.mv(w, row) * i for i in range(2)]
    with torch.no_grad():
        print("break")
        x.mul_(2.0)


def make_inputs(call):
    g = torch.Generator().manual_seed(call)
    return (torch.randn(3, 4, generator=g), torch.randn(4, 4, generator=g).requires_grad_()), {}
