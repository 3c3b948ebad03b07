# (c, fixed: backends/passes/state_regions.py _stages) aot_eager: fuzz seed 533128, minimized. A write into a global after a value saved for backward from it, with a forward pre-hook registered in the frame; the second call (x requiring grad) raised 'modified by an inplace operation' in backward where eager does not: one Function saved what a value live across a break needed and checked G_T's version in every backward.
import contextlib
import dataclasses
import math
import random
import types
import torch
import torch.nn.functional as F
from torch import nn
import framejit
FUZZ_SEED = 533128
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 2
G_T = torch.arange(4.0) * -1.0
import functools
import itertools
import operator

def _make_seq():
    with torch.random.fork_rng():
        torch.manual_seed(11)
        return nn.Sequential(nn.Linear(4, 4), nn.Tanh())
G_SEQ = _make_seq()

def f(x):
    t1 = torch.randn(4) * 0.1
    t3 = (-x).abs()
    t4 = t3 * (t3 * G_T)
    h7 = G_SEQ.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    v9 = G_T
    v9[0] = 5.0
    return (x, t1, t3)
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    VARY = 1
    B = (3, 3, 5)[call]
    n_value = (2, 2, 3)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    x = torch.randn(B, 4, generator=g)
    x.requires_grad_(call == 1)
    args = (x,)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)

