"""Functions rebuilt from decode -> assemble behave like the originals.

A byte-identical round trip already implies this; these tests guard the parts a byte
comparison cannot see (a code object CPython accepts but runs differently) and keep
passing if the encoder someday makes different but equivalent choices.
"""

import calendar
import collections
import copy
import difflib
import fractions
import functools
import heapq
import importlib.util
import json
import pprint
import statistics
import string
import sys
import textwrap
import types

import pytest

from framejit.bytecode import assemble, decode


def rebuild(fn):
    """Same function, code object re-assembled from its decoded instructions."""
    code = fn.__code__
    new = types.FunctionType(assemble(decode(code), code), fn.__globals__, fn.__name__,
                             fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    return new


def pure_python(module_name, accelerator, name):
    """The pure-Python version of a function that the module replaces with C code:
    a private copy of the module loaded while its accelerator cannot be imported."""
    saved = sys.modules.get(accelerator)
    sys.modules[accelerator] = None  # makes "from _accel import *" raise ImportError
    try:
        spec = importlib.util.find_spec(module_name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules[accelerator]
        else:
            sys.modules[accelerator] = saved
    fn = getattr(module, name)
    assert isinstance(fn, types.FunctionType)
    return fn


def same_outcome(fn, *args, **kwargs):
    def run(f):
        try:
            result = f(*args, **kwargs)
            if isinstance(result, types.GeneratorType):
                result = list(result)
            return ("ok", result)
        except Exception as e:  # noqa: BLE001 - comparing behaviour, errors included
            return ("raised", type(e), str(e))

    assert run(rebuild(fn)) == run(fn)


DATA = [5, 1, 9, 3, 7, 3, 8, 2, 6, 4]

CASES = [
    (textwrap.dedent, ("    a\n      b\n    c\n",), {}),
    (textwrap.indent, ("a\n\nb\n", "> "), {}),
    (textwrap.shorten, ("The quick brown fox jumps over the lazy dog", 20), {}),
    (textwrap.wrap, ("lorem ipsum dolor sit amet " * 5,), {"width": 17}),
    (json.dumps, ({"b": [1, 2.5, None, True], "a": "x\u00e9"},), {"indent": 2, "sort_keys": True}),
    (json.loads, ('{"a": [1, 2, {"b": null}]}',), {}),
    (json.dumps, (object(),), {}),  # raises TypeError in both
    (heapq.nlargest, (3, DATA), {}),
    (heapq.nsmallest, (4, DATA), {"key": lambda v: -v}),
    (heapq.merge, ([1, 4, 7], [2, 5, 8], [0, 9]), {}),  # generator
    (statistics.mean, (DATA,), {}),
    (statistics.median, (DATA,), {}),
    (statistics.stdev, (DATA,), {}),
    (statistics.fmean, (DATA,), {}),
    (statistics.mode, ([1, 2, 2, 3],), {}),
    (statistics.mean, ([],), {}),  # raises StatisticsError
    (difflib.get_close_matches, ("appel", ["ape", "apple", "peach", "puppy"]), {}),
    (difflib.unified_diff, (["a\n", "b\n", "c\n"], ["a\n", "c\n", "d\n"]), {}),
    (difflib.ndiff, (["one\n", "two\n"], ["one\n", "tree\n"]), {}),
    (string.capwords, ("hello   wide world",), {}),
    (copy.deepcopy, ({"a": [1, {2, 3}], "b": (4, [5])},), {}),
    (pprint.pformat, ({"k%d" % i: list(range(i)) for i in range(8)},), {"width": 40}),
    (calendar.Calendar.monthdayscalendar, (calendar.Calendar(), 2024, 2), {}),
    (calendar.Calendar.itermonthdays4, (calendar.Calendar(6), 2023, 12), {}),
    (calendar.leapdays, (1900, 2024), {}),
    (functools.update_wrapper, (lambda: None, len), {}),
    (collections.namedtuple, ("Point", "x y"), {}),
]


@pytest.mark.parametrize("fn,args,kwargs", CASES,
                         ids=[f"{c[0].__module__}.{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_rebuilt_function_same_result(fn, args, kwargs):
    if fn is functools.update_wrapper:
        made, ref = rebuild(fn)(lambda: None, len), fn(lambda: None, len)
        assert (made.__name__, made.__doc__, made.__wrapped__) == \
            (ref.__name__, ref.__doc__, ref.__wrapped__)
        return
    if fn is collections.namedtuple:
        made, ref = rebuild(fn)(*args, **kwargs), fn(*args, **kwargs)
        assert made(1, 2)._asdict() == ref(1, 2)._asdict()
        return
    same_outcome(fn, *args, **kwargs)


@pytest.mark.parametrize("name", ["bisect_left", "bisect_right", "insort_left", "insort_right"])
def test_rebuilt_pure_python_bisect(name):
    fn = pure_python("bisect", "_bisect", name)
    for x in (-1, 0, 3, 3.5, 10):
        a, b = sorted(DATA), sorted(DATA)
        assert rebuild(fn)(a, x) == fn(b, x)
        assert a == b
    same_outcome(fn, sorted(DATA), 4, lo=-1)  # ValueError from both


@pytest.mark.parametrize("name", ["heappush", "heappop", "heapify", "heapreplace", "_siftdown"])
def test_rebuilt_pure_python_heapq(name):
    fn = pure_python("heapq", "_heapq", name)
    new = rebuild(fn)
    a, b = list(DATA), list(DATA)
    heapq.heapify(a)
    heapq.heapify(b)
    args = {"heappush": (0,), "heappop": (), "heapify": (), "heapreplace": (11,),
            "_siftdown": (0, len(DATA) - 1)}[name]
    assert new(a, *args) == fn(b, *args)
    assert a == b


def test_rebuilt_fraction_methods_with_super_cell():
    F = fractions.Fraction
    for meth in (F.limit_denominator, F.__add__, F.__repr__, F.__round__, F.__eq__):
        new = rebuild(meth)
        x = F(355, 113)
        args = {"limit_denominator": (10,), "__add__": (F(1, 3),), "__repr__": (),
                "__round__": (2,), "__eq__": (x,)}[meth.__name__]
        assert new(x, *args) == meth(x, *args)
    # __new__ is a staticmethod-like function using super() (a __class__ cell).
    new_ctor = rebuild(F.__new__)
    assert new_ctor(F, "3/12") == F("3/12")
    assert new_ctor(F, 1.5) == F(1.5)
    with pytest.raises(ValueError):
        new_ctor(F, "not a number")


def test_rebuilt_generator_and_coroutine_behave():
    import asyncio

    def gen(n):
        try:
            for i in range(n):
                received = yield i
                if received:
                    yield from range(received)
        finally:
            gen.cleaned = True

    async def coro(xs):
        out = []
        for x in xs:
            await asyncio.sleep(0)
            out.append(x * 2)
        return out

    g1, g2 = rebuild(gen)(5), gen(5)
    assert [next(g1), g1.send(2), next(g1), next(g1)] == [next(g2), g2.send(2), next(g2), next(g2)]
    g1.close()
    assert asyncio.run(rebuild(coro)([1, 2, 3])) == [2, 4, 6]
