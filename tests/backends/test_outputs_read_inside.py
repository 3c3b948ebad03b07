"""A value a graph hands out and also reads itself ends the Function that makes it: a backward through it
checks and frees only what eager's backward through it would.

Why: AOT autograd runs a graph (or a region of one) as one autograd.Function, which saves what the
gradients of all its outputs need and checks the versions of all of it in every backward. Eagerly a
backward through `t3` reaches only t3's own history: `t4 = t3 * (t3 * g)`, live across a graph break
and written `g` after it, made `t3.sum().backward()` raise "modified by an inplace operation" where
eager's runs (fuzz seed 533128). backends/passes/state_regions.py cuts a grad part after each such value
(`_stages`). Each case runs eagerly and compiled on fresh copies and compares errors, results and grads.
A stage that saves nothing runs as eager's ops (tests/backends/test_second_backward.py, seed 710248).
"""
import pytest
import torch

import framejit

G = torch.arange(4.0) - 1.5


def product_live_across_a_break(x):
    t3 = (-x).abs()
    t4 = t3 * (t3 * G)
    print("break")
    G[0] = 5.0
    return t3


def product_returned_beside_its_factor(x):
    t3 = torch.tanh(x)
    t4 = t3 * G
    return t3, t4


def _run(fn, write_after):
    global G
    G = torch.arange(4.0) - 1.5
    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)
    try:
        out = fn(x)
        first = out[0] if isinstance(out, tuple) else out
        if write_after:
            G[0] = 5.0
        first.sum().backward()
        error = None
    except RuntimeError as err:
        first, error = None, str(err).split(" is at version")[0]
    return first, error, x.grad


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn,write_after", [(product_live_across_a_break, False),
                                            (product_returned_beside_its_factor, True)])
def test_backward_through_an_output_read_inside(fn, write_after, backend, capsys):
    framejit.reset()
    eager_out, eager_error, eager_grad = _run(fn, write_after)
    out, error, grad = _run(framejit.compile(fn, backend=backend), write_after)
    assert error == eager_error
    assert (grad is None) == (eager_grad is None)
    if eager_grad is not None:
        torch.testing.assert_close(out.detach(), eager_out.detach())
        torch.testing.assert_close(grad, eager_grad)
