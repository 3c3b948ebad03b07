"""A tensor a graph computes and nothing reads adds nothing to the compiled call's backward.

Why: backends/passes/dead_tensors.py hands dead tensors out of the traced graph so no compiler drops
their ops (a dead random op still draws). Handed out as they were, they were differentiable outputs of
AOT autograd's Function: the Function saved what their gradients need and checked those tensors'
versions in every backward, so `t4 = t3 * (t3 * g)` left unused and `g` written after the call made
`t3.sum().backward()` raise "modified by an inplace operation" where eager's runs (fuzz seed 533128's
family), and a module applied to a dead value had its parameters reached (a zero .grad where eager's
stays None). Each case runs eagerly and compiled on fresh copies, writes after the call, backwards,
and compares the error, the results and every leaf's .grad.
"""
import pytest
import torch

import framejit


def dead_product_of_written_input(x, g, lin):
    t3 = (-x).abs()
    t4 = t3 * (t3 * g)
    return t3


def dead_module_output(x, g, lin):
    t3 = x.abs() * g
    t8 = lin(t3.sign() - 0.25)
    return t3


def dead_view_of_product(x, g, lin):
    t3 = torch.tanh(x)
    t4 = (t3 * g)[0]
    return t3 * 2


def dead_product_in_a_grad_region(x, g, lin):
    t3 = (-x).abs()
    t4 = t3 * (t3 * g)
    with torch.no_grad():               # the graph runs region by region (passes/state_regions.py)
        y = x * 2
    return t3 + y


def _inputs():
    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)
    g = torch.arange(4.0) - 1.5
    lin = torch.nn.Linear(4, 4)
    return x, g, lin


def _run(fn):
    x, g, lin = _inputs()
    try:
        out = fn(x, g, lin)
        g[0] = 5.0                          # a write after the call, before the backward
        out.sum().backward()
        error = None
    except RuntimeError as err:
        out, error = None, str(err).split(" is at version")[0]
    return out, error, [None if t.grad is None else t.grad.clone() for t in (x, lin.weight, lin.bias)]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [dead_product_of_written_input, dead_module_output, dead_view_of_product,
                                dead_product_in_a_grad_region])
def test_dead_tensor_adds_nothing_to_backward(fn, backend):
    framejit.reset()
    eager_out, eager_error, eager_grads = _run(fn)
    out, error, grads = _run(framejit.compile(fn, backend=backend))
    assert error == eager_error
    if eager_out is not None:
        torch.testing.assert_close(out.detach(), eager_out.detach())
    for got, want in zip(grads, eager_grads):
        assert (got is None) == (want is None)
        if want is not None:
            torch.testing.assert_close(got, want)
