"""framejit.register_bytecode_hook: hooks see (original code, generated entry code), may replace it,
and stop being called after handle.remove()."""

import dis
import types

import pytest
import torch

import framejit
from framejit.convert.hooks import BYTECODE_HOOKS


@pytest.fixture(autouse=True)
def no_leftover_hooks():
    before = len(BYTECODE_HOOKS)
    yield
    assert len(BYTECODE_HOOKS) == before, "a test left a bytecode hook registered"


def double(x):
    return x * 2


def test_hook_sees_original_and_transformed_code():
    seen = []
    handle = framejit.register_bytecode_hook(lambda original, transformed: seen.append((original, transformed)))
    try:
        f = framejit.compile(double)
        torch.testing.assert_close(f(torch.ones(2)), torch.full((2,), 2.0))
    finally:
        handle.remove()
    ((original, transformed),) = seen
    assert original is double.__code__
    assert isinstance(transformed, types.CodeType) and transformed.co_name == "__fj_entry"
    assert transformed.co_varnames[:1] == ("x",)
    assert any(i.argval == "__fj_graph" for i in dis.get_instructions(transformed))


def test_hook_replacement_is_used():
    def replacement(x):
        return "replaced"

    handle = framejit.register_bytecode_hook(lambda original, transformed: replacement.__code__)
    try:
        assert framejit.compile(double)(torch.ones(2)) == "replaced"
    finally:
        handle.remove()


def test_removed_hook_is_not_called():
    calls = []
    handle = framejit.register_bytecode_hook(lambda o, t: calls.append(o))
    handle.remove()
    handle.remove()                       # removing twice is harmless
    framejit.compile(double)(torch.ones(2))
    assert calls == []


def test_hooks_chain_in_registration_order():
    order = []

    def first(original, transformed):
        order.append("first")

    def second(original, transformed):
        order.append("second")

    with framejit.register_bytecode_hook(first), framejit.register_bytecode_hook(second):
        framejit.compile(double)(torch.ones(2))
    assert order == ["first", "second"]


def test_bad_hooks(tmp_path):
    with pytest.raises(TypeError, match="must be callable"):
        framejit.register_bytecode_hook("not callable")
    with framejit.register_bytecode_hook(lambda o, t: 42):
        f = framejit.compile(double, debug_dir=tmp_path)
        with pytest.warns(RuntimeWarning, match="must return a code object or None"):
            torch.testing.assert_close(f(torch.ones(2)), torch.full((2,), 2.0))   # falls back to eager
