"""`p.grad = None` / `p.grad = g` on a tensor the frame received (module.zero_grad(), hand-written
optimizer steps): a side effect made after the graph, seen by later reads of `p.grad` in the frame
(values/attrs.py store_input_grad). Eager and compiled run on fresh copies; grads, outputs and graph
counts are compared."""
import torch
import torch.nn as nn

import framejit
from framejit.backends import CompileCounter


def _model():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    m(torch.randn(2, 3)).sum().backward()          # every parameter holds a grad
    return m


def zero_then_forward(m, x):
    m.zero_grad()
    return m(x).sum(), [p.grad is None for p in m.parameters()]


def set_grad_then_read(m, x):
    for p in m.parameters():
        p.grad = torch.ones_like(p) * 2
    return m(x).sum() + sum(p.grad.sum() for p in m.parameters())


def _run(fn, compiled):
    m = _model()
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))
    out = (framejit.compile(fn, backend=compiled) if compiled else fn)(m, x)
    return out, [None if p.grad is None else p.grad.clone() for p in m.parameters()]


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_zero_grad_in_one_graph_leaves_grads_none():
    framejit.reset()
    counter = CompileCounter("eager")
    eager, compiled = _run(zero_then_forward, None), _run(zero_then_forward, counter)
    assert _same(eager, compiled)
    assert all(g is None for g in compiled[1])
    assert counter.frame_count == 1
    assert framejit.explain(zero_then_forward)(_model(), torch.randn(5, 3)).graph_break_count == 0


def test_grad_stored_then_read_in_one_graph():
    framejit.reset()
    counter = CompileCounter("eager")
    eager, compiled = _run(set_grad_then_read, None), _run(set_grad_then_read, counter)
    assert _same(eager, compiled)
    assert counter.frame_count == 1
    assert framejit.explain(set_grad_then_read)(_model(), torch.randn(5, 3)).graph_break_count == 0


def test_a_grad_of_another_shape_stays_a_break_and_raises_as_eagerly():
    def bad(m, x):
        m[0].weight.grad = torch.ones(3)
        return m(x)
    outcomes = []
    for compiled in (None, "eager"):
        try:
            _run(bad, compiled)
            outcomes.append(None)
        except RuntimeError as e:
            outcomes.append(type(e))
    assert outcomes[0] is RuntimeError and outcomes == [outcomes[0]] * 2
