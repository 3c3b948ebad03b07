"""Outputs of multi-output view ops (unbind, split, chunk, a tensor's rows) leave an aot_eager graph as
the views eager has (backends/multi_output_views.py): made again by the op itself after the graph's
autograd.Function, so autograd refuses what it refuses eagerly, in eager's words, and only then.

Before the fix they were outputs of the Function: a write to their base under no_grad made any later
use raise "Output 0 of CompiledFunction is a view ..." (eager: "Output 0 of Unbind ..."), a split of a
value the graph computed did not raise at all, and a resume function receiving them could not be
converted (fuzzer seed 709501). Differential: eager vs aot_eager on fresh copies, results, exceptions
(type and message), gradients; and no fallback."""
import random
import warnings

import pytest
import torch

import framejit
from tests.differential import check_calls


def _break():
    return random.randint(0, 3)          # a graph break: the views cross it as a resume function's inputs


def rows_used_after_base_written(w):
    rows = list(torch.unbind(w))
    with torch.no_grad():
        w.t().zero_()
    _break()
    return rows[0] + 1


def rows_by_iteration_summed_after_base_written(w):
    rows = [r for r in w]
    with torch.no_grad():
        w.mul_(2)
    _break()
    return rows[0].sum()


def chunk_written_in_place(w):
    a, b = w.chunk(2)
    _break()
    return a.mul_(2)


def split_of_computed_value_after_it_was_written(w):
    h = w * 2
    parts = h.split(2)
    with torch.no_grad():
        h.zero_()
    _break()
    return parts[0] + 1


def tensor_split_views_carried_across_break(w):
    parts = list(torch.tensor_split(w, 2, dim=1))
    with torch.no_grad():
        v = w.t()
        v.zero_()
        _break()
    parts.append(torch.ones(4))
    return len(parts)


def unbind_views_returned(w):
    a, b = (w * 1).unbind()[:2]
    return a, b, a * 3


def split_views_backward(w):
    h = torch.tanh(w)
    top, bottom = h.split([1, 3])
    return top * 2, bottom.sum()


@pytest.mark.parametrize("fn", [rows_used_after_base_written, rows_by_iteration_summed_after_base_written,
                                chunk_written_in_place, split_of_computed_value_after_it_was_written,
                                tensor_split_views_carried_across_break, unbind_views_returned,
                                split_views_backward], ids=lambda f: f.__name__)
def test_multi_output_views_behave_as_eager(fn):
    calls = [(torch.randn(4, 4, generator=torch.Generator().manual_seed(i), requires_grad=True),) for i in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)          # a framejit failure would warn
        compiled, _ = check_calls(fn, calls, backend="aot_eager", grads=True)
    assert compiled._framejit_state.eager_reason is None


def test_remade_views_are_eager_unbind_views():
    def f(w):
        return list(w.unbind())
    out = framejit.compile(f, backend="aot_eager")(torch.randn(3, 2, requires_grad=True))
    assert [type(t.grad_fn).__name__ for t in out] == ["UnbindBackward0"] * 3
    assert len({t.grad_fn for t in out}) == 1                   # siblings of one node, as eagerly


def views_beside_an_unrelated_write(w, buf):
    rows = list(w.unbind())
    buf.add_(1)                          # a write the views do not see: they are still remade
    with torch.no_grad():
        w.zero_()
    _break()
    return rows[0] + 1


def views_of_a_value_written_in_the_graph(w):
    h = w * 2
    parts = h.split(2)
    h.add_(1)                            # eager: the parts' history is rewritten; the backward raises
    return parts[0] + 1, h


@pytest.mark.parametrize("fn", [views_beside_an_unrelated_write, views_of_a_value_written_in_the_graph],
                         ids=lambda f: f.__name__)
def test_graphs_with_writes(fn):
    def inputs(i):
        g = torch.Generator().manual_seed(i)
        w = torch.randn(4, 4, generator=g, requires_grad=True)
        return (w, torch.zeros(3)) if fn is views_beside_an_unrelated_write else (w,)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        compiled, _ = check_calls(fn, [inputs(i) for i in range(2)], backend="aot_eager", grads=True)
    assert compiled._framejit_state.eager_reason is None
