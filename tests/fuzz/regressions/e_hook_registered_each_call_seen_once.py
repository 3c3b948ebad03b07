# (output, fixed: translate/calls.py, convert/callees.py) a forward hook registered on a global module on every call: framejit inlined the module watch's wrapper of register_forward_hook and traced its counter bump as a constant store, so from the second call the compiled frame ran the module with its first hook table (seeds 721285, 720679).
import torch
from torch import nn
import framejit
FUZZ_SEED = 721285
FUZZ_BACKEND = 'eager'
FUZZ_CALLS = 3

def _make_seq():
    with torch.random.fork_rng():
        torch.manual_seed(11)
        return nn.Sequential(nn.Linear(4, 4), nn.Tanh())
G_SEQ = _make_seq()

def f(tl, m):
    t2 = G_SEQ[0](torch.stack(tl).sum(0))
    h3 = G_SEQ.register_forward_hook(lambda m, args, out: out * 0.5)
    t13 = G_SEQ(m.unbind(0)[3])
    return t13, t2
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call)
    tl = [torch.randn(4, generator=g) for _ in range(3)]
    m = torch.randn(4, 4, generator=g)
    args = (tl, m)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)
