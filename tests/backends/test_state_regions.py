"""aot_eager on graphs where grad is off somewhere (backends/passes/state_regions.py): no_grad and
inference_mode blocks inside a graph run as eager runs them, and only the regions with grad on go
through AOT autograd.

Differential (tests/differential.py's check: outputs, gradients of every leaf, mutated inputs, global
torch state after the call), plus what it does not see: the process's state after a failing call, the
random numbers drawn after a dead random op, and that no conversion fell back.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import framejit
from framejit.backends.passes.state_regions import regions
from tests.differential import check, randn

G = torch.arange(4.0)


def view_made_under_no_grad(x):
    with torch.no_grad():
        rows = x.view(x.shape[0], -1)
    return rows, x * 2


def parameter_written_under_no_grad(x, lin):
    with torch.no_grad():
        lin.bias.add_(0.1)
    return lin.weight.sum() * x


def inference_block_writes_global(y):
    z = y * 2
    with torch.inference_mode():
        G.view(2, 2).add_(1.0)
    return z.sin()


def enable_grad_inside_no_grad(x, w):
    with torch.no_grad():
        a = x * w
        with torch.enable_grad():
            b = (x * w).sum()
    return a, b


EARLIER = set()


@pytest.fixture(autouse=True)
def _earlier_metrics():
    EARLIER.clear()
    EARLIER.update(id(m) for m in framejit.metrics())


def _no_fallback():
    """No conversion since the test started fell back to eager."""
    failed = [(m.co_name, m.fail_type, m.fail_reason) for m in framejit.metrics()
              if m.fail_type is not None and id(m) not in EARLIER]
    assert failed == []


@pytest.mark.parametrize("fn, args", [
    (view_made_under_no_grad, (randn(3, 4, requires_grad=True),)),
    (enable_grad_inside_no_grad, (randn(4, requires_grad=True), randn(4, seed=1, requires_grad=True))),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_grad_off_regions_match_eager(fn, args, backend):
    check(fn, *args, backend=backend, grads=True, graphs=1)
    _no_fallback()


def test_parameter_written_under_no_grad_keeps_none_grad():
    lin = nn.Linear(4, 4)
    eager_lin, compiled_lin = copy.deepcopy(lin), copy.deepcopy(lin)
    x = randn(4, requires_grad=True)
    parameter_written_under_no_grad(x, eager_lin).sum().backward()
    compiled = framejit.compile(parameter_written_under_no_grad, backend="aot_eager")
    compiled(x.detach().requires_grad_(), compiled_lin).sum().backward()
    assert eager_lin.bias.grad is None and compiled_lin.bias.grad is None
    assert torch.equal(eager_lin.bias, compiled_lin.bias) and torch.equal(eager_lin.weight.grad, compiled_lin.weight.grad)
    _no_fallback()


def test_inference_block_leaves_process_state_clean():
    before = G.clone()
    try:
        check(inference_block_writes_global, randn(4), backend="aot_eager", graphs=1)
        _no_fallback()
        assert not torch.is_inference_mode_enabled() and torch.is_grad_enabled()
        assert torch.ones(2).add(1).sum().item() == 4.0      # the process still runs ops
    finally:
        G.copy_(before)


def test_region_raising_restores_modes():
    def f(x, idx):
        with torch.no_grad():
            y = x * 2
            with torch.inference_mode():
                z = y.index_select(0, idx)         # an index fake tensors cannot judge: raises at run time
        return z + 1
    compiled = framejit.compile(f, backend="aot_eager")
    compiled(randn(4), torch.tensor([0, 1]))
    with pytest.raises(IndexError):
        compiled(randn(4), torch.tensor([0, 9]))
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_dead_random_op_draws_as_eager():
    def f(v, w):
        unused = F.dropout(v, p=0.5, training=True)
        return w @ torch.ones(4)
    args = (randn(4, requires_grad=True), randn(4, 4, seed=1, requires_grad=True))
    torch.manual_seed(0)
    f(*args)
    eager_next = torch.rand(3)
    framejit.reset()
    compiled = framejit.compile(f, backend="aot_eager")
    torch.manual_seed(0)
    compiled(*args)
    assert torch.equal(torch.rand(3), eager_next)
    _no_fallback()


def test_regions_follow_the_blocks():
    def f(x):
        a = x + 1
        with torch.no_grad():
            b = a * 2
        return a, b
    gm = torch.fx.symbolic_trace(lambda x: x)          # any graph: build one by hand below
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(torch.add, (x, 1))
    graph.call_function(torch._C._set_grad_enabled, (False,))
    b = graph.call_function(torch.mul, (a, 2))
    graph.call_function(torch._C._set_grad_enabled, (True,))
    graph.output((a, b))
    assert [kind for kind, _ in regions(graph, True)] == ["grad", "switch", "plain", "switch"]
    assert [kind for kind, _ in regions(graph, False)] == ["plain", "switch", "plain", "switch"]


def test_parts_with_separate_histories_are_separate_functions():
    # autograd.grad through one part frees what that part saved; backward through the other still runs
    def f(w, m):
        out = torch.mm(w, m).select(0, 0)
        gw, = torch.autograd.grad((w * w * 2.0).sum(), [w])
        return out, gw

    w, m = randn(4, 4, requires_grad=True), randn(4, 4, seed=1)
    check(f, w, m, backend="aot_eager", grads=True)
    _no_fallback()
