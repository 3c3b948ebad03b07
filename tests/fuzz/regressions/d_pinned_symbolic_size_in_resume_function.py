# (crash, fixed: translate/values/numbers/sym_concrete.py) automatic dynamic shapes: after a graph break (random.randint), the resume function pins dim 0 of x (rows iterated) and x.shape[0] of a computed tensor reached torch.zeros / torch.ones as a SymInt at run time (seeds 602196, 703102).
import random
import torch
import torch.nn.functional as F
import framejit
FUZZ_SEED = 602196
FUZZ_BACKEND = 'eager'
FUZZ_CALLS = 3

def f(x):
    k1 = random.randint(0, 3)
    t3 = F.linear(torch.stack([row * 2 for row in x])[:, :], x.t() @ x)
    t5 = torch.ones(x.shape[0])
    x.sub_(torch.zeros(t3.shape[0], 4), alpha=0.5)
    return t5, x.shape, k1 * 0
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    B = (3, 1, 3)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10)
    x = torch.randn(B, 4, generator=g)
    args = (x,)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)
