"""A tensor whose autograd history autograd refuses to read (an output of unbind/split/a tensor's rows
whose base was written since) is a graph input like any other (translate/graph/fake_inputs.py): eager
lets the frame carry it, detach it, read its shape and requires_grad, and raises only when an op uses
it or is_leaf is read; compiled does the same, without a fallback. Before the fix its fake could not be
made (is_leaf raised inside fake_of_input) and the frame fell back with a framejit-failed warning
(fuzzer seed 709501: a resume function receiving such rows)."""
import random
import warnings

import pytest
import torch

import framejit
from tests.differential import check_calls


def _break():
    return random.randint(0, 3)


def carried(rows, w):
    rows.append(torch.ones(4))
    return len(rows)


def detached(rows, w):
    return rows[0].detach() * 2


def metadata(rows, w):
    return rows[0].shape, rows[0].requires_grad, rows[0].dtype


def op_on_it(rows, w):
    return rows[0] + 1                   # eager raises: "Output 0 of Unbind is a view and its base ..."


def written(rows, w):
    return rows[0].mul_(2)               # eager raises: "... is being modified inplace"


def is_leaf(rows, w):
    return rows[0].is_leaf               # eager raises


def stacked(rows, w):
    return torch.stack(rows)


def returned(rows, w):
    return rows


def _after_base_written(use):
    def f(w):
        rows = list(torch.unbind(w))
        with torch.no_grad():
            w.t().zero_()
        _break()                         # the rows reach a resume function as its inputs
        return use(rows, w)
    f.__name__ = f.__qualname__ = f"{use.__name__}_after_base_written"
    return f


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("use", [carried, detached, metadata, op_on_it, written, is_leaf, stacked, returned],
                         ids=lambda f: f.__name__)
def test_resume_function_receives_views_with_unreadable_history(use, backend):
    fn = _after_base_written(use)
    calls = [(torch.randn(4, 4, generator=torch.Generator().manual_seed(i), requires_grad=True),) for i in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)          # a framejit failure would warn
        compiled, _ = check_calls(fn, calls, backend=backend)
    assert compiled._framejit_state.eager_reason is None


def _unreadable_row():
    w = torch.randn(4, 4, requires_grad=True)
    rows = w.unbind()
    with torch.no_grad():
        w.zero_()
    return rows[1]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_caller_passes_a_view_with_unreadable_history(backend):
    def reads_data(t):
        return t.detach() * 2, t.shape[0]

    def uses_it(t):
        return t + 1

    compiled = framejit.compile(reads_data, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out, n = compiled(_unreadable_row())
        assert n == 4 and torch.equal(out, torch.zeros(4))
        with pytest.raises(RuntimeError) as eager_error:
            uses_it(_unreadable_row())
        with pytest.raises(RuntimeError) as compiled_error:
            framejit.compile(uses_it, backend=backend)(_unreadable_row())
    assert str(compiled_error.value) == str(eager_error.value)
