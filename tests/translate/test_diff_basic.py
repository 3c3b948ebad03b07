"""Differential tests: plain Python values, arguments, globals, closures and returns under framejit.

Constant folding of int/float/str/bool expressions, builtins, default/keyword/keyword-only
arguments, reading (and writing) module globals, reading closure cells, and the shapes a return
can take: None, an input unchanged, one object twice. Also checks that the differential harness
itself notices a wrong "compiler", so a green run means something.
"""

import math

import pytest
import torch

import tests.differential as differential
from tests.differential import CASE_FIELDS, case, check, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)

SCALE = 3
OFFSETS = (1.0, -2.0)
BIAS = randn(4, seed=30)
NAMES = {"alpha": 0.5, "beta": 2}
CALLS = []
COUNTER = 0


class Settings:
    """A plain user object held in a global: read and mutated by attribute."""

    def __init__(self):
        self.scale = 2.0
        self.calls = 0
        self.history = []


SETTINGS = Settings()


# ---------------------------------------------------------------- constant folding


def int_arithmetic():
    return 2 ** 10 + 7 // 2 - 3 % 2, -(5 // -2), divmod(17, 5)


def float_arithmetic():
    a = 1.5 * 4
    return a / 3, a ** 0.5, 7.0 // 2, abs(-2.25), round(2.675, 2)


def string_building():
    name = "frame" + "jit"
    return name * 2, name.upper(), "-".join([name, "x"]), name[1:4], len(name)


def fstring_formatting(n):
    return f"n={n:03d} half={n / 2:.2f} {n!r}", "{}-{}".format(n, n + 1)


def bool_short_circuit(a, b):
    return a and b, a or b, not a, (a or 0) and b


def numeric_conversions():
    return int("42") + int(3.9), float("2.5"), str(7) + "!", bool(0), int(True)


def builtins_min_max_sum():
    values = [3, 1, 4, 1, 5]
    return min(values), max(values, default=0), sum(values), sorted(values), list(reversed(values))


def math_module(x):
    return x * math.pi + math.sqrt(16) - math.floor(2.7) + math.log(math.e)


def int_methods():
    return (255).bit_length(), (-7).__abs__(), (10).to_bytes(2, "big")


def int_from_bytes_classmethod():
    return int.from_bytes(b"\x01\x00", "big") + 1


def chained_python_comparisons(n):
    return 1 < n < 10, 0 <= n <= 2, n == 5 != 6


def ord_chr_hash():
    return ord("a") + 1, chr(98), hash(7) == hash(7.0)


def walrus_and_ternary(n):
    return (m := n * 2) + m, "big" if n > 3 else "small"


def augmented_python_ints(n):
    total = 0
    total += n
    total *= 3
    total -= 1
    total //= 2
    total **= 2
    return total


def tensor_times_folded_constant(x):
    return x * (3 + 4) - 2 ** 3 / 4


def python_float_from_int_math(x):
    k = 10 // 3 * 1.5
    return x + k, k


# ---------------------------------------------------------------- arguments


def default_argument(x, scale=2.0):
    return x * scale


def keyword_arguments(x, y, alpha=1.0, beta=0.0):
    return x * alpha + y * beta


def keyword_only(x, *, power=2, shift=0):
    return x ** power + shift


def positional_only(x, y, /, z=1):
    return x - y * z


def none_default(x, bias=None):
    if bias is None:
        return x
    return x + bias


def mutable_default_read(x, table={"k": 3}):
    return x * table["k"]


# ---------------------------------------------------------------- globals and closures


def read_global_constant(x):
    return x * SCALE


def read_global_tensor(x):
    return x + BIAS


def read_global_tuple_and_dict(x):
    return x * OFFSETS[0] + NAMES["alpha"] + OFFSETS[1] * NAMES["beta"]


def write_global_counter(x):
    global COUNTER
    COUNTER += 1
    return x + COUNTER


def append_to_global_list(x):
    CALLS.append("called")
    return x * len(CALLS)


def mutate_global_tensor_inplace(x):
    BIAS.add_(1)
    return x + BIAS


def read_global_object_attribute(x):
    return x * SETTINGS.scale


def mutate_global_object(x):
    SETTINGS.calls += 1
    SETTINGS.history.append(SETTINGS.calls)
    return x + SETTINGS.calls


def read_and_mutate_argument_object(x, settings):
    settings.scale = settings.scale * 3
    return x * settings.scale, settings


def _make_closure_scale(factor):
    def scaled(x):
        return x * factor
    return scaled


def _make_closure_tensor(t):
    def shifted(x):
        return x - t
    return shifted


def _make_closure_counter():
    count = 0

    def bump(x):
        nonlocal count
        count += 1
        return x * count
    return bump


closure_scale = _make_closure_scale(1.5)
closure_tensor = _make_closure_tensor(randn(4, seed=31))
closure_counter = _make_closure_counter()


def nested_function_closure(x):
    k = 4

    def inner(y):
        return y * k + 1
    return inner(x) + inner(x * 2)


def lambda_inside(x):
    square = lambda t: t * t  # noqa: E731
    return square(x) + square(2)


def _helper_add_scaled(x, y, s):
    return x + y * s


def calls_module_helper(x, y):
    return _helper_add_scaled(x, y, SCALE) - _helper_add_scaled(y, x, 0.5)


def isinstance_and_type_checks(x):
    return isinstance(x, torch.Tensor), type(x) is torch.Tensor, isinstance(3, (int, float)), callable(len)


def dtype_device_comparisons(x):
    return x.dtype == torch.float32, x.device.type == "cpu", x.dtype.is_floating_point, str(x.dtype)


def shape_in_fstring(x):
    return f"{x.shape[0]}x{x.shape[1]}", x + 1


# ---------------------------------------------------------------- returns


def returns_nothing(x):
    y = x + 1  # noqa: F841


def returns_none_explicitly(x):
    x + 1
    return None


def returns_input_unchanged(x):
    return x


def returns_same_tensor_twice(x):
    y = x * 2
    return y, y


def returns_input_and_computed(x):
    return x, x + 1, x


def returns_view_of_input(x):
    return x.view(-1), x[1]


def returns_python_and_tensor(x):
    return 7, "seven", 7.0, None, True, x - 7


def print_inside(x):
    print("shape", tuple(x.shape), 3 + 4)
    return x + 1


def raises_value_error(x):
    if SCALE > 2:
        raise ValueError(f"scale {SCALE} too big")
    return x


def raises_shape_error(x, y):
    return x @ y


def raises_key_error(x):
    return x * NAMES["gamma"]


CASES = [
    case(int_arithmetic, **PY),
    case(float_arithmetic, **PY),
    case(string_building, **PY),
    case(fstring_formatting, 7, **PY),
    case(bool_short_circuit, 0, 3, **PY),
    case(numeric_conversions, **PY),
    case(builtins_min_max_sum, **PY),
    case(math_module, x34, **ONE),
    case(int_methods, **PY),
    case(int_from_bytes_classmethod, **PY),
    case(chained_python_comparisons, 5, **PY),
    case(ord_chr_hash, **PY),
    case(walrus_and_ternary, 4, **PY),
    case(augmented_python_ints, 5, **PY),
    case(tensor_times_folded_constant, x34, **ONE),
    case(python_float_from_int_math, x34, **ONE),
    case(default_argument, x34, **ONE),
    case(keyword_arguments, x34, y34, kwargs=dict(beta=0.5), **ONE),
    case(keyword_only, x34, kwargs=dict(power=3), **ONE),
    case(positional_only, x34, y34, **ONE),
    case(none_default, x34, **PY),
    case(mutable_default_read, x34, **ONE),
    case(read_global_constant, x34, **ONE),
    case(read_global_tensor, x34, **ONE),
    case(read_global_tuple_and_dict, x34, **ONE),
    case(write_global_counter, x34),
    case(append_to_global_list, x34),
    case(mutate_global_tensor_inplace, x34),
    case(read_global_object_attribute, x34, **ONE),
    case(mutate_global_object, x34),
    case(read_and_mutate_argument_object, x34, Settings()),
    case(closure_scale, x34, name="closure_scale", **ONE),
    case(closure_tensor, x34, name="closure_tensor", **ONE),
    case(closure_counter, x34, name="closure_counter"),
    case(nested_function_closure, x34, **ONE),
    case(lambda_inside, x34, **ONE),
    case(calls_module_helper, x34, y34, **ONE),
    case(isinstance_and_type_checks, x34, **PY),
    case(dtype_device_comparisons, x34, **PY),
    case(shape_in_fstring, x34, **ONE),
    case(returns_nothing, x34, **PY),
    case(returns_none_explicitly, x34, **PY),
    case(returns_input_unchanged, x34, **PY),
    case(returns_same_tensor_twice, x34, **ONE),
    case(returns_input_and_computed, x34, **ONE),
    case(returns_view_of_input, x34, **ONE),
    case(returns_python_and_tensor, x34, **ONE),
    case(print_inside, x34),
    case(raises_value_error, x34),
    case(raises_shape_error, x34, y34),
    case(raises_key_error, x34),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_same_tensor_twice_is_one_object():
    out = run_case(returns_same_tensor_twice, (x34,), {}, ONE)
    assert out[0] is out[1]


def test_keyword_call_with_all_defaults_overridden():
    check(keyword_arguments, x34, y34, alpha=2.0, beta=-1.0, fullgraph=True, graphs=1)


# ---------------------------------------------------------------- the harness checks itself


class _WrongCompiler:
    """Stands in for framejit with a compile() whose output differs from eager in one way."""

    def __init__(self, framejit, distort):
        self._framejit = framejit
        self._distort = distort
        self.Unsupported = getattr(framejit, "Unsupported", Exception)
        self.backends = framejit.backends

    def reset(self):
        self._framejit.reset()

    def compile(self, fn, backend=None, fullgraph=False):
        distort = self._distort
        return lambda *args, **kwargs: distort(fn, args, kwargs)


def _off_by_a_little(fn, args, kwargs):
    return fn(*args, **kwargs) + 1e-3


def _prints(fn, args, kwargs):
    print("extra")
    return fn(*args, **kwargs)


def _mutates_input(fn, args, kwargs):
    out = fn(*args, **kwargs)
    args[0].add_(1)
    return out


def _copies_output(fn, args, kwargs):
    return fn(*args, **kwargs).clone()


def _list_for_tuple(fn, args, kwargs):
    return list(fn(*args, **kwargs))


def _writes_global(fn, args, kwargs):
    out = fn(*args, **kwargs)
    CALLS.append("spurious")
    return out


def _bumps_global_object(fn, args, kwargs):
    out = fn(*args, **kwargs)
    SETTINGS.calls += 10
    return out


@pytest.mark.parametrize("distort,fn,part", [
    (_bumps_global_object, mutate_global_object, "globals"),
    (_off_by_a_little, tensor_times_folded_constant, "result"),
    (_prints, tensor_times_folded_constant, "stdout"),
    (_mutates_input, tensor_times_folded_constant, "input args"),
    (_copies_output, returns_input_unchanged, "identity"),
    (_list_for_tuple, returns_input_and_computed, "result"),
    (_writes_global, append_to_global_list, "globals"),
])
def test_harness_catches(monkeypatch, distort, fn, part):
    wrong = _WrongCompiler(differential._framejit(), distort)
    monkeypatch.setattr(differential, "_framejit", lambda: wrong)
    with pytest.raises(differential.DifferentialMismatch, match=part):
        check(fn, x34.clone())
