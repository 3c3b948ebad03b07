"""`x.__iter__()` of a tensor is iter(x) (its rows). A constant's method that returns an iterator
(`range(3).__iter__()`, `"abc".__iter__()`, `range(3).__reversed__()`) gives an iterator of the frame's own (calls.call_method), not one real iterator
made at translation and shared by every later call: the second call of the compiled function found it
exhausted (StopIteration) when the frame kept it across a graph break."""
import torch

import framejit
from tests.differential import check, randn


def iterator_across_a_break(x):
    it = range(3).__iter__()
    a = next(it)
    print("break")                       # a graph break: the iterator is live across it
    return x + a + next(it)


def iterators_of_constants(x):
    chars = "abc".__iter__()
    back = range(1, 4).__reversed__()
    return x + len(next(chars)) + next(back) + sum(range(4).__iter__())


def test_iterator_across_a_break_is_fresh_per_call():
    framejit.reset()
    compiled = framejit.compile(iterator_across_a_break)
    for _ in range(3):
        x = randn(2)
        assert torch.equal(compiled(x), iterator_across_a_break(x))


def test_iterators_of_constants_in_one_graph():
    check(iterators_of_constants, randn(2), fullgraph=True, graphs=1)


def tensor_dunder_iter(x):
    it = x.__iter__()
    for row in it:
        row.add_(1.0)
    return row, x


def test_tensor_dunder_iter_is_iter_in_one_graph():
    check(tensor_dunder_iter, randn(3, 2), fullgraph=True, graphs=1)
