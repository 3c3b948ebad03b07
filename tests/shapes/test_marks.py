"""framejit.mark_dynamic / maybe_mark_dynamic / mark_static."""
import pytest
import torch

import framejit
from tests.differential import check_calls, randn


def marked(t, dim, **kw):
    framejit.mark_dynamic(t, dim, **kw)
    return t


def test_mark_dynamic_is_symbolic_from_the_first_conversion_even_with_dynamic_false():
    def f(x):
        return x.cumsum(1) * x.shape[1]
    calls = [(marked(randn(2, n, seed=n), 1),) for n in (4, 5, 9)]
    compiled, counter = check_calls(f, calls, dynamic=False)
    assert counter.frame_count == 1
    assert compiled._framejit_state.conversions == 1


def test_mark_dynamic_bounds_are_guarded():
    def f(x):
        return x + 1
    calls = [(marked(randn(n, 3, seed=n), 0, min=2, max=8),) for n in (4, 6, 8)] + [(marked(randn(9, 3), 0, min=2, max=16),)]
    _, counter = check_calls(f, calls, dynamic=False)
    assert counter.frame_count == 2          # 9 is outside [2, 8]


def test_maybe_mark_dynamic():
    def f(x):
        return x * 3
    calls = []
    for n in (4, 5, 6):
        t = randn(n, 2, seed=n)
        framejit.maybe_mark_dynamic(t, 0)
        calls.append((t,))
    _, counter = check_calls(f, calls)
    assert counter.frame_count == 1


def test_mark_static_keeps_a_dim_static_under_dynamic_true():
    def f(x):
        return x.sum(0)
    calls = []
    for n in (4, 5, 6):
        t = randn(n, 3, seed=n)
        framejit.mark_static(t, 0)
        calls.append((t,))
    _, counter = check_calls(f, calls, dynamic=True)
    assert counter.frame_count == 3


def test_mark_static_on_a_module_returns_it_and_marks_its_tensors():
    lin = torch.nn.Linear(3, 4)
    assert framejit.mark_static(lin) is lin
    assert all("_framejit_static_dims" in p.__dict__ for p in lin.parameters())


def test_marks_check_their_arguments():
    with pytest.raises(IndexError):
        framejit.mark_dynamic(torch.ones(2, 3), 2)
    with pytest.raises(TypeError):
        framejit.mark_dynamic([1, 2], 0)
    with pytest.raises(ValueError):
        framejit.mark_dynamic(torch.ones(2, 3), 0, min=5, max=3)
