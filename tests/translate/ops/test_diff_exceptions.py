"""Differential tests: try/except/else/finally, raise, assert, and match statements.

When nothing raises, try blocks translate into one graph (the handlers are reached only through the
exception table, which the translator never follows). Anything that raises -- `raise`, a failing
assert, a Python error, an op that fails on fake tensors or could fail on tensor values inside a try
-- must behave exactly as eagerly: same exception, same handler taken, same side effects. framejit's
own graph breaks must never land in a user's `except` clause. match statements on Python values and
shapes pick their case at translation time.

PYTEST_DONT_REWRITE: the asserts below must stay plain Python asserts (LOAD_ASSERTION_ERROR), not
pytest's rewritten form.
"""
import collections.abc
import contextlib
import dataclasses
import sys
import traceback

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, randn, randint, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)
x25 = randn(2, 5, seed=4)
w43 = randn(4, 3, seed=5)
g34 = randn(3, 4, seed=6, requires_grad=True)
idx_ok = randint(0, 3, 2, seed=7)
idx_bad = torch.tensor([1, 7])


class ShapeError(ValueError):
    pass


@dataclasses.dataclass
class Cfg:
    mode: str
    width: int


def checked_double(x):
    if x.dim() != 2:
        raise ShapeError(f"expected 2-d, got {x.dim()}")
    return x * 2


def raises_key_error(d):
    return d["missing"]


# ---------------------------------------------------------------- no exception raised


def try_except_no_error(x):
    try:
        y = x + 1
    except ValueError:
        y = x - 1
    return y


def try_except_else(x):
    try:
        y = x * 2
    except (KeyError, IndexError):
        y = x
    else:
        y = y + 10
    return y


def try_finally_tensor(x):
    try:
        y = x.sin()
    finally:
        z = x.cos()
    return y + z


def try_except_else_finally(x):
    log = []
    try:
        y = x.exp()
        log.append("try")
    except RuntimeError as e:
        log.append(str(e))
        y = x
    else:
        log.append("else")
    finally:
        log.append("finally")
    return y, log


def nested_try_blocks(x):
    try:
        try:
            y = x @ w43
        except TypeError:
            y = None
        z = y.relu()
    except Exception:
        z = x
    return z


def return_inside_try_finally(x, log):
    try:
        return x * 3
    finally:
        log.append("cleanup")


def break_continue_in_try_finally(x):
    out = []
    for i in range(5):
        try:
            if i == 1:
                continue
            if i == 3:
                break
            out.append(x * i)
        finally:
            out.append(i)
    return out


def try_inside_loop(xs):
    total = xs[0] * 0
    for t in xs:
        try:
            total = total + t.softmax(-1)
        except RuntimeError:
            pass
    return total


def except_as_name_unused(x):
    try:
        y = x.t() @ x
    except Exception as err:
        y = err
    return y


def try_around_inlined_helper(x):
    try:
        y = checked_double(x)
    except ShapeError:
        y = x
    return y


def helper_with_try(x):
    try:
        return x.tanh()
    finally:
        pass


def inlined_helper_has_try(x):
    return helper_with_try(x) + 1


def try_with_grads(g):
    try:
        y = (g * g).sum()
    except RuntimeError:
        y = g.sum()
    return y


def try_static_indexing(x):
    try:
        y = x[1:, :2] + x[0, :2]
    except IndexError:
        y = x
    return y


# ---------------------------------------------------------------- asserts


def assert_on_shape(x):
    assert x.shape == (3, 4)
    assert x.dim() == 2, "must be 2-d"
    return x.sum(0)


def assert_on_python_values(x, n, mode):
    assert n > 0 and isinstance(n, int)
    assert mode in ("a", "b"), f"bad mode {mode}"
    return x * n


def assert_dtype_and_grad(g):
    assert g.dtype == torch.float32
    assert g.requires_grad
    return g * 2


def failing_assert_on_shape(x):
    assert x.shape[0] == 5, f"rows: {x.shape[0]}"
    return x


def assert_on_tensor_value(x):
    assert (x.abs() >= 0).all()
    return x + 1


# ---------------------------------------------------------------- raising


def raise_not_taken(x):
    if x.shape[0] > 10:
        raise ValueError("too big")
    return x - 1


def raise_taken(x):
    if x.shape[0] == 3:
        raise ShapeError("three rows")
    return x


def raise_caught_locally(x):
    try:
        if x.shape[1] == 4:
            raise KeyError("four")
        y = x
    except KeyError as e:
        y = x * len(e.args)
    return y


def raise_from_helper_caught(x):
    try:
        return checked_double(x[0])
    except ShapeError as e:
        return str(e), x.shape


def python_error_caught(x):
    try:
        value = raises_key_error({"a": 1})
    except KeyError:
        value = 5
    return x * value


def python_error_uncaught(x):
    return x + raises_key_error({})


def fake_op_error_caught(x):
    try:
        y = x @ x
    except RuntimeError:
        y = x @ x.t()
    return y


def fake_op_error_uncaught(x):
    return x @ x


def runtime_index_error_caught(x, i):
    try:
        y = x.index_select(0, i)
    except IndexError:
        y = x * 0
    return y


def runtime_linalg_error_caught(a):
    try:
        out = torch.linalg.cholesky(a)
    except RuntimeError:
        out = a.abs()
    return out


def runtime_error_in_finally_region(x, i):
    # try/finally cannot stop the error: the op stays in the graph and raises from there
    log = []
    try:
        return torch.embedding(x, i), log
    finally:
        log.append("finally")


def raise_from_chain(x):
    try:
        {}["k"]
    except KeyError as e:
        raise ShapeError("wrapped") from e
    return x


# ---------------------------------------------------------------- Python exceptions raised and caught


class Registry(collections.abc.Mapping):
    """A Mapping whose .get is collections.abc's `try: self[key] except KeyError: default`."""

    def __init__(self, table):
        self.table = table

    def __getitem__(self, key):
        return self.table[key]

    def __iter__(self):
        return iter(self.table)

    def __len__(self):
        return len(self.table)


REGISTRY = Registry({"relu": torch.relu})


class Swallow:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return exc_type is not None and issubclass(exc_type, LookupError)


def mapping_get_default(x):
    act = REGISTRY.get("gelu", torch.tanh)
    return act(x), REGISTRY.get("relu", None)(x)


def exception_message_in_handler(x):
    try:
        checked_double(x[0])
    except ShapeError as e:
        return x * 2, str(e), e.args, isinstance(e, ValueError)


def reraise_to_outer_handler(x):
    try:
        try:
            {}["k"]
        except KeyError:
            y = x + 1
            raise
    except LookupError:
        y = x * 10
    return y


def finally_runs_on_caught_exception(x, log):
    try:
        try:
            log.append("try")
            raise IndexError("i")
        finally:
            log.append("finally")
    except IndexError:
        log.append("except")
    return x + len(log), log


def exception_through_helper_finally(x, log):
    def helper(t):
        try:
            return checked_double(t)
        finally:
            log.append("helper cleanup")
    try:
        return helper(x[0])
    except ShapeError:
        return x


def raise_from_caught(x):
    try:
        try:
            {}["k"]
        except KeyError as e:
            raise ShapeError("wrapped") from e
    except ShapeError as e:
        return x, str(e)


def stop_iteration_caught(x):
    it = iter([x])
    first = next(it)
    try:
        second = next(it)
    except StopIteration:
        second = first * 2
    return second


def exception_from_generator_caught(x):
    def gen():
        yield x
        raise ShapeError("gen failed")
    out = []
    try:
        for t in gen():
            out.append(t + 1)
    except ShapeError:
        out.append(x * 0)
    return out


def user_manager_suppresses(x):
    y = x
    with Swallow():
        y = x + 1
        {}["missing"]
        y = x + 100
    return y


def contextlib_suppress_catches(x):
    y = x * 2
    with contextlib.suppress(KeyError, IndexError):
        y = y + [1, 2][5]
    return y


def exception_in_no_grad_propagates_and_restores(g):
    try:
        with torch.no_grad():
            y = g * 2
            [][0]
    except IndexError:
        y = g * 3
    return y, torch.is_grad_enabled()


def failing_assert_caught(x):
    try:
        assert x.shape[0] == 7, "rows"
        y = x
    except AssertionError as e:
        y = x * 2, str(e)
    return y


def except_tuple_and_else(x, d):
    try:
        v = d["a"]
    except (KeyError, TypeError):
        v = -1
    else:
        v = v + 1
    return x * v


def attribute_error_caught(x, obj):
    try:
        scale = obj.scale
    except AttributeError:
        scale = 0.5
    return x * scale


def bad_call_caught(x):
    def f(a):
        return a
    try:
        f(x, x)
    except TypeError:
        return x - 1
    return x


# ---------------------------------------------------------------- graph breaks inside try


def print_inside_try(x):
    try:
        print("hello")
        y = x + 1
    except Exception:
        y = x - 100
    return y


def reraise_after_break_in_handler(x):
    y = x + 1
    try:
        raise ValueError("stop")
    except ValueError as err:
        print("caught", err)
        y = y * 2
        raise


def exc_info_after_break_in_handler(x):
    y = x + 1
    try:
        raise KeyError("k")
    except KeyError:
        print("caught")
        return y, sys.exc_info()[0].__name__


def context_after_break_in_handler(x):
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            print("caught")
            raise TypeError("outer")
    except TypeError as e:
        return x + 1, type(e.__context__).__name__


def format_exc_after_break_in_handler(x):
    try:
        raise ValueError("boom")
    except ValueError:
        opaque_helper(x)
        return x * 2, traceback.format_exc().splitlines()[-1]


def exc_info_after_break_in_finally(x, log):
    try:
        try:
            raise IndexError("i")
        finally:
            print("cleanup")
            log.append(sys.exc_info()[0].__name__)
    except IndexError:
        return x - 1


@framejit.disable
def opaque_helper(x):
    return x + 1


def item_inside_try_is_not_caught(x):
    try:
        v = x.sum().item()
    except Exception:
        v = -1.0
    return v


def data_branch_inside_try(x):
    try:
        if x.mean() > 0:
            y = x
        else:
            y = -x
    except Exception:
        y = x * 0
    return y


def unsupported_call_inside_bare_except(x):
    try:
        y = x * len(repr(x.shape))
    except:  # noqa: E722
        y = None
    return y


# ---------------------------------------------------------------- match statements


def match_on_shape_tuple(x):
    match tuple(x.shape):
        case (rows, cols) if rows < cols:
            return x.t(), rows
        case (rows, cols):
            return x, cols
        case _:
            return None


def match_sequence_star(x, dims):
    match dims:
        case []:
            return x
        case [d]:
            return x.sum(d)
        case [first, *rest]:
            return x.sum(first), rest


def match_mapping(x, opts):
    match opts:
        case {"scale": s, "shift": b}:
            return x * s + b
        case {"scale": s, **rest}:
            return x * s, rest
        case _:
            return x


def match_class_pattern(x, cfg):
    match cfg:
        case Cfg(mode="relu", width=w):
            return x.relu()[:, :w]
        case Cfg(mode=m, width=w) if w > 2:
            return m, x[:, :w]
        case _:
            return x


def match_builtin_class(x, value):
    match value:
        case bool(b):
            return x * (2 if b else 3)
        case int(n):
            return x + n
        case str() as s:
            return s
        case float():
            return x - value


def match_tensor_class(x):
    match x:
        case torch.Tensor(ndim=2, dtype=torch.float32):
            return x * 2
        case torch.Tensor():
            return x


def match_literals_and_or(x, kind):
    match kind:
        case "a" | "b":
            return x + 1
        case None:
            return x
        case 1 | 2 | 3:
            return x * kind
        case _:
            return -x


def match_nested(x, spec):
    match spec:
        case ("pad", (int(left), int(right))):
            return torch.nn.functional.pad(x, (left, right))
        case ("scale", factor):
            return x * factor


def match_dtype_value(x):
    match x.dtype:
        case torch.float64:
            return x
        case torch.float32:
            return x.double()


CASES = [
    case(try_except_no_error, x34, **ONE),
    case(try_except_else, x34, **ONE),
    case(try_finally_tensor, x34, **ONE),
    case(try_except_else_finally, x34, **ONE),
    case(nested_try_blocks, x34, **ONE),
    case(return_inside_try_finally, x34, [], **ONE),
    case(break_continue_in_try_finally, x34, **ONE),
    case(try_inside_loop, [x34, y34], **ONE),
    case(except_as_name_unused, x34, **ONE),
    case(try_around_inlined_helper, x34, **ONE),
    case(inlined_helper_has_try, x34, **ONE),
    case(try_with_grads, g34, grads=True, **ONE),
    case(try_static_indexing, x34, **ONE),
    case(assert_on_shape, x34, **ONE),
    case(assert_on_python_values, x34, 2, "b", **ONE),
    case(assert_dtype_and_grad, g34, **ONE),
    case(failing_assert_on_shape, x34),
    case(assert_on_tensor_value, x34),
    case(raise_not_taken, x34, **ONE),
    case(raise_taken, x34),
    case(raise_caught_locally, x34, **ONE),
    case(raise_from_helper_caught, x34, **PY),
    case(python_error_caught, x34, **ONE),
    case(python_error_uncaught, x34),
    case(fake_op_error_caught, x34),
    case(fake_op_error_uncaught, x34),
    case(runtime_index_error_caught, x34, idx_ok),
    case(runtime_index_error_caught, x34, idx_bad, name="runtime_index_error_caught_bad"),
    case(runtime_linalg_error_caught, -torch.eye(3)),
    case(runtime_linalg_error_caught, torch.eye(3) * 2, name="runtime_linalg_error_caught_ok"),
    case(runtime_error_in_finally_region, x34, idx_bad),
    case(runtime_error_in_finally_region, x34, idx_ok, name="runtime_error_in_finally_region_ok", **ONE),
    case(raise_from_chain, x34),
    case(print_inside_try, x34),
    case(reraise_after_break_in_handler, x34),
    case(exc_info_after_break_in_handler, x34),
    case(context_after_break_in_handler, x34),
    case(format_exc_after_break_in_handler, x34),
    case(exc_info_after_break_in_finally, x34, []),
    case(item_inside_try_is_not_caught, x34),
    case(data_branch_inside_try, x34),
    case(unsupported_call_inside_bare_except, x34, **ONE),
    case(mapping_get_default, x34, **ONE),
    case(exception_message_in_handler, x34, **ONE),
    case(reraise_to_outer_handler, x34, **ONE),
    case(finally_runs_on_caught_exception, x34, [], **ONE),
    case(exception_through_helper_finally, x34, [], **PY),
    case(raise_from_caught, x34, **PY),
    case(stop_iteration_caught, x34, **ONE),
    case(exception_from_generator_caught, x34, **ONE),
    case(user_manager_suppresses, x34, **ONE),
    case(contextlib_suppress_catches, x34, **ONE),
    case(exception_in_no_grad_propagates_and_restores, g34, **ONE),
    case(failing_assert_caught, x34, **ONE),
    case(except_tuple_and_else, x34, {"a": 2}, **ONE),
    case(except_tuple_and_else, x34, {}, name="except_tuple_and_else_missing", **ONE),
    case(attribute_error_caught, x34, Cfg("a", 1), **ONE),
    case(bad_call_caught, x34, **ONE),
    case(match_on_shape_tuple, x34, **ONE),
    case(match_on_shape_tuple, x34.t().contiguous(), name="match_on_shape_tuple_wide", **PY),
    case(match_sequence_star, x34, [0, 1], **ONE),
    case(match_sequence_star, x34, (1,), name="match_sequence_single", **ONE),
    case(match_mapping, x34, {"scale": 2.0, "shift": 1.0}, **ONE),
    case(match_mapping, x34, {"scale": 2.0, "other": 3}, name="match_mapping_rest", **ONE),
    case(match_class_pattern, x34, Cfg("relu", 2), **ONE),
    case(match_class_pattern, x34, Cfg("tanh", 3), name="match_class_guard", **ONE),
    case(match_builtin_class, x34, True, **ONE),
    case(match_builtin_class, x34, 4, name="match_builtin_int", **ONE),
    case(match_builtin_class, x34, "s", name="match_builtin_str", **PY),
    case(match_tensor_class, x34, **ONE),
    case(match_literals_and_or, x34, "b", **ONE),
    case(match_literals_and_or, x34, 3, name="match_literals_int", **ONE),
    case(match_nested, x34, ("pad", (1, 2)), **ONE),
    case(match_nested, x34, ("scale", 0.5), name="match_nested_scale", **ONE),
    case(match_dtype_value, x34, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_runtime_failing_op_in_try_stays_in_the_graph():
    """The op stays in the graph; if it raises, the frame reruns as Python and its handler sees the error
    (the `_bad` case above; convert/raising_graphs.py)."""
    run_case(runtime_index_error_caught, (x34, idx_ok), {}, dict(graphs=1, breaks=0))
