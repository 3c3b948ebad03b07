"""Sizes read off fake tensors under automatic dynamic shapes never leave the conversion as SymInts
(framejit/translate/values/sym_free.py): a dim the ShapeEnv pinned to a number (here by iterating the
tensor's rows) folds to a plain int wherever the frame uses it -- a torch factory after a break, a
return value, an attribute stored on a user object, a global. Before the fix the folded torch.Size
kept its SymInts: `torch.ones(x.shape[0])` crashed in the break function (fuzzer seeds 602196,
703102, 706369) and `x.shape` came back to the caller as a SymInt."""
import random

import pytest
import torch

from framejit.translate.values.base import Const
from framejit.translate.values.numbers.sym_concrete import holds_symbolic
from tests.differential import check_calls, randn

SIZES = (2, 4, 3, 5, 4)      # a size change on call 1 makes dim 0 symbolic


class Box:
    pass


def _rows_doubled(x):
    return torch.stack([row * 2 for row in x])        # iterating rows pins dim 0 to a number


def factory_after_break(x):
    k = random.randint(0, 3)                          # a break: the rest runs in a break function
    _rows_doubled(x)
    return torch.ones(x.shape[0]) + k * 0


def factory_in_graph(x):
    _rows_doubled(x)
    return torch.ones(x.shape[0]), torch.zeros(x.numel()), x.new_zeros(x.size()), torch.ones(len(x))


def sizes_returned(x):
    _rows_doubled(x)
    return x.shape, x.size(0), x.numel(), x.stride(), len(x), f"{x.shape[0]}"


def sizes_stored(x, box):
    _rows_doubled(x)
    box.n = x.shape[0]
    box.shape = x.shape
    return box.n


G_SHAPE = None


def size_in_global(x):
    global G_SHAPE
    _rows_doubled(x)
    G_SHAPE = x.shape
    return x + 1


def _calls(fn):
    if fn is sizes_stored:
        return [(randn(b, 3, seed=b), Box()) for b in SIZES]
    return [(randn(b, 3, seed=b),) for b in SIZES]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", [factory_after_break, factory_in_graph, sizes_returned, sizes_stored,
                                size_in_global], ids=lambda f: f.__name__)
def test_pinned_symbolic_size_is_a_plain_int(fn, backend):
    compiled, _ = check_calls(fn, _calls(fn), backend=backend)
    assert compiled._framejit_state.eager_reason is None


def test_returned_sizes_are_ints_not_symints():
    compiled, _ = check_calls(sizes_returned, _calls(sizes_returned))
    shape, size0, numel, stride, length, _ = compiled(randn(4, 3))
    assert all(type(v) is int for v in (*shape, size0, numel, *stride, length))


def test_const_folds_symbols_to_numbers_and_guards_unpinned_ones():
    from framejit.shapes.symbols import ShapeContext
    shapes = ShapeContext()
    n = shapes.number(7, "n", "n")                     # a symbolic int, not pinned
    size = torch.Size([n, 3])
    assert holds_symbolic(size) and holds_symbolic((1, [n])) and not holds_symbolic((1, [2]))
    folded = Const(size).value
    assert folded == torch.Size([7, 3]) and not holds_symbolic(folded) and type(folded[0]) is int
    assert type(Const(n * 2).value) is int and Const((n, "a")).value == (7, "a")
    assert shapes.env.guards, "folding an unpinned symbol must guard its value"
