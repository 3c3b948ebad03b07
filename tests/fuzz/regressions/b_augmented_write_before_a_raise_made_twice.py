# (b) fixed: `y += ...` (operator.iadd in the graph) before an op that raises: the partial run's write was not undone before the rerun as Python (raising_graphs read only trailing-underscore names), so the argument was written twice. Fuzz seed 553850, session 24
import contextlib
import dataclasses
import math
import random
import types
import torch
import torch.nn.functional as F
from torch import nn
import framejit
FUZZ_SEED = 553850
FUZZ_BACKEND = 'eager'
FUZZ_CALLS = 1
G_SCALE = 1.5
G_T = torch.arange(4.0) * 0.25

class Box:

    def __init__(self, w, n, tag):
        self.w = w
        self.n = n
        self.tag = tag
        self.items = [n]
G_BOX = Box(torch.ones(4), 1, 'global')

def helper_mix(t, k):
    return t * k + G_SCALE
import functools
import itertools
import operator

class EntryModule(nn.Module):

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.register_buffer('steps', torch.zeros(()))

    def forward(self, fl, y):
        self.calls += 1
        y += helper_mix(G_T, 2) + torch.randn_like(helper_mix(G_T, 2))
        with torch.autocast('cpu', dtype=torch.bfloat16):
            ac5 = torch.mv(torch.full((4, 4), -1.0), torch.einsum('ij,j->i', torch.full((4, 4), -1.0), G_BOX.w))
G_ENTRY = EntryModule()
f = G_ENTRY
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    VARY = 1
    B = (3, 3, 3)[call]
    n_value = (3, 0, 3)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    fl = 0.5 + call * 0.25 * VARY
    y = torch.randn(4, generator=g)
    args = (fl, y)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)

