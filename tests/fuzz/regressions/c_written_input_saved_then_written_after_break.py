# (c) fixed: an input written in the graph (G_T[:][0] = 5) and then saved for backward (torch.minimum), written again after a break: eager's backward raises 'modified by an inplace operation', aot_eager's functionalized graph had saved a copy and ran. backends/passes/saved_written_inputs.py runs such a graph as fx code. Fuzz seed 561230, session 25
import contextlib
import dataclasses
import math
import random
import types
import torch
import torch.nn.functional as F
from torch import nn
import framejit
FUZZ_SEED = 561230
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 1
G_LIST = [1, 2, 3]
G_T = torch.arange(4.0) * -1.0

class Net(nn.Module):

    def __init__(self, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.lin = nn.Linear(4, 4)
        with torch.no_grad():
            self.lin.weight.copy_(torch.randn(4, 4, generator=g) * 0.5)
            self.lin.bias.copy_(torch.randn(4, generator=g) * 0.1)
        self.register_buffer('buf', torch.zeros(4))
        self.calls = 0
        self.scale = 1.0
import functools
import itertools
import operator

def f(lst, net, x):
    st2 = {v % 3 for v in G_LIST}
    t3 = x
    v5 = G_T[:]
    v5[0] = 5.0
    t6 = torch.mm(x, F.normalize(torch.minimum(net.lin.weight, G_T), dim=-1))
    L8 = [int(v > 0) for v in (net.lin.weight + torch.tensor(0.25)).unbind(0)[2].detach().flatten().tolist()]
    v5.add_(G_T)
    return (t3, st2, t6)
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    VARY = 0
    B = (3, 3, 3)[call]
    n_value = (2, 2, 2)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    lst = [1, 2, n_value]
    net = Net(FUZZ_SEED % 5)
    x = torch.randn(B, 4, generator=g).requires_grad_()
    args = (lst, net, x)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)

