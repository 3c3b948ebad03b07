"""Differential tests: a C method bound to a real object is called through the lookaside of its
descriptor (translate/calls.py: `d.get(k)` is `dict.get(d, k)`), and dict lookups may use keys that
compare by identity (classes, typing special forms), named in guards by a bound object.

huggingface_hub's validators (run by every transformers config `__setattr__`) look their validator up
in a module-level dict keyed by typing origins: `_BASIC_TYPE_VALIDATORS.get(get_origin(tp))`.
"""
import typing

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, randn, run_case

x3 = randn(3, seed=1)
ONE = dict(graphs=1, breaks=0)


def _double(x):
    return x * 2


def _negate(x):
    return -x


HANDLERS = {list: _double, typing.Union: _negate, None: _double, 3: _negate}


def lookup_by_class_key(x):
    handler = HANDLERS.get(list)
    other = HANDLERS.get(typing.Union)
    missing = HANDLERS.get(dict, _negate)
    return handler(x) + other(x) + missing(x) + (tuple in HANDLERS) + HANDLERS[3](x)


@pytest.mark.parametrize(CASE_FIELDS, [
    case(lookup_by_class_key, x3, **ONE),
])
def test_bound_builtin_calls(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_a_changed_table_is_noticed():
    compiled = framejit.compile(lookup_by_class_key)
    assert torch.equal(compiled(x3), lookup_by_class_key(x3))
    HANDLERS[list] = _negate
    try:
        assert torch.equal(compiled(x3), lookup_by_class_key(x3))
    finally:
        HANDLERS[list] = _double
