"""Graph breaks inside for loops resume in a graph (convert/frame.py, convert/resume.py).

A `for` over a tuple, list, range, enumerate/zip or dict items that breaks inside its body (a print, a
data-dependent branch, an opaque call) used to make the whole function plain Python. Now the loop's
iterator crosses the break as the tuple of its remaining items and the resume function's prologue
iterates it again, so the rest of each iteration is a graph. Checked: outputs, stdout, side effects on
inputs and globals, gradients, the number of graphs, and the fallbacks (while loops, try blocks, an
iterator the breaking call consumes) staying plain Python.
"""
import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, check, randn, run_case

x3 = randn(3, seed=1)
g3 = randn(3, seed=2, requires_grad=True)
LOG = []


def print_in_tuple_loop(x):
    for i in (1, 2, 3):
        x = x + i
        print("i", i)
        x = x * 2
    return x


def print_in_range_loop_appending(x, acc):
    for i in range(4):
        x = x.sin() + i
        print("step", i, tuple(x.shape))
        acc.append(x * 2)
    return x


def dict_items_loop_with_global_side_effect(x):
    d = {"a": 1, "b": 2}
    for k, v in d.items():
        x = x * v
        LOG.append(k)
        print(k)
        x = x + 1
    return x


def enumerate_zip_loop(x, y):
    for i, (a, b) in enumerate(zip([x, y], [y, x])):
        x = a * b + i
        print(i)
    return x


def nested_for_loops(x):
    for i in range(2):
        for t in [x, x + 1]:
            x = x + t * i
            print(i)
    return x


def data_dependent_branch_in_loop(x):
    for s in (1.0, -2.0, 3.0):
        x = x * s
        if x.sum() > 0:
            x = x + 1
        else:
            x = x - 1
    return x


def loop_with_grad(x):
    out = x
    for w in (0.5, 2.0):
        out = out * w
        print("w", w)
        out = out.tanh()
    return out


def break_and_continue(x):
    for i in range(5):
        if i == 1:
            continue
        x = x + i
        print(i)
        if i == 3:
            break
    return x


CASES = [
    case(print_in_tuple_loop, x3, graphs=4),
    case(print_in_range_loop_appending, x3, [], graphs=5),
    case(dict_items_loop_with_global_side_effect, x3, graphs=3),
    case(enumerate_zip_loop, x3, x3 * 2, graphs=2),
    case(nested_for_loops, x3, graphs=4),
    case(data_dependent_branch_in_loop, x3, graphs=4),
    case(loop_with_grad, g3, grads=True, graphs=3),
    case(break_and_continue, x3, graphs=3),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    LOG.clear()
    run_case(fn, args, kwargs, options)


def test_loop_break_resumes_in_graphs():
    report = framejit.explain(print_in_tuple_loop)(x3)
    assert report.graph_count == 4 and report.graph_break_count == 3


def test_long_loop_falls_back_at_the_recompile_limit():
    """Each position in the loop is its own resume entry; past the recompile limit the rest of the
    loop runs as plain Python, with the same result and output."""
    def long_loop(x):
        for i in range(30):
            x = x * 1.01 + i
            print(i)
        return x

    check(long_loop, x3, graphs=framejit.Config().recompile_limit + 1)


def while_loop_break(x):
    i = 0
    while i < 3:
        x = x + i
        print(i)
        i += 1
    return x


def loop_in_try(x):
    try:
        for i in (1, 2):
            x = x + i
            print(i)
    except ValueError:
        pass
    return x


def generator_loop(x):
    for t in (x * i for i in range(2)):
        x = x + t
        print("g")
    return x


def tensor_rows_loop(x):
    """Over a tensor's rows the count is the tensor's (often data-dependent): no split."""
    for row in x.reshape(3, 1):
        x = x + row
        print("row")
    return x


@pytest.mark.parametrize("fn", [while_loop_break, loop_in_try, generator_loop, tensor_rows_loop])
def test_loops_that_stay_plain_python(fn):
    check(fn, x3, graphs=0)


# ---------------------------------------------------------------- iterators held by a local
# A live iterator in a local crosses a break as the real iterator at its position (IteratorValue.rebuild),
# and the resume function models it by the items it has left (values/iterators/iterator_positions.py),
# advancing the real one after its graph. A zip object is not rebuilt: that function runs as plain Python.

def local_iterator_next_across_break(x):
    it = iter((x, x + 1, x * 3))
    first = next(it)
    print("first taken")
    return first + next(it), list(it)


def local_zip_iterator_across_break(x):
    pairs = zip(range(3), (x, x * 2, x * 3))
    i, t = next(pairs)
    print("one pair")
    return [t * j for j, t in pairs], i


def loop_over_a_local_iterator_advanced_in_the_body(x):
    it = iter(range(6))
    for i in it:
        x = x + i
        print("at", i)
        skipped = next(it, None)        # the loop and the local are one iterator
        x = x * 2 if skipped is None else x - skipped
    return x


def one_iterator_in_two_locals(x):
    a = iter([x, x + 1, x + 2])
    b = a
    next(a)
    print("shared")
    return next(b) + next(a)


@pytest.mark.parametrize(CASE_FIELDS, [
    case(local_iterator_next_across_break, x3, graphs=2),
    case(local_zip_iterator_across_break, x3, graphs=2),
    case(loop_over_a_local_iterator_advanced_in_the_body, x3, graphs=4),
    case(one_iterator_in_two_locals, x3, graphs=2),
])
def test_iterators_held_by_locals(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
