"""Iterators by position (values/iterators/iterator_positions.py, IteratorValue.rebuild): a list, tuple or
range iterator that crosses a graph break, or is passed in, is continued in a graph, and the real iterator
is left where eager leaves it. Each function runs eagerly and compiled on copies of the same inputs
(tests/differential.py, which copies iterator arguments and compares them after the call by the items they
have left); graph counts are torch.compile's where it resumes these in a graph."""
import torch

import framejit
from tests.differential import check, randn

x3 = randn(3, seed=7)


def range_iterator_in_a_local(x):
    it = iter(range(2, 9, 3))
    a = next(it)
    print("break")
    return x * a + next(it), list(it)


def tuple_iterator_of_tensors(x):
    it = iter((x, x + 1, x * 3))
    first = next(it)
    print("break")
    return first + next(it), list(it)


def list_iterator_sees_later_appends(x):
    xs = [x, x * 2]
    it = iter(xs)
    first = next(it)
    print("break")
    xs.append(x * 5)                    # a list iterator reads the list, not a copy
    return first, list(it)


def for_loop_over_a_local_iterator(x):
    it = iter([1, 2, 3, 4])
    for i in it:
        x = x + i
        if i == 2:
            break
    print("loop left")
    return x * next(it), list(it)


def iterator_in_a_container(x):
    state = {"it": iter(range(4))}
    next(state["it"])
    print("break")
    return x + next(state["it"]), state


def test_iterators_made_in_the_frame_resume_in_graphs():
    check(range_iterator_in_a_local, x3, graphs=1, breaks=1)
    check(tuple_iterator_of_tensors, x3, graphs=2, breaks=1)
    check(list_iterator_sees_later_appends, x3, graphs=2, breaks=1)
    check(for_loop_over_a_local_iterator, x3, graphs=2, breaks=1)
    check(iterator_in_a_container, x3)


def next_on_an_argument(x, it):
    return x + next(it)


def next_on_an_argument_across_a_break(x, it):
    a = next(it)
    print("break")
    b = next(it, None)
    return x * a + (0 if b is None else b), iter(it) is it


def loop_over_an_argument(x, it):
    for t in it:
        x = x + t
    return x


def test_next_on_an_iterator_passed_in_is_one_graph():
    check(next_on_an_argument, x3, iter([4, 5, 6]), graphs=1, breaks=0, fullgraph=True)
    check(next_on_an_argument, x3, iter(range(10)), graphs=1, breaks=0, fullgraph=True)
    check(next_on_an_argument, x3, iter((x3, x3 * 2)), graphs=1, breaks=0, fullgraph=True)
    check(next_on_an_argument_across_a_break, x3, iter((1, 2)), graphs=1, breaks=1)
    check(next_on_an_argument_across_a_break, x3, iter((1,)), graphs=1, breaks=1)
    check(loop_over_an_argument, x3, iter([x3, x3 + 1]), graphs=1, fullgraph=True)


def test_the_real_iterator_is_advanced_and_reused():
    compiled = framejit.compile(next_on_an_argument)
    it = iter([1, 2, 3])
    assert torch.equal(compiled(x3, it), x3 + 1)
    assert torch.equal(compiled(x3, it), x3 + 2)          # another position: guarded, converted again
    assert list(it) == [3]
    fresh = iter([1, 2, 3])
    assert torch.equal(compiled(x3, fresh), x3 + 1) and list(fresh) == [2, 3]


def test_an_iterator_with_many_items_left_stays_an_object():
    check(next_on_an_argument, x3, iter(range(1000)))
