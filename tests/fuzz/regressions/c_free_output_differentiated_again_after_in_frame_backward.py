# (c) fixed: t5 = (x.view(...) + 0.5).roll(1, -1) returned beside a loss whose backward runs in the frame; the caller's backward through t5 met the compiled Function's freed saved values (eager's view/add/roll nodes saved nothing). backends/passes/nothing_saved.split_free_outputs makes such outputs by their own eager ops after the compiled rest. Fuzz seed 696236, session 27
# framejit fuzz program 696236 (python -m tests.fuzz --replay THIS_FILE)
import contextlib
import dataclasses
import math
import random
import types

import torch
import torch.nn.functional as F
from torch import nn

import framejit

FUZZ_SEED = 696236
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 2

G_COUNT = 2
G_SCALE = 1.5
G_FLAG = True
G_NAME = "g2"
G_LIST = [1, 2, 3]
G_T = torch.arange(4.0) * 1.0
G_D = {"a": 1, "b": 2}
G_OBJS = []
G_LOG = []


class FuzzError(Exception):
    pass


class Box:
    kind = "box"
    limit = 1

    def __init__(self, w, n, tag):
        self.w = w
        self.n = n
        self.tag = tag
        self.items = [n]

    @property
    def total(self):
        return self.w.sum() * self.n

    @property
    def level(self):
        return self.__dict__.get("_level", 0)

    @level.setter
    def level(self, value):
        self._level = min(value, 9)

    def bump(self, k):
        self.n = self.n + k
        return self.n

    def push(self, v):
        self.items.append(v)
        return len(self.items)

    def scaled(self, t):
        return t * self.n + self.w


class Point:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b

    def norm(self):
        return self.b * self.a


@dataclasses.dataclass
class Cfg:
    depth: int = 2
    scale: float = 0.5
    name: str = "cfg"


class Net(nn.Module):
    def __init__(self, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.lin = nn.Linear(4, 4)
        with torch.no_grad():
            self.lin.weight.copy_(torch.randn(4, 4, generator=g) * 0.5)
            self.lin.bias.copy_(torch.randn(4, generator=g) * 0.1)
        self.register_buffer("buf", torch.zeros(4))
        self.calls = 0
        self.scale = 1.0

    def forward(self, x):
        self.calls += 1
        return torch.tanh(self.lin(x)) * self.scale + self.buf


G_BOX = Box(torch.ones(4), 1, "global")

aux = types.ModuleType("aux")
aux.K = 4
aux.hits = 0
aux.factor = 0.5


def make_scaler(k):
    def scale(t):
        return t * k
    return scale


scale_a = make_scaler(2.0)
scale_b = make_scaler(-0.5)


@framejit.disable
def opaque(t):
    return t * 2.0 + 1.0


def helper_mix(t, k):
    return t * k + G_SCALE


def helper_note(box, k):
    box.n = box.n + k
    G_LIST.append(k)
    return box.n


def helper_print(t):
    print("helper", tuple(t.shape))
    return t + 1.0


def helper_check(k):
    if k > 50:
        raise FuzzError(f"too big: {k}")
    return k + 1


def helper_count(step=1):
    global G_COUNT
    G_COUNT += step
    return G_COUNT


def helper_rec(t, depth):
    if depth <= 0:
        return t
    return helper_rec(t * 0.5 + 1.0, depth - 1)


def helper_kw(t, *rest, k=1.0, **extra):
    return t * k + len(rest) + len(extra)


class Tracker:
    """A user context manager: logs enter/exit, may swallow the exception leaving the block."""

    def __init__(self, log, swallow=False):
        self.log = log
        self.swallow = swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, kind, value, tb):
        self.log.append("exit " + (kind.__name__ if kind else "ok"))
        return self.swallow


import functools
import itertools
import operator


class Vec:
    def __init__(self, t, scale=1.0):
        self.t = t
        self.scale = scale

    def __add__(self, other):
        return Vec(self.t + (other.t if isinstance(other, Vec) else other), self.scale)

    def __mul__(self, k):
        return Vec(self.t * k, self.scale * k)

    __rmul__ = __mul__

    def __len__(self):
        return self.t.shape[0]

    def __iter__(self):
        return iter(self.t.unbind(0))

    def __getitem__(self, i):
        return self.t[i]

    def __call__(self, x):
        return x * self.scale + self.t

    def __eq__(self, other):
        return isinstance(other, Vec) and self.scale == other.scale

    def __hash__(self):
        return hash(self.scale)

    def __repr__(self):
        return f"Vec(scale={self.scale})"


class Lazy:
    def __init__(self):
        object.__setattr__(self, "writes", 0)

    def __getattr__(self, name):
        if name.startswith("dyn_"):
            return len(name)
        raise AttributeError(name)

    def __setattr__(self, name, value):
        object.__setattr__(self, "writes", self.writes + 1)
        object.__setattr__(self, name, value)


class SubBox(Box):
    def bump(self, k):
        return super().bump(k * 2) + 1

    @classmethod
    def make(cls, t):
        return cls(t, 1, "sub")

    @staticmethod
    def twice(t):
        return t * 2


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def _make_seq():
    with torch.random.fork_rng():
        torch.manual_seed(11)
        return nn.Sequential(nn.Linear(4, 4), nn.Tanh())


G_SEQ = _make_seq()
G_HOOKS = []


class Entry:
    def __init__(self):
        self.calls = 0

    def f(self, x, lst, tag):
        self.calls += 1
        global G_NAME, G_NEW, G_SCALE, G_T
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ac1 = torch.matmul(G_BOX.w, torch.ones(4, 4)).relu()
            k2 = (x / (x.abs() + 1)).dim()
        ac1 = ac1.float()
        G_BOX.n += 1
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ac3 = torch.matmul((ac1 + torch.randn_like(ac1)), ((torch.full((4, 4), -1.0) + torch.randn_like(torch.full((4, 4), -1.0))) + G_BOX.n)).relu()
            t4 = ((torch.add(torch.arange(x.shape[0]).float(), torch.ones(x.shape[0]), alpha=2)).cos() > 0).float()
        ac3 = ac3.float()
        G_BOX.w.clamp_(-2.0, 2.0)
        t5 = (((x).view(x.shape[0], -1) + max(G_SCALE, 0.1))).roll(1, -1)
        ((x * F.dropout(torch.add(t5, torch.zeros(x.shape[0], 4), alpha=2), p=0.5, training=True)).sum() + x.pow(2).sum()).backward()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            t6 = torch.tensor(0.5)
            st7 = set(lst)
        L8 = list(itertools.chain(lst, [1]))
        with torch.set_grad_enabled(bool(G_LIST)):
            G_BOX.n += 1
            t9 = ((F.log_softmax(torch.ones(4, 4), dim=-1)).T).transpose(0, 1)
        if hasattr(G_BOX, 'extra'):
            try:
                _ = F.log_softmax((G_T).view(-1), dim=-1) + torch.ones(3)
                k10 = next(iter(G_LIST), -1)
            except Exception as err11:
                print('caught', type(err11).__name__, err11)
            x.grad = None
        else:
            t12 = (torch.mm(torch.mm(x, torch.full((4, 4), 0.25)), torch.maximum((torch.arange(16.0).view(4, 4) / 8), torch.full((4, 4), 2.0))) * 0)
        vc13 = Vec((G_BOX.w + torch.randn_like(G_BOX.w)), math.sqrt(abs(2.0)))
        return F.gelu(((t5 @ (torch.arange(16.0).view(4, 4) / 8)) / (scale_a(torch.tensor(1.5)).abs() + 1)))


G_ENTRY = Entry()
f = G_ENTRY.f


_KEPT = {}


def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    VARY = 1
    B = (3, 1, 3)[call]
    n_value = (2, 2, 2)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    x = torch.randn(B, 4, generator=g).requires_grad_()
    lst = [1, 2, n_value]
    tag = 'g' + str(call * VARY)
    args = (x, )
    kwargs = {'lst': lst, 'tag': tag}
    _KEPT['args'] = (args, kwargs)
    return args, kwargs
