"""Break and resume functions of functions that share a code object (convert/resume.py).

Closures of one `def`, functions made by one decorator (every @torch.no_grad() function is a closure of
torch's `decorate_context`), functools.wraps wrappers: they share one code object, hence its cache
entries. The code after a graph break runs in a break function and a compiled resume function, and
those must run over the cells of the function actually called, never over those of the function whose
call converted the code first. Each test compiles several such functions into one cache and checks
every one against its own eager call (differential.check_together).
"""
import functools
import types

import pytest
import torch

import framejit
from tests.differential import check_together, randn


def _scaled_after_break(k):
    def inner(a):
        print(end="")                       # a graph break
        return a * k
    return inner


def test_closures_of_one_code_object_with_a_break_run_their_own_cells():
    check_together([_scaled_after_break(k) for k in (2.0, 3.0, 4.0)], randn(2, 3))


def _first(x):
    print(end="")
    return x + 1


def _second(x):
    print(end="")
    return x * 3


def test_two_different_no_grad_functions_with_a_break_each_run_their_own_body():
    check_together([torch.no_grad()(_first), torch.no_grad()(_second)], randn(4, requires_grad=True))


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(x):
        print(end="")                       # the break comes first: `fn` is read after it only
        return fn(x) + 1
    return wrapper


def test_functools_wraps_wrappers_with_a_break_call_their_own_function():
    check_together([_logged(torch.sin), _logged(torch.cos), _logged(lambda t: t * 5)], randn(3))


def _with_default(k):
    def f(a, k=k):
        print(end="")
        return a * k
    return f


def _with_kwdefault(k):
    def f(a, *, k=k):
        print(end="")
        return a + k
    return f


def test_defaults_and_kwdefaults_differing_between_functions_of_one_code():
    check_together([_with_default(2.0), _with_default(-1.0)], randn(3))
    check_together([_with_kwdefault(2.0), _with_kwdefault(7.0)], randn(3))


def _tensor_cell(t):
    def f(x):
        y = x + t                           # a graph input read from the cell
        print(end="")
        return y * t                        # and again after the break, in the resume function
    return f


def test_cells_holding_tensors_and_constants_with_a_break():
    # same shapes (the entries' guards pass for both, so only the cells tell them apart), other shapes,
    # and constants
    fns = [_tensor_cell(randn(3, seed=1)), _tensor_cell(randn(3, seed=2)), _tensor_cell(randn(2, 3, seed=3)),
           _tensor_cell(2.0), _tensor_cell(5)]
    check_together(fns, randn(3))


def _branch_on_data(k):
    def f(x):
        y = x + 1
        if y.sum() > 0:                     # a data-dependent branch: a break at a conditional jump,
            return y * k                    # with a resume function for each side
        return y - k
    return f


def _break_in_try(k):
    def f(x):
        y = x + 1
        try:
            print(end="")                   # a call inside a try block: the break function is a copy of
            z = y * k                       # the code, entered at the call; `k` is read after it only
        except ValueError:
            z = y
        return z + k
    return f


@pytest.mark.parametrize("sign", [1, -1], ids=["taken", "not-taken"])
def test_closures_breaking_at_a_conditional_jump(sign):
    check_together([_branch_on_data(2.0), _branch_on_data(5.0)], randn(3).abs() * sign + sign * 2)


def test_closures_breaking_inside_a_try_block():
    check_together([_break_in_try(2.0), _break_in_try(3.0)], randn(3))


def _counter():
    n = 0

    def step(x):
        nonlocal n
        print(end="")
        n += 1                              # written after the break: the resume function's cell must be
        return x * n                        # the caller's own
    return step


def test_a_cell_written_after_the_break_is_the_callers_cell():
    a, b = _counter(), _counter()
    ca, cb = framejit.compile(a), framejit.compile(b)
    x = torch.ones(2)
    assert torch.equal(ca(x), x * 1) and torch.equal(ca(x), x * 2)
    assert torch.equal(cb(x), x * 1)        # b's own count, not a's
    assert torch.equal(ca(x), x * 3) and torch.equal(cb(x), x * 2)


def _helper(k):
    def helper(x):
        print(end="")                       # the callee breaks: the caller calls it through its wrapper
        return x * k
    return helper


_HELPER_TWO, _HELPER_THREE = _helper(2.0), _helper(3.0)


def _calls_two(x):
    return _HELPER_TWO(x + 1) - 1


def _calls_three(x):
    return _HELPER_THREE(x + 1) - 1


def test_a_break_inside_a_callee_that_is_a_closure():
    check_together([_calls_two, _calls_three], randn(3))


def _calls_a_helper_made_per_call(x, k):
    def helper(y):                          # a new closure on every call, over `k`
        print(end="")
        return y * k
    return helper(x) + 1                    # the caller runs as plain Python, the helper compiled


def test_a_breaking_helper_made_anew_on_each_call_uses_that_calls_cells():
    compiled = framejit.compile(_calls_a_helper_made_per_call)
    x = randn(3)
    for k in (2.0, 3.0, 2.0, -1.0):
        torch.testing.assert_close(compiled(x, k), _calls_a_helper_made_per_call(x, k))


def _reads_global(x):
    y = x * SCALE
    print(end="")
    return y + SCALE


SCALE = 2.0


def test_functions_of_one_code_object_over_different_globals():
    other = types.FunctionType(_reads_global.__code__, {"SCALE": -3.0, "print": print}, "_reads_global")
    check_together([_reads_global, other], randn(3))


def test_a_stack_value_passed_to_a_break_function_is_not_kept_in_its_frame():
    # the break function pushes the stack back and deletes its arguments, as the original frame has the
    # value on its stack only: an exception raised there must not hold that frame through a local
    def raises(x):
        y = x + 1
        raise ValueError(f"bad {y.shape}")

    compiled = framejit.compile(raises)
    try:
        compiled(torch.ones(2))
    except ValueError as e:
        frame = e.__traceback__
        while frame.tb_next is not None:
            frame = frame.tb_next
        assert not any(v is e for v in frame.tb_frame.f_locals.values())
    else:
        raise AssertionError("no exception")


class _Base:
    def f(self, x):
        return x + 1


class _Child(_Base):
    def f(self, x):
        print("break")               # the rest runs in a resume function
        return super().f(x) * 2     # zero-argument super() reads the frame's first argument


def test_zero_argument_super_after_a_break():
    from tests.differential import check
    child = _Child()
    check(lambda x: child.f(x), torch.ones(2))
    check(_Child.f, child, torch.ones(2))
