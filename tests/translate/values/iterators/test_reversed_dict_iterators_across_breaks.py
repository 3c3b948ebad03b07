"""reversed() of a dict or of its keys/values/items view across a graph break
(values/iterators/reversed_dict_iterators.py): made in the frame or passed in, it is read live from the dict
in graphs, rebuilt (or advanced) as eager's object at a break, and raises eager's RuntimeError once the
dict changed size. Before, one held across a break ran its whole frame as plain Python, and inside one
graph it was a snapshot (a value written after reversed() did not show). The cases follow the Python
reference (dict order is insertion order; reversed() on dicts and views since 3.8; "dictionary changed
size during iteration"). Each runs eagerly and compiled on copies of the same inputs (tests/differential.py
compares results, exceptions, stdout, arguments after the call, and reverse iterators by the items left).
"""
import collections

import pytest

import framejit
from tests.differential import check, randn

x3 = randn(3, seed=7)


def _d():
    return {"a": 1.0, "b": 2.0, "c": 3.0}


def keys_held_across_a_break(x, d):
    it = reversed(d)
    k = next(it)
    y = x * d[k]
    print("break")
    k2 = next(it)
    return y + d[k2], k, k2, list(it), type(it).__name__


def values_read_live_after_a_break(x, d):
    it = reversed(d.values())
    y = x * next(it)
    print("break")
    d["a"] = 7.0                     # not reached yet: the iterator yields the new value
    return y + next(it), list(it), type(it).__name__


def items_in_a_loop_with_a_break(x, d):
    for k, v in reversed(d.items()):
        x = x * v
        print(k)
    return x


def grows_after_the_break(x, d):
    it = reversed(d)
    next(it)
    print("break")
    d["z"] = 4.0
    return x * d[next(it)]           # RuntimeError: dictionary changed size during iteration


def grows_in_the_graph(x, d):
    it = reversed(d)
    d["z"] = 4.0
    return x * d[next(it)]


def grows_in_a_loop(x, d):
    for k in reversed(d):
        x = x + d[k]
        print(k)
        d[k + "x"] = 1.0
    return x


def written_at_equal_size(x, d):
    it = reversed(d.items())
    first = next(it)
    d["a"] = 5.0                     # a value, not the size: iteration goes on
    print("break")
    return x * first[1], list(it)


def escapes_held(x, d):
    it = reversed(d.items())
    next(it)
    print("break")
    return x + 1, it


def escapes_after_growing(x, d):
    it = reversed(d.values())
    next(it)
    print("break")
    d["q"] = 0.5
    return x + 1, it                 # its next() raises for good


def value_written_in_one_graph(x, d):
    it = reversed(d.values())
    d["c"] = 9.0
    return x * next(it), x * next(it)


def spent_then_next_with_a_default(x, d):
    it = reversed(d)
    rest = list(it)
    print("break")
    return x, rest, next(it, "done")


def after_a_deletion(x, d):
    del d["b"]
    it = reversed(d.keys())
    print("break")
    return x * d[next(it)], list(it)


def made_after_a_deletion(x):
    d = {"a": x, "b": x * 2, "c": x * 3}
    del d["b"]
    it = reversed(d.items())
    print("break")
    return next(it)[1] + 1, list(it), d


def next_on_an_argument_across_a_break(x, it):
    a = next(it)
    print("break")
    return x * a[1], next(it, None)


def argument_read_in_one_graph(x, d, it):
    d["a"] = -1.0
    return [x * v for v in it]


def _passed_in_items():
    return (x3, reversed(_d().items()))


def _dict_and_its_values():
    d = _d()
    return (x3, d, reversed(d.values()))


# (function, its arguments, check's expectations)
CASES = [
    (keys_held_across_a_break, lambda: (x3, _d()), dict(graphs=2, breaks=1)),
    (values_read_live_after_a_break, lambda: (x3, _d()), dict(graphs=2, breaks=1)),
    (items_in_a_loop_with_a_break, lambda: (x3, _d()), {}),
    (written_at_equal_size, lambda: (x3, _d()), dict(graphs=1, breaks=1)),
    (escapes_held, lambda: (x3, _d()), dict(graphs=1, breaks=1)),
    (value_written_in_one_graph, lambda: (x3, _d()), dict(graphs=1, breaks=0, fullgraph=True)),
    (spent_then_next_with_a_default, lambda: (x3, _d()), dict(breaks=1)),
    (after_a_deletion, lambda: (x3, _d()), {}),         # an input dict written before reversed(): plain Python
    (made_after_a_deletion, lambda: (x3,), dict(graphs=2, breaks=1)),
    (keys_held_across_a_break, lambda: (x3, collections.defaultdict(float, _d())), {}),
    (keys_held_across_a_break, lambda: (x3, collections.OrderedDict(_d())), {}),     # (its own iterator)
    (grows_after_the_break, lambda: (x3, _d()), {}),
    (grows_in_the_graph, lambda: (x3, _d()), {}),
    (grows_in_a_loop, lambda: (x3, _d()), {}),
    (escapes_after_growing, lambda: (x3, _d()), {}),
    (next_on_an_argument_across_a_break, _passed_in_items, dict(graphs=1, breaks=1)),
    (argument_read_in_one_graph, _dict_and_its_values, dict(graphs=1, fullgraph=True)),
]


@pytest.mark.parametrize("fn,args,expected", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_reversed_dict_iterator(fn, args, expected):
    check(fn, *args(), **expected)


def test_the_real_iterator_passed_in_is_advanced_and_reused():
    framejit.reset()
    compiled = framejit.compile(next_on_an_argument_across_a_break)
    d = _d()
    it = reversed(d.items())
    out, second = compiled(x3, it)
    assert second == ("b", 2.0) and list(it) == [("a", 1.0)]
