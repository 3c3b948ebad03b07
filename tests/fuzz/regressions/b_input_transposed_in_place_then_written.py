# (b) fixed: m.t_() then m.masked_fill_(m < 0, 0.0) on an input under aot_eager left m strided (4, 1) where eager's is (1, 4): AOT autograd sets an input's metadata from its functional update's layout. backends/passes/input_metadata.py replays the metadata ops on a view and restrides the input. Fuzz seed 665566, session 27
# framejit fuzz program 665566 (python -m tests.fuzz --replay THIS_FILE)
import contextlib
import dataclasses
import math
import random
import types

import torch
import torch.nn.functional as F
from torch import nn

import framejit

FUZZ_SEED = 665566
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 2

G_COUNT = 1
G_SCALE = 0.5
G_FLAG = True
G_NAME = "g6"
G_LIST = [1, 2, 3]
G_T = torch.arange(4.0) * 1.0
G_D = {"a": 1, "b": 2}
G_OBJS = []
G_LOG = []


class FuzzError(Exception):
    pass


class Box:
    kind = "box"
    limit = 2

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
aux.K = 3
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


def f(w, m, dt):
    global G_FLAG, G_SCALE, G_T
    object.__setattr__(G_BOX, 'extra', 3)
    def fn1(a2):
        return a2 * 0.5 + (torch.rand(4, 4)).cumsum(-1)
    t3 = fn1((torch.eye(4)).mT)
    k4 = G_COUNT
    assert G_FLAG or True, 'never'
    m.t_()
    lz5 = Lazy()
    m[m > 0] = G_SCALE
    m.masked_fill_(m < 0, 0.0)
    L6 = list(itertools.chain(G_LIST, [1]))
    k4 += 4
    return L6


_KEPT = {}


def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    VARY = 0
    B = (3, 3, 3)[call]
    n_value = (1, 1, 1)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    w = torch.randn(4, 4, generator=g).requires_grad_()
    m = torch.randn(4, 4, generator=g)
    dt = {'a': torch.randn(4, generator=g), 'b': torch.randn(4, generator=g)}
    args = (w, m, dt, )
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return args, kwargs
