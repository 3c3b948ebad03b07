"""Differential tests: lazy modules (nn.LazyLinear) compiled before and after their first call
(translate/lookasides/lazy_modules.py): the first call materializes the parameters exactly as eagerly
(same random initialization, same RNG state after), at translation, and is one graph; later calls use it,
with eager's results and gradients, and no framejit failure. A random op traced before the first call
keeps the break (eager draws it first)."""
import copy
import warnings

import pytest
import torch

import framejit
from framejit.backends import CompileCounter
from tests.differential import randn


def lazy_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.LazyLinear(3), torch.nn.ReLU(), torch.nn.LazyLinear(2))


def calls_lazy(m, x):
    return m(x).tanh() * 2


def _same(a, b):
    assert type(a) is type(b)
    torch.testing.assert_close(a, b, atol=0, rtol=0)


def test_lazy_sequential_compiled_directly():
    eager = lazy_model()
    compiled_model = copy.deepcopy(eager)
    framejit.reset()
    counter = CompileCounter()
    compiled = framejit.compile(compiled_model, backend=counter)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)          # no framejit failure
        for i in range(3):
            x = randn(4, 5, seed=i, requires_grad=True)
            xc = x.detach().clone().requires_grad_()
            torch.manual_seed(10 + i)
            out = eager(x)
            torch.manual_seed(10 + i)
            out_c = compiled(xc)
            _same(out, out_c)
            out.sum().backward()
            out_c.sum().backward()
            _same(x.grad, xc.grad)
            for p, q in zip(eager.parameters(), compiled_model.parameters()):
                _same(p, q)
                _same(p.grad, q.grad)
    assert type(compiled_model[0]) is torch.nn.Linear
    assert counter.frame_count == 1          # the first call initialized it and compiled; no conversion since


def test_function_calling_a_lazy_module():
    eager = lazy_model()
    compiled_model = copy.deepcopy(eager)
    framejit.reset()
    counter = CompileCounter()
    compiled = framejit.compile(calls_lazy, backend=counter)
    for i in range(3):
        x = randn(4, 5, seed=i)
        torch.manual_seed(10 + i)
        out = calls_lazy(eager, x)
        torch.manual_seed(10 + i)
        _same(out, compiled(compiled_model, x))
    frames = counter.frame_count
    compiled(compiled_model, randn(4, 5, seed=9))
    assert counter.frame_count == frames            # no recompile once initialized


def test_uninitialized_parameter_read_is_a_break():
    def weight_shape_after_call(m, x):
        y = m(x)
        return y, m.weight.shape

    torch.manual_seed(0)
    eager = torch.nn.LazyLinear(2)
    compiled_model = copy.deepcopy(eager)
    framejit.reset()
    compiled = framejit.compile(weight_shape_after_call, backend=CompileCounter())
    x = randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        torch.manual_seed(1)
        a = weight_shape_after_call(eager, x)
        torch.manual_seed(1)
        b = compiled(compiled_model, x)
    _same(a[0], b[0])
    assert a[1] == b[1]


# ---- the first call compiled: parameters initialized at translation (fullgraph=True) ----------------

class LazyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.LazyLinear(6)
        self.b = torch.nn.LazyLinear(2)
        self.c = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def _first_call(make, fn_of, x, compiled=True):
    """(outputs of two calls, state_dict, RNG state after the first call, graphs) for a fresh module
    made under seed 0, first called under seed 1."""
    torch.manual_seed(0)
    module = make()
    counter = CompileCounter()
    fn = fn_of(module)
    if compiled:
        framejit.reset()
        fn = framejit.compile(fn, backend=counter, fullgraph=True)
    torch.manual_seed(1)
    first = fn(x)
    rng = torch.get_rng_state()
    graphs_after_first = counter.frame_count
    second = fn(x)
    assert counter.frame_count == graphs_after_first          # no conversion on the second call
    return [first, second], module.state_dict(), rng, graphs_after_first, type(module)


FIRST_CALLS = {
    "LazyLinear": (lambda: torch.nn.LazyLinear(5), lambda m: (lambda a: m(a) * 2), (4, 3)),
    "LazyConv2d": (lambda: torch.nn.LazyConv2d(4, 3), lambda m: (lambda a: m(a).relu()), (2, 3, 8, 8)),
    "LazyBatchNorm1d": (lambda: torch.nn.LazyBatchNorm1d(), lambda m: (lambda a: m(a) + 1), (4, 3)),
    "module_with_lazy_children": (LazyNet, lambda m: m, (4, 3)),
    "random_after_the_call": (lambda: torch.nn.LazyLinear(5), lambda m: (lambda a: torch.dropout(m(a), 0.5, True)),
                              (4, 3)),
}


@pytest.mark.parametrize("name", list(FIRST_CALLS))
def test_first_call_is_one_graph_as_eager(name):
    make, fn_of, shape = FIRST_CALLS[name]
    x = randn(*shape, seed=3)
    outs, params, rng, _, cls = _first_call(make, fn_of, x, compiled=False)
    outs_c, params_c, rng_c, graphs, cls_c = _first_call(make, fn_of, x)
    for a, b in zip(outs, outs_c):
        _same(a, b)
    assert list(params) == list(params_c)
    for k in params:
        _same(params[k], params_c[k])
    assert torch.equal(rng, rng_c)                   # the same numbers drawn, in the same order
    assert cls is cls_c
    assert graphs == 1


def test_random_op_before_the_first_call_keeps_eager_order():
    def fn_of(m):
        return lambda a: m(a + torch.rand(3))
    x = randn(4, 3, seed=3)
    torch.manual_seed(0)
    with pytest.raises(framejit.Unsupported, match="a random op before it"):
        framejit.compile(fn_of(torch.nn.LazyLinear(5)), backend=CompileCounter(), fullgraph=True)(x)
    outs, params, rng, _, _ = _first_call(lambda: torch.nn.LazyLinear(5), fn_of, x, compiled=False)
    torch.manual_seed(0)
    module = torch.nn.LazyLinear(5)
    framejit.reset()
    compiled = framejit.compile(fn_of(module), backend=CompileCounter())
    torch.manual_seed(1)
    first = compiled(x)
    assert torch.equal(rng, torch.get_rng_state())
    _same(outs[0], first)
    for k, v in module.state_dict().items():
        _same(params[k], v)
