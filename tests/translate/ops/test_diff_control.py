"""Differential tests: control flow, comparisons and calling conventions under framejit.

Branches decided by constants, Python arguments, shapes, dtypes and None-ness; loops over
range(n), over shapes, over lists and tuples of tensors, with break/continue/else; `is`, `in`,
`not`; *args/**kwargs both in definitions and in calls into torch; context managers; and a few
programs whose control flow depends on tensor data, which must still behave exactly as eager
(framejit may break the graph there, so no fullgraph).
"""

import pytest
import torch
import torch.nn.functional as F

from tests.differential import CASE_FIELDS, case, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)
z34 = randn(3, 4, seed=3)
pos = randn(3, 4, seed=4).abs() + 0.1
neg = -pos
xd = randn(3, 4, seed=5, dtype=torch.float64)
g34 = randn(3, 4, seed=6, requires_grad=True)
MODE = "gelu"


# ---------------------------------------------------------------- branches


def branch_on_int_argument(x, n):
    if n > 5:
        return x * 2
    elif n == 5:
        return x + 5
    else:
        return x - 1


def branch_on_string_argument(x, mode):
    if mode == "relu":
        return F.relu(x)
    elif mode == "tanh":
        return torch.tanh(x)
    return x


def branch_on_global_string(x):
    if MODE == "relu":
        return F.relu(x)
    elif MODE == "gelu":
        return F.gelu(x)
    raise ValueError(MODE)


def branch_on_shape(x):
    if x.shape[0] > 2:
        return x[:2]
    return x


def branch_on_ndim_and_numel(x):
    if x.ndim == 2 and x.numel() > 10:
        return x.sum(1)
    return x.sum()


def branch_on_dtype(x):
    if x.dtype == torch.float64:
        return x.float() * 2
    return x * 3


def branch_on_none(x, bias=None, scale=None):
    out = x
    if bias is not None:
        out = out + bias
    if scale is None:
        scale = 0.5
    return out * scale


def branch_on_requires_grad(x):
    if x.requires_grad:
        return x * 2
    return x.detach() + 1


def branch_on_isinstance(value):
    if isinstance(value, torch.Tensor):
        return value * 2
    if isinstance(value, (list, tuple)):
        return [v + 1 for v in value]
    return value


def ternary_on_dims(x):
    axis = -1 if x.shape[-1] > x.shape[0] else 0
    return x.softmax(axis), axis


def match_statement(x, kind):
    match kind:
        case 0:
            return x
        case 1 | 2:
            return x * kind
        case _:
            return -x


def match_on_shape(x):
    match tuple(x.shape):
        case (rows, cols) if rows < cols:
            return x.t()
        case (rows, cols):
            return x
    return None


# ---------------------------------------------------------------- is / in / not / comparisons


def identity_tests(x, y):
    return x is y, x is not y, None is None, x is x


def not_operator(flag, items):
    return not flag, not items, not [], not (flag and items)


def in_operator_on_tuple_of_names(x, name):
    if name in ("add", "plus"):
        return x + x
    if name not in {"mul"}:
        return x
    return x * x


def python_value_comparisons(a, b):
    return a < b, a >= b, a == b, (a, 1) < (a, 2), "abc" < "abd", [1, 2] == [1, 2]


def float_int_mixed_comparisons(n):
    return n == 3.0, n < 3.5, 0.1 + 0.2 == 0.3, n != True  # noqa: E712


# ---------------------------------------------------------------- loops


def loop_constant_range(x):
    out = x
    for i in range(3):
        out = out * 2 + i
    return out


def loop_over_shape_rows(x):
    total = torch.zeros(x.shape[1])
    for i in range(x.shape[0]):
        total = total + x[i] * (i + 1)
    return total


def loop_over_tensor_list(xs):
    outs = []
    for t in xs:
        outs.append(t.relu())
    return torch.stack(outs)


def loop_over_tuple_with_enumerate(x, y, z):
    acc = 0
    for i, t in enumerate((x, y, z)):
        acc = acc + t * i
    return acc


def nested_loops(x):
    out = x.clone()
    for i in range(2):
        for j in range(3):
            out[j] = out[j] + i * j
    return out


def while_with_counter(x):
    n = 0
    while n < 4:
        x = x + n
        n += 1
    return x, n


def loop_break_continue(x):
    out = x
    for i in range(10):
        if i % 2 == 0:
            continue
        if i > 6:
            break
        out = out * i
    return out


def for_else(x):
    for i in range(3):
        if i == 7:
            break
    else:
        x = x + 100
    return x


def early_return_in_loop(x):
    for i in range(5):
        if i == 2:
            return x * i
    return x


def loop_over_tensor_rows(x):
    return [row.sum() for row in x]


def loop_builds_stacked(x):
    parts = []
    for k in range(1, 4):
        parts.append(x ** k)
    return torch.cat(parts, dim=0)


def generator_expression_sum(xs):
    return sum(t.sum() for t in xs), max(len(t) for t in xs)


def reversed_range_loop(x):
    out = []
    for i in reversed(range(x.shape[0])):
        out.append(x[i])
    return out


# ---------------------------------------------------------------- calling conventions


def varargs_sum(*args):
    total = args[0]
    for a in args[1:]:
        total = total + a
    return total, len(args)


def kwargs_scale(x, **kw):
    return x * kw["scale"] + kw.get("shift", 0), sorted(kw)


def args_and_kwargs(x, *args, **kwargs):
    return x + sum(args), tuple(kwargs.items())


def star_args_into_torch(x, y):
    pair = (x, y)
    return torch.add(*pair), torch.cat([*pair], 0)


def star_kwargs_into_torch(x):
    opts = {"dim": -1}
    return F.softmax(x, **opts), torch.sum(x, **{"dim": 0, "keepdim": True})


def forward_star_args(x, y):
    return varargs_sum(x, y, x)


def forward_star_kwargs(x):
    extra = {"scale": 2.0, "shift": 1}
    return kwargs_scale(x, **extra)


def call_with_keywords_reordered(x, y):
    return torch.where(other=y, input=x, condition=x > y)


def recursive_helper(x, depth=3):
    if depth == 0:
        return x
    return recursive_helper(x * 2, depth - 1) + 1


# ---------------------------------------------------------------- context managers, asserts


def no_grad_block(g):
    with torch.no_grad():
        y = g * 2
    return y, g * 3


def enable_grad_inside_no_grad(g):
    with torch.no_grad():
        with torch.enable_grad():
            y = g * 2
    return y


def passing_assert(x):
    assert x.shape[0] == 3, "rows"
    return x + 1


# ---------------------------------------------------------------- data-dependent (graph breaks allowed)


def branch_on_tensor_value(x):
    if x.sum() > 0:
        return x * 2
    return x - 2


def item_in_python_math(x):
    return x.sum().item() * 2 + 1


def tolist_loop(x):
    total = 0.0
    for v in x[0].tolist():
        total += v
    return total


def try_except_python_error(x):
    try:
        value = {"a": 1}["b"]
    except KeyError:
        value = 2
    return x * value


def try_finally_no_error(x):
    out = []
    try:
        out.append(x + 1)
    finally:
        out.append(x + 2)
    return out


CASES = [
    case(branch_on_int_argument, x34, 7, **ONE),
    case(branch_on_int_argument, x34, 5, **ONE),
    case(branch_on_int_argument, x34, 1, **ONE),
    case(branch_on_string_argument, x34, "tanh", **ONE),
    case(branch_on_global_string, x34, **ONE),
    case(branch_on_shape, x34, **ONE),
    case(branch_on_ndim_and_numel, x34, **ONE),
    case(branch_on_dtype, xd, **ONE),
    case(branch_on_none, x34, kwargs=dict(bias=y34), **ONE),
    case(branch_on_requires_grad, g34, **ONE),
    case(branch_on_isinstance, [1, 2], **PY),
    case(ternary_on_dims, x34, **ONE),
    case(match_statement, x34, 2, **ONE),
    case(match_on_shape, x34, **ONE),
    case(identity_tests, x34, y34, **PY),
    case(not_operator, True, [], **PY),
    case(in_operator_on_tuple_of_names, x34, "plus", **ONE),
    case(python_value_comparisons, 3, 4, **PY),
    case(float_int_mixed_comparisons, 3, **PY),
    case(loop_constant_range, x34, **ONE),
    case(loop_over_shape_rows, x34, **ONE),
    case(loop_over_tensor_list, [x34, y34, z34], **ONE),
    case(loop_over_tuple_with_enumerate, x34, y34, z34, **ONE),
    case(nested_loops, x34, **ONE),
    case(while_with_counter, x34, **ONE),
    case(loop_break_continue, x34, **ONE),
    case(for_else, x34, **ONE),
    case(early_return_in_loop, x34, **ONE),
    case(loop_over_tensor_rows, x34, **ONE),
    case(loop_builds_stacked, x34, **ONE),
    case(generator_expression_sum, [x34, y34], **ONE),
    case(reversed_range_loop, x34, **ONE),
    case(varargs_sum, x34, y34, z34, **ONE),
    case(kwargs_scale, x34, kwargs=dict(scale=3.0, shift=-1), **ONE),
    case(args_and_kwargs, x34, 1, 2, kwargs=dict(k="v"), **ONE),
    case(star_args_into_torch, x34, y34, **ONE),
    case(star_kwargs_into_torch, x34, **ONE),
    case(forward_star_args, x34, y34, **ONE),
    case(forward_star_kwargs, x34, **ONE),
    case(call_with_keywords_reordered, x34, y34, **ONE),
    case(recursive_helper, x34, **ONE),
    case(no_grad_block, g34, **ONE),
    case(enable_grad_inside_no_grad, g34, **ONE),
    case(passing_assert, x34, **ONE),
    case(match_on_shape, x34, name="match_on_shape_may_break"),
    case(generator_expression_sum, [x34, y34], name="generator_expression_sum_may_break"),
    case(no_grad_block, g34, name="no_grad_block_may_break"),
    case(enable_grad_inside_no_grad, g34, name="enable_grad_inside_no_grad_may_break"),
    case(branch_on_tensor_value, pos),
    case(branch_on_tensor_value, neg),
    case(item_in_python_math, x34),
    case(tolist_loop, x34),
    case(try_except_python_error, x34),
    case(try_finally_no_error, x34),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_shape_loop_grads_match():
    run_case(loop_over_shape_rows, (g34,), {}, dict(ONE, grads=True))


def test_data_dependent_branch_breaks_the_graph():
    run_case(branch_on_tensor_value, (pos,), {}, dict(breaks=1))
