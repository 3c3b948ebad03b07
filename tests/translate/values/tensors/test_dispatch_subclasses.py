"""Differential tests: tensor subclasses with their own __torch_dispatch__ (wrapper subclasses, as quantized
and low-precision weight formats write them) in a graph (values/tensors/tensor_subclasses.py,
dispatch_wrapper_input).

Before, every frame touching such a tensor broke at its first use ("Int8Weight defines __torch_dispatch__"):
a Linear with an int8 weight ran as Python around two graphs, a function of a logging tensor had no graph.
Now the graph takes the object itself (guarded on its type, its metadata and its inner tensors'), its
ops are graph nodes, the subclass's dispatch runs on fakes while translating and on the real object when
the graph runs, or is traced into the graph by backends that desugar subclasses (aot_eager, inductor)."""
import pytest
import torch
from torch import nn

import framejit
from tests.differential import check, randn
from tests.translate.values.tensors.dispatch_subclasses import Int8Weight, LoggedTensor


def _int8_linear(seed=0):
    torch.manual_seed(seed)
    lin = nn.Linear(8, 4)
    lin.weight = nn.Parameter(Int8Weight.quantize(lin.weight.detach()), requires_grad=False)
    return lin


class QuantizedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = _int8_linear(0)
        self.down = nn.Linear(4, 8)

    def forward(self, x):
        return self.down(self.up(x.relu() * 2).sigmoid()) + x


def test_int8_weight_linear_one_graph():
    check(QuantizedMLP(), randn(2, 8), graphs=1, breaks=0)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_int8_weight_under_desugaring_backends(backend):
    model = QuantizedMLP()
    counter = framejit.CompileCounter(backend)
    compiled = framejit.compile(model, backend=counter)
    for seed in (1, 2):
        x = randn(3, 8, seed=seed)
        torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-5)
    assert counter.frame_count == 1


def test_new_weight_values_are_used_and_other_formats_recompile():
    model = QuantizedMLP()
    compiled = framejit.compile(model)
    x = randn(2, 8)
    torch.testing.assert_close(compiled(x), model(x))
    model.up.weight = nn.Parameter(Int8Weight.quantize(torch.randn(4, 8)), requires_grad=False)
    torch.testing.assert_close(compiled(x), model(x))            # same layout: the new data is read
    data = model.up.weight.data_int8
    model.up.weight = nn.Parameter(Int8Weight(data.to(torch.int16), model.up.weight.scale), requires_grad=False)
    torch.testing.assert_close(compiled(x), model(x))            # an inner dtype changed: guarded


def logged_ops(a, b):
    c = a * 2 + b
    return c.sum(), c.shape, a.dtype


def _run_logged(fn, *args):
    LoggedTensor.log.clear()
    out = fn(*args)
    return out, list(LoggedTensor.log)


def test_logging_subclass_runs_its_dispatch_when_the_graph_runs():
    counter = framejit.CompileCounter()
    compiled = framejit.compile(logged_ops, backend=counter)
    args = (LoggedTensor(randn(3)), randn(3))
    eager, eager_log = _run_logged(logged_ops, *args)
    _run_logged(compiled, *args)          # the first call also translates (the dispatch runs on fakes too)
    second, second_log = _run_logged(compiled, *args)
    assert counter.frame_count == 1
    assert second_log == eager_log == ["mul.Tensor", "add.Tensor", "sum.default"]
    assert type(second[0]) is LoggedTensor and torch.equal(second[0].elem, eager[0].elem)
    assert second[1:] == eager[1:]


class ScaledTensor(torch.Tensor):
    """A __torch_function__ subclass that rescales every result (the non-wrapper kind)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        if func is torch.Tensor.add and isinstance(out, torch.Tensor):
            return out * 0.5
        return out


def torch_function_user(x, y):
    return (x + y).relu(), type(x + 1).__name__


def test_torch_function_subclass_one_graph():
    # (check() deep-copies its inputs, which this subclass does not support: compared here by hand)
    counter = framejit.CompileCounter()
    compiled = framejit.compile(torch_function_user, backend=counter)
    for seed in (0, 1):
        x, y = randn(3, seed=seed).as_subclass(ScaledTensor), randn(3, seed=seed + 5)
        (out, name), (want, want_name) = compiled(x, y), torch_function_user(x, y)
        assert type(out) is type(want) is ScaledTensor and name == want_name
        torch.testing.assert_close(out.as_subclass(torch.Tensor), want.as_subclass(torch.Tensor))
    assert counter.frame_count == 1
