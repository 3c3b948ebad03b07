"""Differential tests: user classes with a custom metaclass (values/objects/class_calls.py).

A metaclass's own `__call__` (registries that tag instances, singletons, caches) was a graph break at
every construction; a metaclass `__instancecheck__` was not asked at all for objects made in the frame
(isinstance answered from the type: a wrong answer). Now `__call__` is inlined with its
`super().__call__(...)` (type.__call__: __new__ then __init__), `__instancecheck__` is inlined as
CPython calls it, and class attributes through the metaclass (`__getattr__`, properties) keep working."""
import torch
from torch import nn

from tests.differential import check, randn


class Registry(type):
    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        obj.tag = cls.__name__
        return obj


class Scaler(metaclass=Registry):
    def __init__(self, k, shift=0.0):
        self.k = k
        self.shift = shift


class Shifted(Scaler):
    def __new__(cls, k, shift=0.0):
        obj = super().__new__(cls)
        obj.created_by_new = True
        return obj


def tagging(x):
    s = Scaler(3, shift=1.0)
    t = Shifted(2)
    return x * s.k + s.shift, s.tag, t.tag, t.created_by_new


def test_metaclass_call_inlined():
    check(tagging, randn(3), graphs=1, breaks=0)


class Singleton(type):
    def __call__(cls, *args, **kwargs):
        if "_instance" not in cls.__dict__:
            cls._instance = super().__call__(*args, **kwargs)
        return cls._instance


def test_singleton_created_inside_the_frame():
    class Settings(metaclass=Singleton):
        def __init__(self):
            self.scale = 4.0

    def f(x):
        return x * Settings().scale, Settings() is Settings()

    check(f, randn(3))


class Duck(type):
    def __instancecheck__(cls, obj):
        return hasattr(obj, "quack")

    def __getattr__(cls, name):
        return len(name)

    @property
    def doubled(cls):
        return cls.base * 2


class Quacker(metaclass=Duck):
    base = 5


class Bird:
    def __init__(self):
        self.quack = True


def instance_checks(x):
    b = Bird()
    s = Scaler(1)
    return (x * Quacker.doubled + Quacker.abc, isinstance(b, Quacker), isinstance(s, Quacker),
            isinstance(x, (int, Quacker)), isinstance(Quacker(), Quacker))


def test_metaclass_instancecheck_getattr_property():
    check(instance_checks, randn(3), graphs=1, breaks=0)


class Block(nn.Module):
    """A model building its helpers through a registry metaclass in forward."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        scale = Scaler(0.5, shift=2.0)
        return self.fc(x) * scale.k + scale.shift


def test_module_one_graph():
    torch.manual_seed(0)
    check(Block(), randn(2, 4), graphs=1, breaks=0, grads=True)
