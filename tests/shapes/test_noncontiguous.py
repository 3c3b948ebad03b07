"""Non-contiguous inputs get symbolic sizes too: a transposed tensor, a permuted one, a column slice.

Their fakes' strides are expressions of the size symbols where the layout follows from the sizes (a
transpose: `x.stride(1) == x.shape[0]`) and symbols of their own where it does not (a slice's row
stride), as torch's fakes make them; each stride is guarded. Every call is compared with eager on fresh
copies, and conversions are counted."""
import pytest
import torch

import framejit
from tests.differential import check_calls, randn


def f(x, y):
    return (x @ y).relu() + x.sum(0, keepdim=True).T.sum()


def transposed(n, m, seed):
    return randn(m, n, seed=seed).t()


def column_slice(n, m, seed):
    return randn(n, m + 3, seed=seed)[:, :m]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_transposed_and_sliced_inputs_one_graph_under_dynamic_true(backend):
    calls = [(transposed(n, m, i), column_slice(m, m, 10 + i)) for i, (n, m) in enumerate([(3, 4), (5, 6), (7, 4), (6, 9)])]
    _, counter = check_calls(f, calls, backend=backend, dynamic=True, atol=1e-5)
    assert counter.frame_count == 1


def test_permuted_input_under_automatic_dynamic():
    def g(x):
        return x.softmax(-1).sum(1) * x.shape[2]
    calls = [(randn(2, n, 5, seed=n).permute(0, 2, 1),) for n in (3, 4, 6, 8, 11)]   # (2, 5, n)
    _, counter = check_calls(g, calls, atol=1e-5)
    assert counter.frame_count == 2        # static, then dynamic for every later n


def test_strides_are_guarded():
    def g(x):
        return x * 2 + x.stride(0)
    calls = [(transposed(3, 4, 0),), (transposed(5, 6, 1),),    # one entry for every transpose
             (column_slice(5, 6, 2),),                           # other strides: a new entry
             (randn(5, 6, seed=3),)]                             # contiguous: another
    _, counter = check_calls(g, calls, dynamic=True)
    assert counter.frame_count == 3


def test_expanded_input_keeps_its_zero_stride():
    def g(x):
        return x.cumsum(0) + 1
    calls = [(randn(1, n, seed=n).expand(4, n),) for n in (3, 5, 7)] + [(randn(4, 7, seed=9),)]
    _, counter = check_calls(g, calls, dynamic=True)
    assert counter.frame_count == 2


def test_a_storage_offset_stays_static():
    def g(x):
        return x + 1
    base = randn(8, 5)
    _, counter = check_calls(g, [(base[2:, :3],), (base[3:, :4],)], dynamic=True)
    assert counter.frame_count == 2


def test_explain_names_stride_guards():
    report = framejit.explain(f, dynamic=True)(transposed(3, 4, 0), column_slice(4, 4, 1))
    text = str(report)
    assert "x.stride(1) == x.shape[0]" in text and "y.stride(0)" in text


def write_one_read_other(a, b):
    a.add_(1)
    return b * 2


def on_one_storage(n):
    w = randn(n, n, seed=n)
    return w, w.t()


def on_two_storages(n):
    w = randn(n, n, seed=n)
    return w, w.t().clone()


@pytest.mark.parametrize("dynamic", [True, None])
def test_inputs_on_one_storage_stay_static_so_the_graph_sees_the_write(dynamic):
    # a symbolic fake cannot share its fake storage with another input's: AOT autograd then saw two
    # unrelated inputs, and `b` read the value before `a.add_(1)` (wrong result from the second call on)
    calls = [on_one_storage(n) for n in (3, 4, 5)] + [on_two_storages(n) for n in (3, 4, 6)]
    check_calls(write_one_read_other, calls, backend="aot_eager", dynamic=dynamic)
