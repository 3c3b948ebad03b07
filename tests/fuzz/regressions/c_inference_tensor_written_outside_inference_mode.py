# (c, fixed: translate/guards/kinds/tensors.py) an in-place add to a global inference tensor outside inference mode raises eagerly (after writing it) but the aot_eager graph built for a normal G_T wrote it; tensor guards now check is_inference() (fuzz seed 509934, session 23)
import contextlib
import dataclasses
import math
import random
import types
import torch
import torch.nn.functional as F
from torch import nn
import framejit
FUZZ_SEED = 509934
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 2
G_T = torch.arange(4.0) * 0.25

class Box:

    def __init__(self, w, n, tag):
        self.w = w
        self.n = n
        self.tag = tag
        self.items = [n]

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
G_BOX = Box(torch.ones(4), 1, 'global')
import functools
import itertools
import operator

def f(x, lst, y, net):
    global G_T
    ob1 = Box(net.buf, G_BOX.n, 'x')
    G_T += torch.rand_like(torch.full((4,), 3.0)).float()
    with torch.inference_mode():
        G_T = (ob1.w > 0).float() - ob1.w
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    VARY = 0
    B = (3, 1, 3)[call]
    n_value = (2, 2, 3)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    x = torch.randn(B, 4, generator=g)
    lst = [1, 2, n_value]
    y = torch.randn(4, generator=g)
    net = Net(FUZZ_SEED % 5)
    args = (x, lst, y, net)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)

