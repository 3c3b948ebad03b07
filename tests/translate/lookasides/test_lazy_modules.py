"""Differential tests: lazy modules (nn.LazyLinear) compiled before and after their first call
(translate/lookasides/lazy_modules.py): the first call runs as Python and materializes the parameters
exactly as eagerly (same random initialization), later calls are one graph, with eager's results and
gradients, and no framejit failure."""
import copy
import warnings

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
    assert counter.frame_count == 1          # the first call ran as Python; the second compiled for good


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
