"""A dict-kind argument (a user dict subclass, OrderedDict, Counter) is modelled as a DictValue only while
its instance __dict__ is empty (values/dict_kinds.py wrap_input): that emptiness is guarded, so a later
call with an instance that holds attributes (`d.scale = 5`) is a cache miss, not code that answered
hasattr(d, "scale") / getattr(d, "scale", 3) from the empty one."""
import collections

import pytest
import torch

import framejit
from tests.differential import randn


class PlainSub(dict):
    pass


class OrderedSub(collections.OrderedDict):
    pass


def scaled_if_present(d, x):
    if hasattr(d, "scale"):
        return x * d.scale
    return x + d["a"]


def scaled_or_default(d, x):
    return x * getattr(d, "scale", 3) + d["a"]


def _dict(cls, scale):
    d = cls(a=1)
    if scale is not None:
        d.scale = scale
    return d


@pytest.mark.parametrize("cls", [PlainSub, OrderedSub, collections.OrderedDict, collections.Counter])
@pytest.mark.parametrize("fn", [scaled_if_present, scaled_or_default])
def test_instance_attributes_of_a_dict_argument_are_seen(fn, cls):
    framejit.reset()
    compiled = framejit.compile(fn)
    for scale in (None, 5, None, 7):
        x = randn(2)
        assert torch.equal(compiled(_dict(cls, scale), x), fn(_dict(cls, scale), x)), scale
