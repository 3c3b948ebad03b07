"""A graph break followed by code that only returns needs no resume function (convert/resume.py PlainTail).

`return layer(x)` where `layer` breaks inside, `f(x)` as a function's last statement, `g(y); return y`:
the code after the break returns what is already on the stack or in a local. The break function runs
those few instructions itself (as dynamo does) instead of calling a compiled resume function that would
be one more conversion per code, one more guarded call per run, and never a graph (PyG's two-layer GNNs
converted one frame more than torch.compile for this). Each test checks the result against eager
(tests/differential.py) and that no resume function of the outer code was converted.
"""
import torch

import framejit
from tests.differential import check, randn


def _noisy(x):
    print(end="")                       # a graph break inside the callee
    return x * 2


def returns_the_call(x):
    y = x + 1
    return _noisy(y)


def call_is_the_last_statement(x, out):
    out.add_(x.cos())
    _noisy(out)                         # then the implicit `return None`


def returns_a_local_after_the_call(x):
    y = x.sin()
    _noisy(y)
    return y


def branch_on_data(x):
    if x.sum() > 0:                     # a data-dependent branch: a break at the jump
        return x
    return x.neg() * 3


def _resume_conversions(fn):
    return [m for m in framejit.metrics() if m.co_name.startswith("__fj_resume") and m.co_name.endswith(fn.__name__)]


def _check_no_resume(fn, *args, graphs):
    framejit.clear_metrics()
    check(fn, *args, graphs=graphs)
    assert _resume_conversions(fn) == []


def test_return_of_a_call_that_breaks_has_no_resume_function():
    _check_no_resume(returns_the_call, randn(3), graphs=2)      # x + 1; the callee's y * 2


def test_a_call_as_the_last_statement_has_no_resume_function():
    _check_no_resume(call_is_the_last_statement, randn(3), torch.zeros(3), graphs=2)


def test_returning_a_live_local_after_the_call_has_no_resume_function():
    _check_no_resume(returns_a_local_after_the_call, randn(3), graphs=2)


def test_a_branch_whose_one_side_only_returns_resumes_on_the_other_side_only():
    for sign in (1, -1):
        framejit.clear_metrics()
        check(branch_on_data, randn(4).abs() * sign)
        names = {m.co_name for m in _resume_conversions(branch_on_data)}
        assert len(names) == (0 if sign > 0 else 1), names
