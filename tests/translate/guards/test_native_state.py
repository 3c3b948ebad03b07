"""Grad mode, CPU autocast, jit tracing and the default dtype read natively (translate/guards/native_state.py): the
native answers agree with torch's under each state, and guards rendered with them notice every change."""
from unittest import mock

import pytest
import torch

import framejit
from framejit.translate.guards import native_state
from tests.test_api import PassThrough

pytestmark = pytest.mark.skipif(native_state._DTYPE_CODES is None, reason="native state readers not set up")


def _holds(kind, expected):
    env = {}

    def bind(obj):
        env["s"] = obj
        return "s"
    return eval(native_state.bits_term(native_state.state_bits(kind, expected), bind), env)


def test_native_state_agrees_with_torch():
    for enabled in (False, True):
        with torch.set_grad_enabled(enabled):
            assert _holds("grad", enabled) and not _holds("grad", not enabled)
    assert _holds("autocast", False) and not _holds("autocast", True)
    with torch.autocast("cpu"):
        assert _holds("autocast", True) and not _holds("autocast", False)
    old = torch.get_default_dtype()
    try:
        for dtype in native_state._DTYPE_CODES:
            torch.set_default_dtype(dtype)
            assert _holds("dtype", dtype)
            assert not any(_holds("dtype", other) for other in native_state._DTYPE_CODES if other != dtype)
    finally:
        torch.set_default_dtype(old)
    assert native_state.state_bits("dtype", torch.int64) is None      # never a default dtype


def test_native_tracing_agrees_with_torch_inside_and_outside_a_trace():
    seen = []

    def probe(x):
        seen.append((_holds("tracing", True), _holds("tracing", False), torch._C._get_tracing_state() is not None))
        return x * 2
    assert _holds("tracing", False) and not _holds("tracing", True)
    torch.jit.trace(probe, torch.ones(2), check_trace=False)
    assert seen == [(True, False, True)]
    assert _holds("tracing", False)


def test_a_compiled_module_called_under_jit_trace_goes_through_nn_module_call():
    torch.manual_seed(0)
    model = PassThrough()                          # a transformers-style (self, *args, **kwargs) forward
    compiled = framejit.compile(model)
    x = torch.randn(2, 3)
    torch.testing.assert_close(compiled(x), model(x))        # the module-call dispatcher's fast path is set
    slow = []
    original = torch.nn.Module._slow_forward

    def spy(self, *args, **kwargs):
        slow.append(self.lin is model.lin)
        return original(self, *args, **kwargs)
    with mock.patch.object(torch.nn.Module, "_slow_forward", spy):
        traced = torch.jit.trace(compiled, x, check_trace=False)
    assert slow == [True]                          # nn.Module.__call__ saw the tracing state
    x2 = torch.randn(2, 3)
    torch.testing.assert_close(traced(x2), model(x2))
    torch.testing.assert_close(compiled(x2), model(x2))


def test_entries_checked_natively_notice_each_state_change():
    counter = framejit.CompileCounter()

    @framejit.compile(backend=counter)
    def f(x):
        return x * 2 + torch.ones(3)                  # a factory without dtype: the default dtype is guarded

    x = torch.randn(3, requires_grad=True)
    code = "\n".join(framejit.explain(f)(x).transformed_code)
    assert "__fj_grad_enabled" not in code and "get_default_dtype" not in code, code
    assert f(x).requires_grad
    with torch.no_grad():
        assert not f(x).requires_grad
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        assert f(x).dtype == torch.float64          # only the default dtype changed
    finally:
        torch.set_default_dtype(old)
    assert f(x).dtype == torch.float32
    assert counter.frame_count == 3
