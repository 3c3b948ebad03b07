"""reversed() iterators across a graph break (values/iterators/reversed_iterators.py): held in a local over a
list, tuple, range or dict, or passed in (a list's or tuple's), they are continued in graphs, and the real
iterator is left where eager leaves it. Before, a held one ran its whole frame as plain Python and `next()`
on one passed in was a graph break. Each function runs eagerly and compiled on copies of the same inputs
(tests/differential.py compares iterator arguments by the items they have left)."""
import torch

import framejit
from tests.differential import check, randn

x3 = randn(3, seed=7)


def reversed_list_in_a_local(x, xs):
    it = reversed(xs)
    y = x * next(it)
    print("break")
    y = y + next(it)
    return y, list(it), type(it).__name__


def reversed_tuple_in_a_local(x):
    it = reversed((x, x + 1, x * 3))
    first = next(it)
    print("break")
    for t in it:
        first = first + t
    return first


def reversed_range_in_a_local(x, n):
    it = reversed(range(n))
    a = next(it)
    print("break")
    return x * a + next(it), next(it), list(it)


def reversed_dict_in_a_local(x, d):
    it = reversed(d)
    k = next(it)
    y = x * d[k]
    print("break")
    k2 = next(it)
    return y + d[k2], k, k2, list(it)


def reversed_list_after_appends_and_writes(x):
    xs = [x, x * 2, x * 3]
    it = reversed(xs)
    first = next(it)
    xs.append(x * 5)                 # below its index: a list's reverse iterator does not see it
    print("break")
    xs[0] = x * 7                    # at an index it has not reached yet: it does
    return first, list(it)


def reversed_list_iterator_escapes(x, xs):
    it = reversed(xs)
    next(it)
    print("break")
    return x + 1, it


def next_on_an_argument(x, it):
    return x * next(it)


def next_on_an_argument_across_a_break(x, it):
    a = next(it)
    print("break")
    b = next(it, None)
    return x * a + (0 if b is None else b), iter(it) is it


def list_written_under_an_argument(x, xs, it):
    xs[0] = x * 9                    # the iterator passed in reads its list live
    return [t + 1 for t in it]


def loop_over_an_argument(x, it):
    for t in it:
        x = x + t
    return x


def test_reversed_iterators_made_in_the_frame_resume_in_graphs():
    check(reversed_list_in_a_local, x3, [1.0, 2.0, 3.0, 4.0], graphs=2, breaks=1)
    check(reversed_tuple_in_a_local, x3, graphs=2, breaks=1)
    check(reversed_range_in_a_local, x3, 5, graphs=1, breaks=1)
    check(reversed_dict_in_a_local, x3, {"a": 1.0, "b": 2.0, "c": 3.0}, graphs=2, breaks=1)   # (reversed_dict_iterators.py)
    check(reversed_list_after_appends_and_writes, x3, graphs=2, breaks=1)
    check(reversed_list_iterator_escapes, x3, [1, 2, 3], graphs=1, breaks=1)


def test_reversed_iterators_passed_in_are_graph_work():
    check(next_on_an_argument, x3, reversed([4, 5, 6]), graphs=1, breaks=0, fullgraph=True)
    check(next_on_an_argument, x3, reversed((x3, x3 * 2)), graphs=1, breaks=0, fullgraph=True)
    check(next_on_an_argument_across_a_break, x3, reversed([1, 2]), graphs=1, breaks=1)
    check(next_on_an_argument_across_a_break, x3, reversed((1,)), graphs=1, breaks=1)
    check(loop_over_an_argument, x3, reversed([x3, x3 + 1]), graphs=1, fullgraph=True)
    xs = [x3, x3 * 2, x3 * 3]
    check(list_written_under_an_argument, x3, xs, reversed(xs), graphs=1, fullgraph=True)


def test_the_real_reversed_iterator_is_advanced_and_reused():
    framejit.reset()
    compiled = framejit.compile(next_on_an_argument)
    it = reversed([1, 2, 3])
    assert torch.equal(compiled(x3, it), x3 * 3)
    assert torch.equal(compiled(x3, it), x3 * 2)          # another position: guarded, converted again
    assert list(it) == [1]
    fresh = reversed([1, 2, 3])
    assert torch.equal(compiled(x3, fresh), x3 * 3) and list(fresh) == [2, 1]


def test_reversed_of_a_tensor_is_the_tensor_flipped():
    def f(x):
        r = reversed(x)
        return r * 2, type(r).__name__
    check(f, randn(3, 2, seed=1), graphs=1, fullgraph=True)
    check(f, randn(3, seed=2), graphs=1, fullgraph=True)
