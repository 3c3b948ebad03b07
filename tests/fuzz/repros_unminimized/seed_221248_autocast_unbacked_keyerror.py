# aot_eager + autocast: framejit-bug fallback 'backend failed: KeyError: zuf0' (an unbacked size symbol) on call 1 (fuzz --gen-version 3 seed 221248; not minimized, not triaged; reproduces on main 34a4b44 too: python -m tests.fuzz --replay THIS_FILE --timeout 120)
# framejit fuzz program 221248 (python -m tests.fuzz --replay THIS_FILE)
import contextlib
import dataclasses
import math
import random
import types

import torch
import torch.nn.functional as F
from torch import nn

import framejit

FUZZ_SEED = 221248
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 2

G_COUNT = 3
G_SCALE = 1.5
G_FLAG = True
G_NAME = "g6"
G_LIST = [1, 2, 3]
G_T = torch.arange(4.0) * -1.0
G_D = {"a": 1, "b": 2}
G_OBJS = []
G_LOG = []


class FuzzError(Exception):
    pass


class Box:
    kind = "box"
    limit = 4

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


def f(lst, y, box, x):
    global G_COUNT, G_NEW, G_SCALE, G_T
    vc1 = Vec(G_T, float((G_COUNT // 2)))
    G_BOX.kind = (type(box).__name__ + '-' + str((0 // 2)))
    G_LIST.append((G_LIST[0] if G_LIST else -1))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x.sub_(torch.ones_like(x), alpha=0.5)
        G_SCALE *= 0.5
    dt2 = {'b': (torch.lerp((G_T * G_SCALE), torch.atan2(box.w, torch.ones_like(box.w)), 0.25)).detach(), 'c': scale_a(y)}
    with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
        ac3 = torch.mv((((x).t() @ (x)) / (F.normalize(torch.full((4, 4), 2.0), dim=-1).abs() + 1)), ((dt2.get('a', torch.ones(4)))[:] + aux.factor))
        k4 = random.randint(0, 3)
    ac3 = ac3.float()
    if torch.lerp(torch.lerp(x, x, 0.25), torch.zeros(x.shape[0], 4), 0.25).requires_grad:
        L5 = []
    if G_FLAG:
        _ = int('x')
    y = (scale_b(torch.full((4, 4), 3.0))).max(dim=0).values
    ob6 = Box(((torch.zeros_like(x)).amax(0) + box.scaled(G_T)), G_COUNT, str(G_COUNT).upper())
    h7 = G_SEQ.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    t8 = G_SEQ(torch.hypot(y, (torch.linspace(-1, 1, 4) - ac3)))
    h7.remove()
    G_HOOKS.append(len(G_SEQ._forward_hooks) + len(G_SEQ._forward_pre_hooks))
    k9 = box.level
    return {'lst': lst}


_KEPT = {}


def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    if 'args' in _KEPT:
        return _KEPT['args']
    VARY = 0
    B = (3, 1, 3)[call]
    n_value = (2, 2, 3)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    lst = [1, 2, n_value]
    y = torch.randn(4, generator=g)
    box = Box(torch.randn(4, generator=g).requires_grad_(), n_value, 'b' + str(call))
    if call == 1:
        box.extra = 5
    x = torch.randn(B, 4, generator=g)
    args = (lst, y, box, x, )
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return args, kwargs
