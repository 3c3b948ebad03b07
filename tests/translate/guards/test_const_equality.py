"""Constants that are not equal to themselves (NaN) must make guards that match the next call.

Before: `type(v) is float and v == nan` never held, so every call recompiled (and the function went to
plain Python at the recompile limit). The differential check's second call demands a cache hit.
"""
import decimal
import math

import pytest
import torch

import framejit
from framejit.translate.guards.const_equality import same_constant, self_equal
from tests.differential import check, randn

x34 = randn(3, 4, seed=1)
NAN = float("nan")
NAN_PAIR = (1.0, float("nan"))


def nan_global(x):
    return torch.nan_to_num(x + NAN, nan=2.0)


def nan_in_tuple_argument(x, t):
    return x * t[0], math.isnan(t[1])


def nan_default(x, fill=float("nan")):
    return torch.where(x > 0, x, torch.full_like(x, fill)).nan_to_num(), fill != fill


def nan_tuple_global(x):
    return x + NAN_PAIR[0], NAN_PAIR


@pytest.mark.parametrize("fn,args", [
    (nan_global, (x34,)),
    (nan_in_tuple_argument, (x34, (2.0, float("nan")))),
    (nan_default, (x34,)),
    (nan_tuple_global, (x34,)),
])
def test_nan_constants_hit_the_cache(fn, args):
    check(fn, *args, graphs=1)


def test_nan_guard_still_misses_on_a_number():
    def f(x, t):
        return x + t[1]

    framejit.reset()
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(f, backend=counter)
    for t in ((1.0, float("nan")), (1.0, float("nan")), (1.0, 2.0)):
        out = compiled(x34, t)
        assert torch.allclose(out, x34 + t[1], equal_nan=True)
    assert counter.frame_count == 2


def test_decimal_nan_argument_hits_the_cache():
    def f(x, d):
        return x * 2, d.is_nan()

    framejit.reset()
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(f, backend=counter)
    for _ in range(3):
        out, is_nan = compiled(x34, decimal.Decimal("NaN"))
        assert is_nan and torch.equal(out, x34 * 2)
    assert counter.frame_count == 1


def test_same_constant():
    nan = float("nan")
    assert not self_equal(nan) and not self_equal((1, (nan,))) and self_equal((1, 2.0))
    assert same_constant(float("nan"), nan) and same_constant((1, float("nan")), (1, nan))
    assert not same_constant(1.0, nan) and not same_constant((1, 2.0), (1, nan)) and not same_constant(nan, 1.0)
    assert not same_constant(decimal.Decimal("NaN"), nan)
    assert same_constant(decimal.Decimal("NaN"), decimal.Decimal("NaN"))
    assert same_constant(complex(nan, 0), complex(nan, 0)) and not same_constant(complex(nan, 0), complex(0, nan))
