"""Differential tests: functions made inside compiled code, partials, and recursion.

Lambdas and nested functions called in the frame; closures, partials and decorated functions that
escape the frame (returned, stored into an argument or a global, live across a graph break) and must
come back as real functions with the same code, defaults and cells -- a cell made in the frame is one
real cell shared by every function that captured it; recursion that unrolls (a Python base case on a
constant) and recursion deeper than config.inline_depth, which is a graph break at the root call.

The harness compares a returned function by identity, so programs that return functions are checked
with `check_returned_callable`: both results are called with the same probe arguments, in the same
order, and the call results (and the cache hit on a second call) are compared.
"""
import copy
import functools

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, compare, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x3 = randn(3, seed=1)
y3 = randn(3, seed=2)
HANDLERS = {}
SCALE = 2.0


def check_returned_callable(program, args, probes, fullgraph=True):
    """Run `program` eagerly and compiled; call what each returned with every probe and compare."""
    framejit.reset()
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(program, backend=counter, fullgraph=fullgraph)
    frames = None
    for attempt in range(2):
        eager_fn = program(*copy.deepcopy(args))
        compiled_fn = compiled(*copy.deepcopy(args))
        assert type(compiled_fn) is type(eager_fn)
        for attr in ("__qualname__", "__defaults__", "__kwdefaults__"):
            if hasattr(eager_fn, attr) and not isinstance(getattr(eager_fn, attr), tuple):
                assert getattr(compiled_fn, attr) == getattr(eager_fn, attr), attr
        for probe in probes:
            compare(eager_fn(*copy.deepcopy(probe)), compiled_fn(*copy.deepcopy(probe)))
        if frames is None:
            frames = counter.frame_count
        assert counter.frame_count == frames, "the second call missed the cache"
    return compiled_fn


# ---------------------------------------------------------------- called inside the frame


def lambda_called(x):
    square = lambda t: t * t  # noqa: E731
    return square(x) + square(2)


def nested_function_with_defaults(x):
    def affine(t, w=2.0, *, b=1.0):
        return t * w + b
    return affine(x), affine(x, 3.0, b=-1.0)


def closure_reads_later_assignment(x):
    def read():
        return x * k
    k = 3
    first = read()
    k = 4
    return first, read()


def late_binding_in_loop(x):
    fns = [lambda t: t * i for i in range(3)]
    return [f(x) for f in fns]


def default_argument_binding_in_loop(x):
    fns = [lambda t, i=i: t * i for i in range(3)]
    return [f(x) for f in fns]


def higher_order_map(x):
    return list(map(lambda t: t + 1, [x, x * 2]))


def function_passed_to_helper(x):
    def apply_twice(f, v):
        return f(f(v))
    return apply_twice(lambda t: t * 3, x)


def decorator_applied_in_frame(x):
    def logged(fn):
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs) + 1
        return wrapper

    @logged
    def double(t):
        return t * 2
    return double(x)


def star_args_forwarding(x):
    def inner(a, b, c=0, **extra):
        return a * b + c + len(extra)

    def outer(*args, **kwargs):
        return inner(*args, **kwargs)
    return outer(x, 2, c=1, d=5)


def partial_of_local_function(x):
    def scale(t, factor, shift=0.0):
        return t * factor + shift
    times3 = functools.partial(scale, factor=3)
    shifted = functools.partial(times3, shift=1.0)
    return times3(x), shifted(x)


def partial_of_torch_function(x, y):
    add = functools.partial(torch.add, alpha=2)
    return add(x, y)


def partial_of_partial_flattens(x):
    p = functools.partial(functools.partial(torch.clamp, min=-0.5), max=0.5)
    return p(x), len(p.keywords)


def closure_over_own_closure():
    base = 10

    def program(x):
        def add(t):
            return t + base
        return add(x)
    return program


closure_over_compiled_functions_cell = closure_over_own_closure()


def function_attribute(x):
    def f(t):
        return t + 1
    f.tag = 3
    return f(x) * f.tag, f.__name__


# ---------------------------------------------------------------- escaping the frame


def returns_closure(x):
    k = x * 2

    def g(t):
        return t + k
    return g


def returns_lambda_with_default():
    return lambda t, w=3: t * w


def returns_counter(start):
    count = start

    def inc(step=1):
        nonlocal count
        count += step
        return count
    return inc


def returns_two_closures_sharing_a_cell(x):
    total = x * 0

    def add(t):
        nonlocal total
        total = total + t
        return total

    def get():
        return total
    return add, get


def returns_recursive_inner_function():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)
    return fact


def returns_partial(x):
    def mix(a, b, w):
        return a * w + b * (1 - w)
    return functools.partial(mix, x, w=0.25)


def returns_decorated_function():
    def twice(fn):
        @functools.wraps(fn)
        def wrapper(t):
            return fn(fn(t))
        return wrapper

    @twice
    def inc(t):
        return t + 1
    return inc


class Handlers:
    """Compares by what its handlers return for a probe (functions themselves compare by identity)."""

    def __init__(self):
        self.table = {}

    def __eq__(self, other):
        return type(other) is Handlers and list(self.table) == list(other.table) and all(
            torch.equal(torch.as_tensor(f(3.0)), torch.as_tensor(other.table[k](3.0))) for k, f in self.table.items())


def stores_function_in_argument(handlers, x):
    handlers.table["double"] = lambda t: t * 2
    handlers.table["shift"] = functools.partial(torch.add, 1)
    return handlers.table["double"](x)


def stores_function_in_global(x):
    HANDLERS["scale"] = lambda t: t * SCALE
    return HANDLERS["scale"](x)


def function_lives_across_a_break(x):
    f = lambda t: t * SCALE + 1  # noqa: E731
    y = x * 2
    print("break")
    return f(y)


# ---------------------------------------------------------------- recursion


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def tensor_power(x, n):
    if n == 0:
        return torch.ones_like(x)
    return x * tensor_power(x, n - 1)


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def tree_sum(tree):
    if isinstance(tree, (list, tuple)):
        out = 0
        for child in tree:
            out = out + tree_sum(child)
        return out
    return tree


def recursion_unrolls(x):
    return x * fact(5)


def recursion_on_tensors(x):
    return tensor_power(x, 4)


def mutual_recursion(x):
    return x * 2 if is_even(6) else x


def recursion_over_nested_lists(x, y):
    return tree_sum([x, [y, (x, 1)], [[y * 2]]])


def recursion_too_deep(x):
    y = x.sigmoid() + 0.5
    return tensor_power(y, 40) - 1


def nested_recursive_function(x):
    def depth(n, t):
        return t if n == 0 else depth(n - 1, t * 2)
    return depth(3, x)


CASES = [
    case(lambda_called, x3, **ONE),
    case(nested_function_with_defaults, x3, **ONE),
    case(closure_reads_later_assignment, x3, **ONE),
    case(late_binding_in_loop, x3, **ONE),
    case(default_argument_binding_in_loop, x3, **ONE),
    case(higher_order_map, x3, **ONE),
    case(function_passed_to_helper, x3, **ONE),
    case(decorator_applied_in_frame, x3, **ONE),
    case(star_args_forwarding, x3, **ONE),
    case(partial_of_local_function, x3, **ONE),
    case(partial_of_torch_function, x3, y3, **ONE),
    case(partial_of_partial_flattens, x3, **ONE),
    case(closure_over_compiled_functions_cell, x3, **ONE),
    case(function_attribute, x3, **ONE),
    case(stores_function_in_argument, Handlers(), x3, **ONE),
    case(function_lives_across_a_break, x3, graphs=2, breaks=1),
    case(recursion_unrolls, x3, **ONE),
    case(recursion_on_tensors, x3, **ONE),
    case(mutual_recursion, x3, **ONE),
    case(recursion_over_nested_lists, x3, y3, **ONE),
    case(recursion_too_deep, x3, graphs=2, breaks=1),
    case(nested_recursive_function, x3, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


@pytest.mark.parametrize("program,args,probes", [
    (returns_closure, (x3,), [(y3,), (x3,)]),
    (returns_lambda_with_default, (), [(x3,), (x3, 0.5)]),
    (returns_counter, (5,), [(), (), (3,)]),
    (returns_recursive_inner_function, (), [(5,), (1,)]),
    (returns_partial, (x3,), [(y3,), (x3,)]),
    (returns_decorated_function, (), [(x3,), (2,)]),
])
def test_returned_function_behaves_as_eagerly(program, args, probes):
    check_returned_callable(program, args, probes)


def test_closures_sharing_a_cell_still_share_it():
    def program(x):
        return returns_two_closures_sharing_a_cell(x)

    framejit.reset()
    add, get = framejit.compile(program, fullgraph=True)(x3)
    add(y3)
    add(y3)
    compare(y3 * 2, get())
    assert add.__closure__[0] is get.__closure__[0]


def test_returned_closure_has_its_own_cell_per_call():
    compiled = framejit.compile(returns_counter, fullgraph=True)
    a, b = compiled(0), compiled(100)
    assert (a(), a(), b()) == (1, 2, 101)


def test_function_stored_in_global_is_a_real_function():
    HANDLERS.clear()
    out = framejit.compile(stores_function_in_global, fullgraph=True)(x3)
    compare(x3 * SCALE, out)
    assert HANDLERS["scale"](3) == 3 * SCALE and HANDLERS["scale"].__qualname__.endswith("<lambda>")


def test_recursion_limit_follows_config():
    shallow = framejit.compile(recursion_on_tensors, inline_depth=2)
    compare(recursion_on_tensors(x3), shallow(x3))
    report = framejit.explain(recursion_on_tensors)(x3)
    assert report.graph_break_count == 0
