"""In-place writes into tensors whose elements share memory (backends/overlapping_writes.py): AOT
autograd's functionalization wrote them back into the base as if the elements were distinct (seed
709265: `G_T.expand(4, 4).zero_()` left G_T = -3 * G_T). Differential: each program runs eagerly and
compiled on fresh copies (tests/differential.py compares results, inputs, globals, gradients), with the
two backends that functionalize.
"""
import pytest
import torch

import framejit
from framejit.backends.passes.overlapping_writes import writes_overlapping_memory
from tests.differential import check, randn

G_T = torch.arange(4.0) * 0.25


def expand_of_global_zeroed(w):
    G_T.expand(4, 4).zero_()
    return w * 2.0


def expand_of_input_filled(b, w):
    b.expand(3, 4).fill_(2.0)
    return (b * w).sum()


def rows_of_an_expand_filled(b):
    b.unsqueeze(0).expand(4, 4)[1:3].fill_(1.5)
    return b + 1


def stride_zero_as_strided_zeroed(b):
    b.as_strided((3, 2), (0, 1)).zero_()
    return b.clone()


def expand_masked_fill(b):
    b.expand(2, 4).masked_fill_(torch.ones(2, 4, dtype=torch.bool), 1.0)
    return b * 3


def expand_setitem(b):
    b.expand(4, 4)[0] = 3.0
    return b


def refused_write_raises_as_eager(b):
    b.expand(2, 4).add_(1.0)             # eager refuses: the same error compiled
    return b


def unfold_filled(b):
    b.unfold(0, 2, 1).fill_(7.0)
    return b


CASES = [(expand_of_global_zeroed, (randn(4, 4, requires_grad=True),)),
         (expand_of_input_filled, (torch.arange(4.0), randn(3, 4, seed=1, requires_grad=True))),
         (rows_of_an_expand_filled, (torch.arange(4.0),)),
         (stride_zero_as_strided_zeroed, (torch.arange(4.0),)),
         (expand_masked_fill, (torch.arange(4.0),)),
         (expand_setitem, (torch.arange(4.0),)),
         (refused_write_raises_as_eager, (torch.arange(4.0),)),
         (unfold_filled, (torch.arange(4.0),))]


@pytest.mark.filterwarnings("error:framejit failed")      # no backend failure, no eager fallback
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn, args", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_write_into_overlapping_view_matches_eager(fn, args, backend):
    G_T.copy_(torch.arange(4.0) * 0.25)
    check(fn, *args, backend=backend, grads=True)


def windows_filled(x):
    x.unfold(0, 2, 1).fill_(1.0)                # symbolic rows; consecutive windows share rows
    return x * 2


def write_a_column(x):
    x[:, 0].zero_()                             # no overlap: stays AOT-compiled
    return x * 2


@pytest.mark.filterwarnings("error:framejit failed")
def test_symbolic_sizes_decide_without_guards():
    counter = framejit.CompileCounter("aot_eager")
    framejit.reset()
    for fn in (windows_filled, write_a_column):
        compiled = framejit.compile(fn, backend=counter, dynamic=True)
        for rows in (3, 5):
            x, y = randn(rows, 4, seed=rows), randn(rows, 4, seed=rows)
            torch.testing.assert_close(compiled(x), fn(y))
            torch.testing.assert_close(x, y)
    assert counter.frame_count == 2               # one graph each, for both sizes
    windows, column = counter.graphs
    assert writes_overlapping_memory(windows)
    assert not writes_overlapping_memory(column)
