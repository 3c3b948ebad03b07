"""A size the ShapeEnv specialized (automatic dynamic made it symbolic, then iterating over the tensor
guarded it equal to a number) and folded as a constant (x.shape, x.size(0), len(x), x.stride(),
x.numel()) was a torch.SymInt of the conversion inside the Const: it reached the program as a real
SymInt (fuzzer seed 712629: a global counter became `a SymInt object`). values/base.py's Const holds the
number. Differential: eager and compiled runs over calls of changing sizes, comparing results, globals
and the types of what was stored.
"""
import pytest
import torch

import framejit
from tests.differential import randn

G_STORE = []


def helper_add(step):
    G_STORE.append(step)


def shape_through_a_callee_that_breaks(x):
    rows = torch.stack([row * 2 for row in x])    # iterating specializes x.shape[0]
    helper_add(x.shape[0])
    print("stored")                               # a graph break in the frame too
    return rows


def size_numel_len_stored(x):
    rows = torch.stack([row + 1 for row in x])
    G_STORE.append((x.size(0), x.numel(), len(x)))
    return rows


def whole_shape_and_stride_returned(x):
    rows = torch.stack([row - 1 for row in x])
    return rows, x.shape, x.stride(), x.size()


@pytest.mark.parametrize("fn", [shape_through_a_callee_that_breaks, size_numel_len_stored,
                                whole_shape_and_stride_returned])
def test_specialized_sizes_reach_the_program_as_ints(fn, capsys):
    def run(f):
        G_STORE.clear()
        results = [f(randn(rows, 3, seed=rows)) for rows in (2, 4, 3)]
        return results, list(G_STORE)

    framejit.reset()
    eager, eager_store = run(fn)
    compiled, compiled_store = run(framejit.compile(fn))
    assert repr(compiled_store) == repr(eager_store)
    for e, c in zip(eager, compiled):
        e, c = (e, c) if isinstance(e, tuple) else ((e,), (c,))
        for a, b in zip(e, c):
            if isinstance(a, torch.Tensor):
                torch.testing.assert_close(b, a)
            else:
                assert repr(b) == repr(a) and type(b) is type(a)
                assert not any(isinstance(v, torch.SymInt) for v in b)
    for stored in compiled_store:
        for v in stored if isinstance(stored, tuple) else (stored,):
            assert type(v) is int
