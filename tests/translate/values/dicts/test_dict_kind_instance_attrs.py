"""A dict-kind argument (a user dict subclass, OrderedDict, Counter) is modelled as a DictValue only while
its instance __dict__ is empty (values/dicts/dict_kinds.py wrap_input): that emptiness is guarded, so a later
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


# ---- the frame writes a dict-kind argument's own attributes through d.__dict__ (dict_kinds.instance_attr)

def store_through_dict_then_read(d, x):
    if not hasattr(d, "_cache"):
        d.__dict__["_cache"] = {}
    d.__dict__["_cache"]["key"] = x + 1
    d.__dict__["n"] = len(d)
    return d._cache["key"] * d.n, hasattr(d, "n"), getattr(d, "missing", 7), sorted(d.__dict__)


class WithProperty(collections.OrderedDict):
    @property
    def value(self):
        return self.__dict__.get("_value", 0)

    @value.setter
    def value(self, v):
        self.__dict__["_value"] = v


def property_through_dict(m, x):
    m.value = 100
    return x * m.value, m.value


@pytest.mark.parametrize("cls", [PlainSub, OrderedSub])
def test_store_through_instance_dict_in_one_graph(cls):
    from tests.differential import check
    d = cls(a=1)
    out = check(store_through_dict_then_read, d, randn(2), fullgraph=True, graphs=1)
    assert out[1] is True


def test_stores_land_in_the_argument():
    d = PlainSub(a=1)
    framejit.reset()
    framejit.compile(store_through_dict_then_read, fullgraph=True)(d, torch.ones(2))
    assert torch.equal(d._cache["key"], torch.full((2,), 2.0)) and d.n == 1


def test_property_setter_writing_instance_dict():
    from tests.differential import check
    m = WithProperty()
    check(property_through_dict, m, randn(2), fullgraph=True, graphs=1)
    framejit.reset()
    m = WithProperty()
    framejit.compile(property_through_dict, fullgraph=True)(m, randn(2))
    assert m.__dict__ == {"_value": 100}


def plain_store_then_read(d, x):
    d.tag = x * 2
    return d.tag + d["a"], hasattr(d, "tag"), vars(d)["tag"]


@pytest.mark.parametrize("cls", [PlainSub, OrderedSub])
def test_plain_attribute_store_is_replayed(cls):
    from tests.differential import check
    check(plain_store_then_read, cls(a=1), randn(2), fullgraph=True, graphs=1)
    framejit.reset()
    d = cls(a=1)
    framejit.compile(plain_store_then_read, fullgraph=True)(d, torch.ones(2))
    assert torch.equal(d.tag, torch.full((2,), 2.0))
