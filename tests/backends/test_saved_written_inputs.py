"""Differential tests: a graph that writes an input and saves it for backward
(framejit/backends/passes/saved_written_inputs.py).

Eagerly an op saves the tensor itself, and any later in-place write to it (in the same graph, after a
graph break, in the caller) makes the backward through that op raise. AOT autograd's functionalized
graph saved a copy, so the compiled backward ran (fuzz seed 561230). Each test runs eagerly and
compiled and compares results, raised errors and gradients.
"""
import pytest
import torch

from framejit.backends.passes.saved_written_inputs import saves_a_written_input
from tests.differential import check_script, outcome

G = torch.arange(4.0)


def _fresh():
    global G
    G = torch.arange(4.0) - 1.5
    return torch.ones(4, 4, requires_grad=True), torch.ones(2, 4)


def write_then_save_then_break_then_write(w, x):
    view = G[:]
    view[0] = 5.0                       # the input written...
    t = torch.mm(x, torch.minimum(w, G))  # ...then saved by minimum
    print("break")
    view.add_(G)                        # written again after the break: eager's backward raises
    return t


def write_then_save(w, x):
    G[1:3] *= 2.0
    return torch.mm(x, torch.minimum(w, G))


def save_then_write(w, x):
    t = torch.mm(x, torch.maximum(w, G))
    G.add_(1.0)
    return t


def read_only(w, x):
    return torch.mm(x, torch.minimum(w, G))


def _backward_script(write_after=False):
    def script(f):
        w, x = _fresh()
        seen = [outcome(f, w, x)]
        if seen[0][0] == "returned":
            if write_after:
                G.mul_(3.0)             # the caller writes the saved input before the backward
            seen.append(outcome(lambda: seen[0][1].sum().backward()))
        seen += [w.grad, G.clone()]
        return seen
    return script


CASES = [(write_then_save_then_break_then_write, False), (write_then_save, False), (write_then_save, True),
         (save_then_write, False), (read_only, True), (read_only, False)]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn, write_after", CASES, ids=[f"{fn.__name__}-{int(w)}" for fn, w in CASES])
def test_backward_through_a_saved_input_written_later(fn, write_after, backend):
    check_script(fn, _backward_script(write_after), backend=backend)


def test_inductor_backward_through_a_written_then_saved_input():
    check_script(write_then_save_then_break_then_write, _backward_script(), backend="inductor")


def _graph(fn, *args):
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    import framejit
    framejit.reset()
    framejit.compile(fn, backend=keep)(*args)
    return graphs[0]


def test_only_graphs_that_save_a_written_input_leave_the_compiler():
    w, x = _fresh()
    assert saves_a_written_input(_graph(write_then_save, w, x))
    assert not saves_a_written_input(_graph(read_only, w, x))
    with torch.no_grad():                                     # nothing saved
        assert not saves_a_written_input(_graph(write_then_save, w, x))

    def add_then_write(w, x):                                 # add saves neither operand
        t = torch.mm(x, w + G)
        G.add_(1.0)
        return t
    assert not saves_a_written_input(_graph(add_then_write, w, x))
    # BatchNorm in training writes its running statistics: no reason to leave the compiler
    bn = torch.nn.BatchNorm1d(4).train()
    assert not saves_a_written_input(_graph(lambda x: bn(x) * 2, torch.randn(3, 4, requires_grad=True)))
