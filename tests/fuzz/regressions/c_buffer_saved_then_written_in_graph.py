# (c) fixed: a buffer saved for backward (matmul with its expanded view) then written in the same graph (net.buf[3] = ...): eager's backward raises 'modified by an inplace operation' and leaves the bias grad it had; aot_eager's functionalized graph saved a copy and ran. backends/passes/saved_written_inputs.py. Fuzz seed 577285, session 25
import contextlib
import dataclasses
import math
import random
import types
import torch
import torch.nn.functional as F
from torch import nn
import framejit
FUZZ_SEED = 577285
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 2
G_T = torch.arange(4.0) * 1.0

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
aux = types.ModuleType('aux')
aux.factor = 0.5
import functools
import itertools
import operator

def f(n, *, w, fl, net, st):
    t1 = torch.mv(torch.matmul(w, net.buf.unsqueeze(0).expand(4, -1)), G_T)

    def fn3(a4):
        net.buf[3] = aux.factor
        return a4 * 0.5 + net.lin.bias
    t6 = fn3(t1)
    return (t6, t6)
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    if 'args' in _KEPT:
        return _KEPT['args']
    VARY = 0
    B = (3, 1, 3)[call]
    n_value = (1, 1, 1)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    n = n_value
    w = torch.randn(4, 4, generator=g).requires_grad_()
    fl = 0.5 + call * 0.25 * VARY
    net = Net(FUZZ_SEED % 5)
    st = {1, 2, n_value}
    args = (n,)
    kwargs = {'w': w, 'fl': fl, 'net': net, 'st': st}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)

