"""zip / enumerate / map / filter iterators (nested too) held in a local across a graph break keep their
position, as the objects eager has (values/iterators/composed_iterators.py): the frame splits into a graph,
the break and a compiled resume function, where it ran as plain Python before. Plus such an iterator passed
in by the caller, consumed in the frame and advanced after the graph. Differential (tests/differential.py)."""
import pytest
import torch

import framejit
from tests.differential import check, randn


EARLIER = set()


@pytest.fixture(autouse=True)
def _metrics_before():
    EARLIER.clear()
    EARLIER.update(id(m) for m in framejit.metrics())


def _no_plain_python():
    fallen = [(m.co_name, m.fail_reason) for m in framejit.metrics() if m.fail_type is not None and
              id(m) not in EARLIER]
    assert fallen == []


def zip_in_a_local(x, ys):
    it = zip(ys, (1.0, 2.0, 3.0))
    a, k = next(it)
    print("break")
    b, j = next(it)
    return x + a * k + b * j, type(it).__name__


def enumerate_with_start(x, ys):
    it = enumerate(ys, 5)
    i, a = next(it)
    print("break")
    j, b = next(it)
    return x * i + a + j * b, list(it)


def map_of_a_lambda(x, ys):
    it = map(lambda t: t * 2, ys)
    a = next(it)
    print("break")
    return x + a + next(it), [v.sum() for v in it]


def filter_by_shape(x, ys):
    it = filter(lambda t: t.dim() == 1, ys)
    a = next(it)
    print("break")
    return x + a + next(it)


def enumerate_of_zip(x, ys):
    it = enumerate(zip(ys, reversed(ys)))
    i, (a, b) = next(it)
    print("break")
    j, (c, d) = next(it)
    return x + a * b + c * d + i + j, list(it)


def loop_over_zip_with_break_inside(x, ys):
    it = zip(ys, range(3))
    for t, k in it:
        x = x + t * k
        print("step", k)
    return x, list(it)


CASES = [zip_in_a_local, enumerate_with_start, map_of_a_lambda, filter_by_shape, enumerate_of_zip,
         loop_over_zip_with_break_inside]


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_composed_iterator_crosses_a_break(fn, backend):
    ys = [randn(3, seed=i) for i in range(3)]
    check(fn, randn(3), ys, backend=backend, breaks=1 if fn is not loop_over_zip_with_break_inside else 3)
    _no_plain_python()


def takes_two(x, it):
    a, b = next(it)
    return x + a * b


@pytest.mark.parametrize("make", [lambda ts: zip(ts, (2.0, 3.0)), lambda ts: enumerate(ts, 1)],
                         ids=["zip", "enumerate"])
def test_composed_iterator_passed_in_is_advanced(make):
    """The harness cannot compare zip objects: the result and the items the iterator has left after the
    call, eager vs compiled, by hand."""
    framejit.reset()
    counter = framejit.backends.CompileCounter("eager")
    compiled = framejit.compile(takes_two, backend=counter)
    for call in range(2):
        ts = tuple(randn(3, seed=call + i) for i in range(3))
        x = randn(3, seed=9)
        eager_it, compiled_it = make(ts), make(ts)
        torch.testing.assert_close(compiled(x, compiled_it), takes_two(x, eager_it), rtol=0, atol=0)
        left_eager, left_compiled = list(eager_it), list(compiled_it)
        assert len(left_eager) == len(left_compiled)
        for a, b in zip(left_eager, left_compiled):
            assert a[0] == b[0] if not isinstance(a[0], torch.Tensor) else a[0] is b[0]
    assert counter.frame_count == 1
    _no_plain_python()
