# (crash, fixed: translate/values/numbers/sym_concrete.py) automatic dynamic shapes: iterating a tensor's rows pins its symbolic dim 0 to a number; x.shape then folded to a torch.Size of SymInts, and torch.ones(x.shape[0]) ran in a break function with a SymInt ("SymIntArrayRef expected to contain only concrete integers", seed 706369).
import torch
import framejit
FUZZ_SEED = 706369
FUZZ_BACKEND = 'eager'
FUZZ_CALLS = 2

def f(x):
    k1 = torch.stack([row * 2 for row in torch.zeros_like(x)]).numel()
    t2 = torch.ones(x.shape[0])
    return k1, t2
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    B = (2, 4, 2)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10)
    x = torch.randn(B, 4, generator=g)
    args = (x,)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)
