"""Differential tests: the Python protocol of user objects, passed in or made in the frame
(translate/values/objects/user_dunders.py).

len(), truth (through __bool__, through __len__, neither), iteration (a generator __iter__ and one
returning an iterator), `in`, subscripts, and the arithmetic and comparison dunders with their
reflected and in-place forms, Python's operand order included (a subclass's reflected method first),
are the class's own Python methods inlined: one graph, no break. transformers' DynamicCache (`len`,
`if cache:`) is one such class.
"""
import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

x3 = randn(3, seed=1)
ONE = dict(graphs=1, breaks=0)


class Bag:
    """A container written in Python."""

    def __init__(self, *items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        yield from self.items

    def __getitem__(self, i):
        return self.items[i]

    def __contains__(self, key):
        return key in ("a", "b")


class Flag:
    def __init__(self, on):
        self.on = on

    def __bool__(self):
        return self.on


class Plain:
    pass


class Vec:
    """A value type over a tensor: every arithmetic spelling."""

    def __init__(self, t):
        self.t = t

    def __add__(self, other):
        if isinstance(other, Vec):
            return Vec(self.t + other.t)
        if isinstance(other, (int, float, torch.Tensor)):
            return Vec(self.t + other)
        return NotImplemented

    def __radd__(self, other):
        return Vec(other + self.t)

    def __mul__(self, k):
        return Vec(self.t * k)

    __rmul__ = __mul__

    def __iadd__(self, other):
        self.t = self.t + (other.t if isinstance(other, Vec) else other)
        return self

    def __eq__(self, other):
        return isinstance(other, Vec) and self.t.shape == other.t.shape

    def __lt__(self, other):
        return self.t.numel() < other.t.numel()


class LoudVec(Vec):
    def __radd__(self, other):                # a subclass's reflected method goes first
        return LoudVec(self.t * 100 + (other.t if isinstance(other, Vec) else other))


def length_and_truth(x, bag, empty, flag_on, flag_off, plain):
    out = x * len(bag)
    if bag:
        out = out + 1
    if not empty:
        out = out + 2
    if flag_on and not flag_off:
        out = out + 3
    if plain:
        out = out + 4
    return out


def iteration_and_membership(x, bag):
    for item in bag:
        x = x + item
    a, b, c = bag
    listed = list(bag)
    return x + a * b * c + bag[1] + len(listed) + ("a" in bag) + ("z" in bag)


def arithmetic_of_inputs(v, w):
    s = v + w
    r = 2 + v
    t = v + 1.5
    m = 3 * v
    total = sum([v, w])               # 0 + v: int's __add__ does not know Vec, Vec.__radd__ does
    return s.t, r.t, t.t, m.t, total.t, v == w, v < w


def in_place_and_subclass_priority(v, loud):
    v += loud
    mixed = v + loud                  # LoudVec is a subclass overriding __radd__: it goes first
    return v.t, mixed.t


def arithmetic_of_objects_made_here(x):
    a, b = Vec(x), Vec(x * 2)
    c = 1 + a + b
    c += 3
    return c.t, a == b, len(Bag(x, x))


def tensor_on_the_left(x, v):
    return (x + v).t


def dynamic_cache_length_and_truth(x, cache):
    from transformers import DynamicCache
    made_here = DynamicCache()
    out = x * 2 if not cache else x
    return out + len(cache) + len(made_here) + bool(made_here)


def _empty_cache():
    transformers = pytest.importorskip("transformers")
    return transformers.DynamicCache()


@pytest.mark.parametrize(CASE_FIELDS, [
    case(length_and_truth, x3, Bag(1, 2), Bag(), Flag(True), Flag(False), Plain(), **ONE),
    case(iteration_and_membership, x3, Bag(x3, 2.0, 3.0), **ONE),
    case(arithmetic_of_inputs, Vec(x3), Vec(x3 * 3), **ONE),
    case(in_place_and_subclass_priority, Vec(x3), LoudVec(x3), **ONE),
    case(arithmetic_of_objects_made_here, x3, **ONE),
    case(tensor_on_the_left, x3, Vec(x3), **ONE),
    case(dynamic_cache_length_and_truth, x3, _empty_cache(), **ONE),
])
def test_user_protocol(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
