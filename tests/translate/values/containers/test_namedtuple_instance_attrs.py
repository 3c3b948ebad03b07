"""A namedtuple argument whose class can hold instance attributes (a subclass without __slots__) is
modelled as a tuple only while its __dict__ is empty, and that is guarded (context.wrap): hasattr(t, "c")
and getattr(t, "c", 3) answered from an empty instance must not be reused for one holding `c`. A name
its class does not define raises AttributeError (getattr's default applies), as in eager."""
import collections
import typing

import pytest
import torch

import framejit
from tests.differential import check, randn


class Typed(typing.NamedTuple):
    a: torch.Tensor
    b: int


class TypedSub(Typed):
    pass


Plain = collections.namedtuple("Plain", "a b")


class PlainSub(Plain):
    pass


def scaled_if_present(t):
    if hasattr(t, "c"):
        return t.a * t.c
    return t.a + t.b


def scaled_or_default(t):
    return t.a * getattr(t, "c", 3) + t.b


def _tuple(cls, c):
    t = cls(randn(2), 1)
    if c is not None:
        t.c = c
    return t


@pytest.mark.parametrize("cls", [TypedSub, PlainSub])
@pytest.mark.parametrize("fn", [scaled_if_present, scaled_or_default])
def test_instance_attributes_of_a_namedtuple_argument_are_seen(fn, cls):
    framejit.reset()
    compiled = framejit.compile(fn)
    for c in (None, 5, None, 7):
        assert torch.equal(compiled(_tuple(cls, c)), fn(_tuple(cls, c))), c


@pytest.mark.parametrize("cls", [Typed, Plain])
def test_getattr_default_of_a_plain_namedtuple_in_one_graph(cls):
    check(scaled_or_default, cls(randn(2), 1), fullgraph=True, graphs=1)
