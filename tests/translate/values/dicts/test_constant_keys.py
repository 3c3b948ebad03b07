"""Dicts whose keys are constant hashables other than str/int (values/dicts/constant_keys.py): tuples of
strings, floats, None, bools, frozensets, enum members (plain, str- and int-mixin, IntFlag), nested tuples.

A dict argument with such keys is modelled by its keys (a new dict per call hits the same entry, one graph
and no break), a lookup with such a key in a dict from outside the frame (a registry keyed by a str-Enum,
as diffusers' attention dispatch) is answered at translation and guarded, and the keys guard tells keys
apart that are equal but not the same key to the code (1 / True / 1.0, a str-Enum member / its string).
"""
import enum

import pytest
import torch

import framejit
from tests.differential import check, randn


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Backend(str, enum.Enum):
    NATIVE = "native"
    FLASH = "flash"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.IntFlag):
    R = 4
    W = 2


KEY_SETS = {
    "tuple_of_str": [("scale", "a"), ("shift", "b")],
    "nested_tuple": [(("a", 1), None), (("b", 2), 2.5)],
    "float_none_bool": [0.5, None, True],
    "frozenset": [frozenset({"a", "b"}), frozenset()],
    "plain_enum": [Color.RED, Color.BLUE],
    "str_enum": [Backend.NATIVE, Backend.FLASH],
    "int_enum": [Level.LOW, Level.HIGH],
    "int_flag": [Perm.R, Perm.R | Perm.W],
    "tuple_with_enum": [(Backend.NATIVE, 1), (Color.BLUE, "x")],
    "bytes": [b"k1", b"k2"],
}


def _table(keys):
    return {k: float(i + 2) for i, k in enumerate(keys)}


def lookup_in_iter_len(x, table, first, second):
    out = x * table[first] + table.get(second, 0.0)
    if first in table:
        out = out + 1
    for k, v in table.items():
        out = out * v
    return out, len(table), list(table), second in table


@pytest.mark.parametrize("kind", sorted(KEY_SETS))
def test_dict_argument_with_constant_keys_is_one_graph(kind):
    keys = KEY_SETS[kind]
    check(lookup_in_iter_len, randn(2, 3), _table(keys), keys[0], keys[1], graphs=1, breaks=0)


@pytest.mark.parametrize("kind", sorted(KEY_SETS))
def test_new_dict_each_call_hits_the_same_entry(kind):
    keys = KEY_SETS[kind]
    counter = framejit.backends.CompileCounter()
    fn = framejit.compile(lambda x, table: x * table[keys[0]] + table[keys[1]], backend=counter)
    x = randn(2, 3)
    for _ in range(3):
        torch.testing.assert_close(fn(x, _table(keys)), x * 2.0 + 3.0)
    assert counter.frame_count == 1


def key_types(x, table):
    return x + len(table), [type(k).__name__ for k in table]


@pytest.mark.parametrize("first, second", [
    ({1: 1.0}, {True: 1.0}),
    ({1: 1.0}, {1.0: 1.0}),
    ({"native": 1.0}, {Backend.NATIVE: 1.0}),
    ({("a", 1): 1.0}, {("a", True): 1.0}),
    ({frozenset({1}): 1.0}, {frozenset({True}): 1.0}),
])
def test_equal_keys_of_another_type_miss_the_guard(first, second):
    fn = framejit.compile(key_types)
    x = randn(2)
    for table in (first, second, first):
        torch.testing.assert_close(fn(x, table)[0], key_types(x, table)[0])
        assert fn(x, table)[1] == key_types(x, table)[1]


def writes_tuple_keys(x, table):
    table[("scale", "b")] = table.pop(("scale", "a")) * 2
    table[Backend.FLASH] = 3.0
    return x * table[("scale", "b")], table


def test_mutated_dict_with_constant_keys_is_written_back():
    check(writes_tuple_keys, randn(2), {("scale", "a"): 1.5, Backend.NATIVE: 0.5}, graphs=1, breaks=0)


# ---- a registry from outside the frame, looked up with a constant key (diffusers' get_active_backend) ----

REGISTRY = {Backend.NATIVE: torch.relu, Color.RED: torch.tanh, Level.HIGH: torch.sigmoid,
            Perm.R | Perm.W: torch.neg, ("a", Backend.FLASH): torch.exp}


def dispatch(x, key):
    if key in REGISTRY:
        fn = REGISTRY[key]
        return REGISTRY.get(key, torch.abs)(x) + fn(x)
    return x + 1


@pytest.mark.parametrize("key", [Backend.NATIVE, Color.RED, Level.HIGH, Perm.R | Perm.W, ("a", Backend.FLASH),
                                 Backend.FLASH, Color.BLUE])
def test_registry_lookup_with_constant_key_is_in_the_graph(key):
    check(dispatch, randn(2, 3), key, graphs=1, breaks=0)


def active(x):
    return REGISTRY[Backend.NATIVE](x)


def test_registry_change_between_calls_is_noticed():
    fn = framejit.compile(active)
    x = randn(4)
    torch.testing.assert_close(fn(x), torch.relu(x))
    old = REGISTRY[Backend.NATIVE]
    try:
        REGISTRY[Backend.NATIVE] = torch.abs
        torch.testing.assert_close(fn(x), torch.abs(x))
    finally:
        REGISTRY[Backend.NATIVE] = old


def set_members(x, members, probe):
    out = x * len(members)
    if probe in members:
        out = out + 1
    return out, sorted(members, key=repr), probe not in members


@pytest.mark.parametrize("kind", ["tuple_of_str", "plain_enum", "str_enum", "int_flag", "tuple_with_enum"])
def test_set_argument_of_constant_members_is_matched_by_value(kind):
    keys = KEY_SETS[kind]
    check(set_members, randn(2), set(keys), keys[0], graphs=1, breaks=0)
    counter = framejit.backends.CompileCounter()
    fn = framejit.compile(set_members, backend=counter)
    for _ in range(3):
        fn(randn(2), set(keys), keys[0])
    assert counter.frame_count == 1
