"""Differential tests: Python builtins and the math/operator/functools modules inside a frame.

framejit folds calls on constants (len, isinstance, min/max/sum, conversions, divmod, round, the
math and operator modules) at translation time and must get exactly Python's answer; calls that
touch tensors (map/sorted/max with key functions, operator.add on tensors) must land in the graph.
Each function here is small and names the one thing it checks; all run fullgraph unless they
print or need a graph break.
"""

import collections
import functools
import math
import operator
import types

import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)
z34 = randn(3, 4, seed=3)
x25 = randn(2, 5, seed=4)
g34 = randn(3, 4, seed=5, requires_grad=True)
h34 = randn(3, 4, seed=6, requires_grad=True)


def bug(fn, *args, reason, kwargs=None, **options):
    """A case framejit gets wrong today: strict xfail whose reason says what is wrong."""
    return pytest.param(fn, args, kwargs or {}, options, id=fn.__name__,
                        marks=[pytest.mark.xfail(strict=True, reason=reason)])


class Base:
    kind = "base"

    def __init__(self, scale=2.0):
        self.scale = scale


class Child(Base):
    kind = "child"


class Holder:
    """A plain object passed in: attributes read/written through getattr/setattr/hasattr."""

    def __init__(self):
        self.scale = 1.5
        self.name = "holder"


# ---------------------------------------------------------------- len / isinstance / issubclass


def len_of_many_things(x):
    return len([1, 2, 3]), len((x, x)), len({"a": 1}), len("abcd"), len(x), len(range(2, 11, 3))


def len_of_set_and_bytes():
    return len({1, 2, 2, 3}), len(b"\x00\x01"), len(frozenset("aab")), len([[], []])


def isinstance_tuple_of_types(x, n):
    return isinstance(n, (int, float)), isinstance(x, (list, torch.Tensor)), isinstance(True, int)


def isinstance_user_hierarchy():
    obj = Child()
    return isinstance(obj, Base), isinstance(obj, Child), isinstance(Base(), Child), obj.kind


def isinstance_containers(x):
    return isinstance([x], list), isinstance((x,), tuple), isinstance({}, dict), isinstance("s", str)


def isinstance_abc_sequence():
    return isinstance([1], collections.abc.Sequence), isinstance({}, collections.abc.Mapping)


def issubclass_builtins():
    return issubclass(bool, int), issubclass(int, (str, float)), issubclass(Child, Base), \
        issubclass(Base, Child)


def isinstance_selects_branch(value, x):
    if isinstance(value, (list, tuple)):
        return x * len(value)
    return x + value


# ---------------------------------------------------------------- getattr / setattr / hasattr


def getattr_with_default(obj, x):
    return x * getattr(obj, "scale", 1.0) + getattr(obj, "missing", 5)


def setattr_on_input(obj, x):
    setattr(obj, "scale", 3.0)
    setattr(obj, "extra", [1, 2])
    return x * obj.scale


def hasattr_checks(x, obj):
    return hasattr(x, "shape"), hasattr(obj, "nope"), hasattr(obj, "name"), hasattr([], "append")


def getattr_tensor_method(x):
    return getattr(x, "relu")() + getattr(x, "abs")()


def getattr_module_function(x):
    return getattr(torch, "tanh")(x) * getattr(math, "pi")


def getattr_class_attribute():
    return getattr(Child, "kind"), getattr(Base, "kind"), getattr(Child(), "scale")


def getattr_missing_raises(obj):
    return getattr(obj, "does_not_exist")


def simple_namespace_attributes(x):
    ns = types.SimpleNamespace(a=1, b=2.0)
    ns.c = ns.a + ns.b
    return x * ns.c, ns.c


def simple_namespace_escapes(x):
    ns = types.SimpleNamespace(a=1, b="s")
    ns.c = ns.a + 1
    del ns.a
    t = types.SimpleNamespace(x=x)           # (the harness compares namespaces with ==: no tensor in ns)
    return ns, vars(t), t.__dict__["x"] * 2, getattr(ns, "zz", 5), hasattr(ns, "c"), type(ns).__name__


def simple_namespace_compared(x):
    ns = types.SimpleNamespace(a=1)          # its C __eq__ compares the dicts: a graph break, then Python
    return x * 2, ns == types.SimpleNamespace(a=1)


# ---------------------------------------------------------------- min / max / sum / abs / any / all


def min_max_constants():
    return min(3, 1, 2), max([1.5, 2]), min("cab"), max((1, 2), (1, 3)), min([], default=7)


def min_max_of_dict_and_strings():
    return max({"x": 1, "y": 0}), min(["b", "ab"]), max("hello"), min((3, 1), (2, 9))


def min_max_with_key():
    return min([3, -5, 2], key=abs), max(["aa", "b", "ccc"], key=len)


def max_of_tensors_by_shape(x, y):
    return max([x, y], key=lambda t: t.shape[1]) * 2


def max_of_shape(x):
    return max(x.shape), min(x.size()), sum(x.shape)


# min()/max() over tensors compare values and return one of the objects itself (the tensor, or the int
# 0 when it wins): a graph break. torch.compile rewrites them to torch.maximum/minimum, a new tensor (a
# tensor where eager returns the int 0, never `is` the argument).
def max_of_tensor_and_int(t):
    m = max(t, 0)
    return m, m is t, type(m).__name__


def min_of_tensor_elements(a):
    return min(a[0], a[1]) * 2


def max_of_list_of_tensors(a, b):
    m = max([a, b])
    return m is b, m + 1


def sum_variants():
    return sum([1, 2, 3], 10), sum([0.5, 0.25]), sum(range(5)), sum([[1], [2]], []), sum(())


def sum_of_tensor_list(x, y, z):
    return sum([x, y, z]), sum([x, y], start=z)


def abs_variants():
    return abs(-3), abs(-2.5), abs(3 - 4j), abs(True), abs(-0.0)


def abs_of_tensor(x):
    return abs(x) + abs(-x)


def any_all_constants():
    return any([]), all([]), any([0, 0, 1]), all([1, "", 2]), any(v > 3 for v in range(5))


def any_all_of_shapes(x, y):
    return all(d > 1 for d in x.shape), any(a != b for a, b in zip(x.shape, y.shape))


# ---------------------------------------------------------------- range / enumerate / zip / map ...


def range_properties():
    r = range(3, 20, 4)
    return list(r), r[2], r[-1], len(r), 11 in r, 12 in r, r[1:3], r.index(7)


def range_slice_iterated():
    return list(range(3, 20, 4)[1:3])


def range_negative_step():
    return list(range(10, 0, -3)), list(range(0)), list(range(-2, 2)), range(5) == range(0, 5)


def enumerate_with_start():
    return list(enumerate("abc", start=1)), dict(enumerate([10, 20]))


def zip_uneven_lengths():
    return list(zip([1, 2, 3], "ab")), dict(zip(["k", "v"], [0, 1])), list(zip())


def zip_strict_ok(x, y):
    return [a + b for a, b in zip([x, y], [y, x], strict=True)]


def map_builtin_constants():
    return list(map(str, [1, 2])), list(map(lambda a, b: a * b, [1, 2, 3], [4, 5])), \
        list(map(abs, (-1, 2, -3)))


def map_over_tensors(x, y):
    return list(map(torch.relu, [x, y])), tuple(map(lambda t: t.sum(0), (x, y)))


def filter_none_and_lambda():
    return list(filter(None, [0, 1, "", 2, None])), list(filter(lambda v: v % 2, range(7)))


def filter_tensors_by_shape(x, y, z):
    return [t * 2 for t in filter(lambda t: t.shape[0] == 3, [x, y, z])]


def sorted_dict_string_reverse():
    return sorted({3: 1, 1: 2}), sorted("cab"), sorted([3, 1, 2], reverse=True), sorted(())


def sorted_tuples():
    return sorted([(2, "b"), (1, "z"), (2, "a")]), sorted(((3,), (1, 5), (1,)))


def sorted_list_of_lists():
    return sorted([[2], [1, 5], [1]])


def sorted_with_key_function():
    return sorted(["bb", "a", "ccc"], key=len, reverse=True)


def sorted_stable_by_lambda_key():
    return sorted([(1, "b"), (0, "z"), (1, "a")], key=lambda p: p[0])


def sorted_tensors_by_key(x, y):
    first, second = sorted([x, y], key=lambda t: t.shape[0] * 10 + t.shape[1])
    return first - second


def reversed_variants():
    return list(reversed((1, 2, 3))), list(reversed(range(4))), "".join(reversed("abc")), \
        list(reversed([[1], [2]]))


def reversed_tensor_list(x, y, z):
    return [t * i for i, t in enumerate(reversed([x, y, z]))]


# ---------------------------------------------------------------- conversions on constants


def int_conversions():
    return int("ff", 16), int(-3.7), int("  12 "), int(2.0 ** 10), int("0b101", 0), int()


def float_conversions():
    return float("inf") > 1e308, float(3), float("-1.5e3"), float(" 2 "), float()


def bool_conversions():
    return bool([]), bool((0,)), bool(""), bool(0.0), bool(None), bool("0"), bool()


def str_conversions():
    return str(1.5), str(None), str((1,)), repr("x"), str(True), str(-0.0)


def str_of_list_and_dict():
    return str([1, "a"]), str({"k": 1}), repr([2])


def conversions_feed_tensor_math(x, n):
    return x * float(n) + int(2.9) - bool(n)


def int_of_shape_and_float_of_numel(x):
    return int(x.shape[0]) * 2, float(x.numel()), bool(x.dim())


# ---------------------------------------------------------------- divmod / round / pow / number bits


def divmod_variants():
    return divmod(-7, 2), divmod(7.5, 2), divmod(7, -2), divmod(0, 5)


def round_variants():
    return round(2.5), round(3.5), round(-0.5), round(1234, -2), round(1.23456, 3), round(7)


def round_of_tensor(x):
    return round(x * 3)


def pow_builtin():
    return pow(2, 10), pow(3, 4, 5), pow(2.0, -1), pow(-8, 2), 2 ** -1


def hex_oct_bin():
    return hex(255), oct(8), bin(5), hex(-1), int(hex(4096), 16)


def complex_numbers():
    c = complex(1, 2) * (3 - 1j)
    return c, c.real, c.imag, c.conjugate(), abs(complex(0, 2))


def float_methods():
    return (2.5).is_integer(), (4.0).is_integer(), (0.5).as_integer_ratio(), (3.75).hex()


# ---------------------------------------------------------------- math module


def math_integer_functions():
    return math.gcd(12, 18), math.factorial(5), math.comb(5, 2)


def math_integer_functions_newer():
    return math.perm(4, 2), math.isqrt(17), math.lcm(4, 6)


def math_rounding():
    return math.ceil(2.1), math.floor(-2.1), math.trunc(-2.7)


def math_float_parts():
    return math.copysign(3, -0.0), math.fmod(7, 3), math.modf(2.5)


def math_transcendental():
    return math.exp(0), math.log2(8), math.log(100, 10), math.log10(1000), math.hypot(3, 4), \
        math.atan2(1, 1), math.sqrt(2) ** 2


def math_predicates():
    return math.isnan(float("nan")), math.isinf(math.inf), math.isfinite(1e308), \
        math.isclose(0.1 + 0.2, 0.3), math.inf > 1e300


def math_sequences():
    return math.prod([1, 2, 3, 4]), math.fsum([0.1] * 10), math.prod(range(1, 5), start=2)


def math_dist():
    return math.dist((0, 0), (3, 4))


def math_angles_scale_tensor(x):
    return x * math.cos(math.radians(60)) + math.degrees(math.pi) / 180 + math.tanh(1.0)


def math_on_shape(x):
    return x.reshape(math.prod(x.shape)) * math.sqrt(x.shape[1])


# ---------------------------------------------------------------- operator and functools


def operator_on_constants():
    return operator.add(2, 3), operator.mul("ab", 2), operator.neg(4), operator.truediv(7, 2), \
        operator.floordiv(7, 2), operator.not_(0), operator.contains([1, 2], 2)


def operator_getitem(x, y):
    return operator.getitem((5, 6), 1), operator.getitem([x, y], 1) * 2


def operator_on_tensors(x, y):
    return operator.add(x, y), operator.matmul(x, y.T), operator.neg(x), operator.mul(x, 3)


def operator_inplace_functions(x):
    y = x.clone()
    y = operator.iadd(y, 1)
    y = operator.imul(y, 2)
    return y


def operator_itemgetter(x, y, z):
    pick = operator.itemgetter(0, 2)
    return pick([x, y, z]), operator.itemgetter("b")({"a": 1, "b": 2}), \
        operator.itemgetter(1)((x, y))


def operator_attrgetter(x):
    return operator.attrgetter("shape")(x), operator.attrgetter("real", "imag")(3 + 4j)


def operator_methodcaller(x):
    return operator.methodcaller("sum", 0)(x), operator.methodcaller("upper")("ab")


def functools_reduce_ints():
    return functools.reduce(operator.add, [1, 2, 3, 4]), \
        functools.reduce(lambda a, b: a * b, range(1, 6), 1), functools.reduce(max, [3, 9, 2])


def functools_reduce_tensors(x, y, z):
    return functools.reduce(operator.add, [x, y, z]), functools.reduce(torch.maximum, (x, y, z))


def sorted_with_itemgetter():
    rows = [("b", 2), ("a", 3), ("c", 1)]
    return sorted(rows, key=operator.itemgetter(1)), max(rows, key=operator.itemgetter(0))


# ---------------------------------------------------------------- iter / next


def iter_next_list():
    it = iter([1, 2, 3])
    first = next(it)
    second = next(it)
    return first, second, list(it), list(it)


def next_with_default():
    return next(iter([]), "empty"), next(iter("ab"), None), next(iter(range(3, 5)))


def iter_over_dict_keys():
    it = iter({"a": 1, "b": 2})
    return next(it), next(it), next(it, "done")


def iter_tensor_list_next(x, y, z):
    it = iter([x, y, z])
    a = next(it)
    rest = list(it)
    return a + rest[0] - rest[1]


def zip_shared_iterator_pairs():
    it = iter(range(6))
    return list(zip(it, it))


def iter_enumerate_next(x, y):
    it = enumerate([x, y])
    i, a = next(it)
    j, b = next(it)
    return a * i + b * j


def next_on_map_and_filter():
    m = map(lambda v: v * 10, [1, 2, 3])
    f = filter(lambda v: v > 1, [0, 1, 2, 3])
    return next(m), next(f), list(m), list(f)


def iter_of_tensor_rows(x):
    rows = iter(x)
    return next(rows) + next(rows)


def next_exhausted_raises():
    it = iter([1])
    next(it)
    return next(it)


# ---------------------------------------------------------------- grads through builtins


def grads_through_map_and_sum(g, h):
    return sum(map(lambda t: (t * t).sum(), [g, h]))


def grads_through_sorted_and_max(g, h):
    big = max([g, h[:2]], key=lambda t: t.shape[0])
    return big.relu() + sorted([g, h], key=lambda t: t.shape[0])[1]


def grads_through_operator_and_zip(g, h):
    return [operator.mul(a, b) for a, b in zip((g, h), (h, g))]


def grads_through_reduce(g, h):
    return functools.reduce(operator.mul, [g, h, g])


def grads_through_getattr(g):
    return getattr(g, "tanh")() * getattr(math, "e")


SORTED_KEY = "sorted() with key= is not traced (GraphBreak 'sorted() of non-constants')"
MINMAX_KEY = "min()/max() with key= raise 'compares their values' even on ints/strings/shapes"
REDUCE = "functools.reduce is neither a lookaside nor inlinable (GraphBreak)"
GETTERS = "operator.itemgetter/attrgetter/methodcaller cannot be constructed ('__new__ is not Python code')"

CASES = [
    case(len_of_many_things, x34, **PY),
    case(len_of_set_and_bytes, **PY),
    case(isinstance_tuple_of_types, x34, 3, **PY),
    case(isinstance_user_hierarchy, **PY),
    case(isinstance_containers, x34, **PY),
    case(isinstance_abc_sequence, **PY),
    case(issubclass_builtins, **PY),
    case(isinstance_selects_branch, [1, 2], x34, **ONE),
    case(isinstance_selects_branch, 2.5, x34, name="isinstance_selects_branch_float", **ONE),
    case(getattr_with_default, Holder(), x34, **ONE),
    case(setattr_on_input, Holder(), x34),
    case(hasattr_checks, x34, Holder(), **PY),
    case(getattr_tensor_method, x34, **ONE),
    case(getattr_module_function, x34, **ONE),
    case(getattr_class_attribute, **PY),
    case(getattr_missing_raises, Holder()),
    case(simple_namespace_attributes, x34, **ONE),
    case(simple_namespace_escapes, x34, **ONE),
    case(simple_namespace_compared, x34, fullgraph=False, graphs=1),
    case(min_max_constants, **PY),
    case(min_max_of_dict_and_strings, **PY),
    case(min_max_with_key, **PY),
    case(max_of_tensors_by_shape, x34, x25, **ONE),
    case(max_of_shape, x34, **PY),
    case(max_of_tensor_and_int, torch.tensor(2.0), breaks=1),
    case(max_of_tensor_and_int, torch.tensor(-2.0), breaks=1, name="max_of_negative_tensor_and_int"),
    case(min_of_tensor_elements, torch.tensor([3.0, 1.0]), breaks=1),
    case(max_of_list_of_tensors, torch.tensor(1.0), torch.tensor(4.0), breaks=1),
    case(sum_variants, **PY),
    case(sum_of_tensor_list, x34, y34, z34, **ONE),
    case(abs_variants, **PY),
    case(abs_of_tensor, x34, **ONE),
    case(any_all_constants, **PY),
    case(any_all_of_shapes, x34, x25, **PY),
    case(range_properties, **PY),
    case(range_slice_iterated, **PY),
    case(range_negative_step, **PY),
    case(enumerate_with_start, **PY),
    case(zip_uneven_lengths, **PY),
    case(zip_strict_ok, x34, y34, **ONE),
    case(map_builtin_constants, **PY),
    case(map_over_tensors, x34, y34, **ONE),
    case(filter_none_and_lambda, **PY),
    case(filter_tensors_by_shape, x34, x25, y34, **ONE),
    case(sorted_dict_string_reverse, **PY),
    case(sorted_tuples, **PY),
    case(sorted_list_of_lists, **PY),
    case(sorted_with_key_function, **PY),
    case(sorted_stable_by_lambda_key, **PY),
    case(sorted_tensors_by_key, x34, y34, **ONE),
    case(reversed_variants, **PY),
    case(reversed_tensor_list, x34, y34, z34, **ONE),
    case(int_conversions, **PY),
    case(float_conversions, **PY),
    case(bool_conversions, **PY),
    case(str_conversions, **PY),
    case(str_of_list_and_dict, **PY),
    case(conversions_feed_tensor_math, x34, 3, **ONE),
    case(int_of_shape_and_float_of_numel, x34, **PY),
    case(divmod_variants, **PY),
    case(round_variants, **PY),
    case(round_of_tensor, x34),
    case(pow_builtin, **PY),
    case(hex_oct_bin, **PY),
    case(complex_numbers, **PY),
    case(float_methods, **PY),
    case(math_integer_functions, **PY),
    case(math_integer_functions_newer, **PY),
    case(math_rounding, **PY),
    case(math_float_parts, **PY),
    case(math_transcendental, **PY),
    case(math_predicates, **PY),
    case(math_sequences, **PY),
    case(math_dist, **PY),
    case(math_angles_scale_tensor, x34, **ONE),
    case(math_on_shape, x34, **ONE),
    case(operator_on_constants, **PY),
    case(operator_getitem, x34, y34, **ONE),
    case(operator_on_tensors, x34, y34, **ONE),
    case(operator_inplace_functions, x34, **ONE),
    case(operator_itemgetter, x34, y34, z34, **PY),
    case(operator_attrgetter, x34, **PY),
    case(operator_methodcaller, x34, **ONE),
    case(functools_reduce_ints, **PY),
    case(functools_reduce_tensors, x34, y34, z34, **ONE),
    case(sorted_with_itemgetter, **PY),
    case(iter_next_list, **PY),
    case(next_with_default, **PY),
    case(iter_over_dict_keys, **PY),
    case(iter_tensor_list_next, x34, y34, z34, **ONE),
    case(zip_shared_iterator_pairs, **PY),
    case(iter_enumerate_next, x34, y34, **ONE),
    case(next_on_map_and_filter, **PY),
    case(iter_of_tensor_rows, x34, **ONE),
    case(next_exhausted_raises),
    case(grads_through_map_and_sum, g34, h34, grads=True, **ONE),
    case(grads_through_sorted_and_max, g34, h34, grads=True, **ONE),
    case(grads_through_reduce, g34, h34, grads=True, **ONE),
    case(grads_through_getattr, g34, grads=True, **ONE),
    case(grads_through_operator_and_zip, g34, h34, grads=True, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
