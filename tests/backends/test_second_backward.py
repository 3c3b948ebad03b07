"""A second backward through values whose eager ops saved nothing runs compiled as it runs eagerly; one
through values that saved something raises as eagerly.

Why: AOT autograd runs a graph (or a part of one) as one autograd.Function, and a Function's backward
reads `ctx.saved_tensors`, which raises "Trying to backward through the graph a second time" after any
earlier backward without retain_graph went through it, even when nothing was saved. Eager's per-op nodes
raise only where an op saved a tensor. Fuzz seed 710248: `t1 = lerp(w, e, 0.25)` shared a Function with
`w.pow(2).sum()`; a first backward through both, then autograd.grad through `t1 @ t1`, raised compiled
only. Fixed by backends/passes/state_regions.py (a stage split into its unconnected pieces) and
backends/passes/nothing_saved.py (a graph or piece whose eager ops save nothing runs as those ops).
Each case runs eagerly and compiled on fresh inputs and compares results, errors and grads.
"""
import pytest
import torch

import framejit

G = torch.arange(4.0) - 1.5


def lerp_beside_a_product(w, e):
    t1 = torch.lerp(w, e, 0.25)
    ((w * (t1.sign() * 2.0)).sum() + w.pow(2).sum()).backward()
    gr, = torch.autograd.grad((w * (w / ((t1 @ t1).abs() + 1))).sum() + w.pow(2).sum(), [w])
    return gr


def lerp_beside_a_global_write(w, e):
    t1 = torch.lerp(w, e, 0.25)
    G.copy_(G * 1.0)
    ((w * t1.sign()).sum() + w.pow(2).sum()).backward()
    gr, = torch.autograd.grad((t1 @ t1).sum(), [w])
    return gr


def shape_ops_live_across_a_break(w, e):
    t1 = (w.t() + e).reshape(2, 8)[:, 1:].neg()
    (t1.exp().sum() + (w * w).sum()).backward()
    gr, = torch.autograd.grad(t1.sum() * 3.0, [w])
    return gr


def product_live_across_a_break(w, e):
    t1 = w.sin() * e                     # sin saves w: eager's second backward raises too
    (t1.sum() + w.pow(2).sum()).backward()
    gr, = torch.autograd.grad(t1.sum(), [w])
    return gr


CASES = [lerp_beside_a_product, lerp_beside_a_global_write, shape_ops_live_across_a_break,
         product_live_across_a_break]


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 4, generator=g).requires_grad_(), torch.randn(4, generator=g)


def _outcome(fn, *args):
    try:
        return fn(*args), None
    except RuntimeError as err:
        return None, str(err).split(".")[0]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", CASES, ids=[c.__name__ for c in CASES])
def test_second_backward_after_a_break(fn, backend):
    framejit.reset()
    w, e = _inputs()
    eager_out, eager_error = _outcome(fn, w, e)
    cw, ce = _inputs()
    out, error = _outcome(framejit.compile(fn, backend=backend), cw, ce)
    assert error == eager_error
    if eager_error is None:
        torch.testing.assert_close(out, eager_out)
        torch.testing.assert_close(cw.grad, w.grad)


def pointwise(x, y):
    return -torch.lerp(x, y, 0.5) + y - 1.0


def views(x, y):
    return torch.cat([x.t(), y.expand(3, 3)]).sum(0)


def saving(x, y):
    return (x * x + y).sum(0)


WHOLE = [(pointwise, None), (views, None), (saving, "Trying to backward through the graph a second time")]


def _twice(fn, x, y):
    out = fn(x, y)
    out.sum().backward()
    try:
        out.sum().backward()
        return out, None
    except RuntimeError as err:
        return out, str(err).split(" (")[0]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn,error", WHOLE, ids=[c.__name__ for c, _ in WHOLE])
def test_result_differentiated_twice(fn, error, backend):
    if backend == "inductor" and fn is not pointwise:
        pytest.skip("inductor: one small case")
    framejit.reset()
    x, y = torch.randn(3, 3, requires_grad=True), torch.randn(3)
    cx, cy = x.detach().clone().requires_grad_(), y.clone()
    eager_out, eager_error = _twice(fn, x, y)
    out, compiled_error = _twice(framejit.compile(fn, backend=backend), cx, cy)
    assert eager_error == error
    assert compiled_error == eager_error
    torch.testing.assert_close(out, eager_out)
    torch.testing.assert_close(cx.grad, x.grad)


# A graph that saves something, with an output whose own ops save nothing (nothing_saved.split_free_outputs;
# fuzz seed 696236): the output is made by eager's ops after the compiled rest, so the caller's second
# backward through it meets eager's nodes.

def free_output_beside_a_loss(x):
    t5 = (x.view(x.shape[0], -1) + 0.5).roll(1, -1)
    (x * torch.sin(t5)).sum().backward()        # the saving part's backward, in the frame
    return t5


def free_output_beside_dropout(x):
    t = x.t().neg() - 1.0                        # (`* 2.0` would save the number, wrapped as a tensor)
    drawn = torch.rand(3)                        # a random value no output uses: still drawn
    (F_dropout(x.sin(), 0.5) * t.t()).sum().backward()
    return t, drawn.shape


def free_and_saving_outputs(x):
    free = x.neg().expand(2, 3, 4)
    kept = (x * x).sum(1)                        # saves x: a second backward through it raises as eagerly
    (free.sum() + kept.sum()).backward()
    return free, kept


def scaled_output_saves_its_number(x):
    t = x.t() * 2.0                              # MulBackward0 saves 2.0 as a tensor: eager's second backward raises
    (t.t() * x.sin()).sum().backward()
    return t


def F_dropout(t, p):
    return torch.nn.functional.dropout(t, p=p, training=True)


def _second_backward(out):
    try:
        (out * 3.0).sum().backward()
        return None
    except RuntimeError as err:
        return str(err).split(" (")[0]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [free_output_beside_a_loss, free_output_beside_dropout, free_and_saving_outputs,
                                scaled_output_saves_its_number])
def test_a_free_output_differentiated_again_by_the_caller(fn, backend):
    if backend == "inductor" and fn is not free_output_beside_a_loss:
        pytest.skip("inductor: one small case")
    framejit.reset()
    results = []
    for compiled in (False, True):
        torch.manual_seed(3)
        x = torch.arange(12.0).view(3, 4).div(7).requires_grad_()
        out = (framejit.compile(fn, backend=backend) if compiled else fn)(x)
        first = out[0] if isinstance(out, tuple) else out
        errors = [_second_backward(first)]
        if fn is free_and_saving_outputs:
            errors.append(_second_backward(out[1]))
        results.append((out, errors, x.grad.clone(), torch.rand(2), type(first.grad_fn).__name__))
    (eager_out, eager_errors, eager_grad, eager_next, eager_node), (out, errors, grad, next_draw, node) = results
    assert errors == eager_errors
    if fn is free_and_saving_outputs:
        assert eager_errors[0] is None and eager_errors[1] is not None
    elif fn is scaled_output_saves_its_number:
        assert eager_errors[0] is not None
    else:
        assert eager_errors == [None]
    torch.testing.assert_close(grad, eager_grad)
    assert torch.equal(next_draw, eager_next)                     # the same numbers were drawn
    assert node == eager_node                                      # eager's own node, not a Function's
