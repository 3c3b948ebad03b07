"""Differential tests: namedtuple classes made in the frame and typing subscripts in annotations.

A namedtuple made inside the function (collections.namedtuple or typing.NamedTuple's functional form)
is used, unpacked and returned; nested functions annotated with typing forms (`List[int]`,
`Optional[torch.Tensor]`, `Dict[str, int]`, `list[int]`) are made and called on every call.
"""
import collections
import typing
from typing import Dict, List, Optional, Tuple, Union

import pytest
import torch

from tests.differential import CASE_FIELDS, case, run_case, randn

ONE = dict(fullgraph=True, graphs=1)

x34 = randn(3, 4, seed=1)


def namedtuple_made_in_frame(x):
    Point = collections.namedtuple("Point", ["x", "y"])
    p = Point(x, 2)
    q = p._replace(y=3)
    a, b = q
    # (not q itself: Python makes a new Point class on every call, so no two calls' instances share a type)
    return p.x * p.y + a * b, tuple(q), Point._fields, type(p).__name__, isinstance(q, tuple)


def namedtuple_field_string_and_defaults(x):
    Opts = collections.namedtuple("Opts", "scale shift", defaults=[0.5])
    o = Opts(2.0)
    return x * o.scale + o.shift, o._asdict()


def typing_namedtuple_functional(x):
    Pair = typing.NamedTuple("Pair", [("a", torch.Tensor), ("b", int)])
    p = Pair(x, 4)
    return p.a * p.b, tuple(p), type(p).__name__


def annotations_of_nested_function(x):
    def helper(items: List[int], bias: Optional[torch.Tensor] = None) -> Dict[str, int]:
        return {"n": len(items)}

    def other(t: Union[torch.Tensor, Tuple[int, ...]], k: list[int]) -> dict[str, float]:
        return {"k": float(sum(k))}

    return x + helper([1, 2])["n"] + other(x, [1, 2, 3])["k"]


def typing_subscript_value(x):
    alias = Dict[str, List[int]]
    return x * 2, alias, Optional[int]


CASES = [
    case(namedtuple_made_in_frame, x34, **ONE),
    case(namedtuple_field_string_and_defaults, x34, **ONE),
    case(typing_namedtuple_functional, x34, **ONE),
    case(annotations_of_nested_function, x34, **ONE),
    case(typing_subscript_value, x34, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
