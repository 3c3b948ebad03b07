# (c, fixed: backends/grad_regions.py) aot_eager: a random op whose result is never used makes torch's partitioner fail
# ("Expected native_dropout to be a tensor"); the frame falls back with a framejit-failed warning.
import torch
import torch.nn.functional as F

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1


def f(v, w):
    unused = F.dropout(v, p=0.5, training=True)
    return w @ torch.ones(4)


def make_inputs(call):
    g = torch.Generator().manual_seed(call)
    return (torch.randn(4, generator=g).requires_grad_(), torch.randn(4, 4, generator=g).requires_grad_()), {}
