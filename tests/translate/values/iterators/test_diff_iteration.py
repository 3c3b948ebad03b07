"""Differential tests: loops, comprehensions, unpacking, containers and call plumbing in a frame.

These are the Python shapes that surround tensor code in real models: while loops over Python
conditions, break/continue/else, nested list/dict/set comprehensions, generator expressions
consumed on the spot, slicing and star unpacking, dict insertion order and set algebra, nested
containers handed back to the caller, **kwargs passed down through helpers, lambdas and
functools.partial. framejit unrolls all of it at translation time; the result must be exactly
Python's, including order.
"""

import functools

import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=11)
y34 = randn(3, 4, seed=12)
z34 = randn(3, 4, seed=13)
x6 = randn(6, seed=14)
g34 = randn(3, 4, seed=15, requires_grad=True)
h34 = randn(3, 4, seed=16, requires_grad=True)


def bug(fn, *args, reason, kwargs=None, **options):
    """A case framejit gets wrong today: strict xfail whose reason says what is wrong."""
    return pytest.param(fn, args, kwargs or {}, options, id=fn.__name__,
                        marks=[pytest.mark.xfail(strict=True, reason=reason)])


# ---------------------------------------------------------------- while / break / continue


def while_collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def while_true_with_break(x):
    k = 0
    while True:
        x = x * 0.5
        k += 1
        if k >= 3:
            break
    return x, k


def while_else_runs_without_break(x):
    i = 0
    while i < 3:
        x = x + i
        i += 1
    else:
        x = x * 10
    return x


def while_else_skipped_by_break(x):
    i = 0
    while i < 5:
        if i == 2:
            break
        x = x - 1
        i += 1
    else:
        x = x * 100
    return x, i


def while_pops_worklist(x):
    todo = [1, 2, 3]
    out = []
    while todo:
        k = todo.pop()
        out.append(x * k)
    return out


def while_over_shape_halving(x):
    size = x.shape[0]
    while size > 1:
        x = x[: size // 2] + x[size // 2: size // 2 * 2]
        size = x.shape[0]
    return x


def for_continue_on_odd(x):
    acc = x * 0
    for i in range(6):
        if i % 2:
            continue
        acc = acc + x * i
    return acc


def nested_loops_break_inner_only(x):
    hits = []
    for i in range(3):
        for j in range(3):
            if j > i:
                break
            hits.append((i, j))
    return hits, x * len(hits)


def for_else_with_break_found(x, needle):
    for i, v in enumerate([4, 7, 9]):
        if v == needle:
            found = i
            break
    else:
        found = -1
    return x + found


def loop_variable_after_loop(x):
    for i in range(4):
        pass
    return x * i, i


def loop_over_dict_items_builds_other(x, y):
    weights = {"a": x, "b": y}
    scaled = {}
    for name, t in weights.items():
        scaled[name + "2"] = t * 2
    return scaled


def loop_appends_while_iterating_other(x):
    base = [1, 2, 3]
    grown = []
    for v in base:
        grown.append(v)
        grown.append(-v)
    return grown, x * sum(grown)


def loop_with_counter_and_tensor_list(xs):
    total = 0
    out = []
    for i, t in enumerate(xs):
        total += i
        out.append(t + total)
    return out, total


# ---------------------------------------------------------------- comprehensions


def nested_list_comprehension():
    return [[i * j for j in range(3)] for i in range(3)]


def flattening_comprehension():
    grid = [[1, 2], [3], [], [4, 5, 6]]
    return [v for row in grid for v in row if v % 2 == 0]


def comprehension_with_two_conditions():
    return [i for i in range(20) if i % 2 if i % 3]


def dict_comprehension_from_zip(x, y):
    return {name: t.sum(0) for name, t in zip(("x", "y"), (x, y))}


def dict_comprehension_inverts():
    d = {"a": 1, "b": 2, "c": 3}
    return {v: k for k, v in d.items() if v != 2}


def set_comprehension_of_mods():
    return {i % 3 for i in range(10)}, {c for c in "mississippi"}


def nested_dict_of_lists_comprehension():
    return {k: [k * i for i in range(k)] for k in range(1, 4)}


def comprehension_of_tensor_expressions(x, y, z):
    return [t * i for i, t in enumerate([x, y, z])]


def comprehension_captures_local(x):
    scale = 3
    return [x * scale + k for k in range(2)]


def comprehension_matrix_transpose():
    m = [[1, 2, 3], [4, 5, 6]]
    return [[row[i] for row in m] for i in range(3)]


def comprehension_over_tensor_rows(x):
    return [row.sum() for row in x], torch.stack([row * 2 for row in x])


def set_of_shapes(x, y, z):
    return {tuple(t.shape) for t in (x, y, z)}


# ---------------------------------------------------------------- generator expressions in the frame


def genexpr_into_max_min():
    words = ["pear", "fig", "banana"]
    return max(len(w) for w in words), min(w[0] for w in words)


def genexpr_into_dict_and_tuple():
    return dict((k, k * k) for k in range(4)), tuple(i for i in range(5) if i != 2)


def genexpr_sum_over_two_ranges():
    return sum(i * j for i in range(4) for j in range(i))


def genexpr_tensor_sum(xs):
    return sum(t.relu() for t in xs)


def genexpr_any_on_python_flags():
    flags = [0, 0, 3]
    return any(f > 2 for f in flags), all(f >= 0 for f in flags)


# ---------------------------------------------------------------- slicing and star unpacking


def list_slicing_steps():
    v = list(range(10))
    return v[::2], v[::-1], v[1:-1], v[-2:], v[7:2:-2], v[100:], v[:0]


def tuple_and_string_slicing():
    t = (1, 2, 3, 4)
    return t[1:3], t[::-1], "framejit"[::3], "abc"[-1]


def slice_assignment_and_delete():
    v = list(range(8))
    v[1:3] = ["a", "b", "c"]
    del v[::3]
    v[-1:] = []
    return v


def slicing_tensor_list(x, y, z):
    ts = [x, y, z, x]
    return torch.cat(ts[1:3]) - torch.cat(ts[::2][:2])


def star_unpack_middle():
    a, *b, c = range(5)
    first, *rest = "xyz"
    *init, last = [1]
    return a, b, c, first, rest, init, last


def star_unpack_tensors(x, y, z):
    head, *tail = [x, y, z]
    return head - sum(tail)


def nested_star_unpack():
    (a, b), *c = [(1, 2), 3, 4]
    return a, b, c


def star_in_displays(x):
    a = [1, 2]
    b = (3,)
    d1 = {"k": 1}
    return [*a, *b, 0], (*b, *a), {*a, 9}, {**d1, "z": 2, **{"k": 5}}, [x, *[x * 2]]


def star_call_with_list_and_dict(x):
    def combine(a, b, c=0, d=0):
        return a * b + c - d
    args = [x, 2]
    kw = {"d": 1, "c": 3}
    return combine(*args, **kw)


# ---------------------------------------------------------------- dicts: insertion order


def dict_order_after_delete_and_reinsert():
    d = {}
    d["b"] = 1
    d["a"] = 2
    d["c"] = 3
    del d["b"]
    d["b"] = 4
    d["a"] = 5
    return list(d), list(d.values()), d


def dict_update_pop_setdefault():
    d = {"x": 1}
    d.update({"y": 2, "x": 3}, z=4)
    popped = d.pop("y")
    d.setdefault("w", 0)
    d.setdefault("x", 99)
    return d, popped, list(d.items())


def dict_popitem_is_lifo():
    d = {"a": 1, "b": 2, "c": 3}
    last = d.popitem()
    return last, d


def dict_copy_is_independent(x):
    d = {"p": 0, "q": 0}
    e = d.copy()
    e["p"] = x
    e["r"] = 1
    return d, e


def dict_fromkeys(x):
    return dict.fromkeys(["p", "q"], 0), dict.fromkeys("ab")


def dict_merge_operators():
    a = {"x": 1, "y": 2}
    b = {"y": 3, "z": 4}
    c = a | b
    a |= {"w": 0}
    return c, a


def dict_of_tensors_in_order(x, y):
    d = {"second": y, "first": x}
    d["third"] = x + y
    return [k for k in d], [v.sum() for v in d.values()]


def dict_keys_view_membership_and_list():
    d = {"a": 1, "b": 2}
    return "a" in d.keys(), "z" in d.keys(), list(d.keys()), list(d.items()), len(d.values())


def dict_keys_view_set_operations():
    d = {"a": 1, "b": 2}
    return sorted(d.keys() | {"c"}), list(d.keys() & {"b", "z"})


def dict_keys_view_is_live():
    d = {"a": 1, "b": 2}
    keys = d.keys()
    d["c"] = 3
    return list(keys)


def dict_view_type_names():
    d = {"a": 1}
    return type(d.keys()).__name__, type(d.values()).__name__, type(d.items()).__name__


# ---------------------------------------------------------------- sets


def set_algebra():
    a = {1, 2, 3}
    b = {3, 4}
    return a | b, a & b, a - b, a ^ b, a <= {1, 2, 3, 9}, b.isdisjoint({7})


def set_mutation_methods():
    s = {1, 2}
    s.add(3)
    s.discard(1)
    s.discard(42)
    s.update([5, 6])
    s.remove(2)
    return s, len(s), 5 in s


def frozenset_as_dict_key():
    d = {frozenset({1, 2}): "pair"}
    return d[frozenset({2, 1})], frozenset("ab") == frozenset("ba")


def set_dedupes_then_sorted(x):
    names = ["b", "a", "b", "c", "a"]
    unique = sorted(set(names))
    return unique, x * len(unique)


# ---------------------------------------------------------------- nested containers returned


def nested_containers_returned(x, y):
    return {"a": [x, (y, {"b": x + y})], "n": [[1, 2], {3: "c"}]}


def list_of_dicts_of_tensors(x, y):
    return [{"w": t, "norm": t.norm()} for t in (x, y)]


def nested_lists_built_by_multiplication():
    grid = [[0] * 3 for _ in range(2)]
    grid[0][1] = 5
    alias = [[0] * 2] * 2
    alias[0][0] = 7
    return grid, alias


def tuple_of_lists_mutated_inside(x):
    pair = ([], [])
    pair[0].append(x)
    pair[1].extend([x * 2, x * 3])
    return pair


# ---------------------------------------------------------------- kwargs plumbing through helpers


def _scale_shift(t, *, scale=1.0, shift=0.0):
    return t * scale + shift


def _forward_kwargs(t, **kwargs):
    return _scale_shift(t, **kwargs)


def _merge_defaults(t, **overrides):
    opts = {"scale": 2.0, "shift": 1.0}
    opts.update(overrides)
    return _scale_shift(t, **opts)


def _pops_own_option(t, **kwargs):
    double = kwargs.pop("double", False)
    out = _scale_shift(t, **kwargs)
    return out * 2 if double else out


def _args_and_kwargs_through(*args, **kwargs):
    return _forward_kwargs(*args, **kwargs)


def kwargs_forwarded_two_levels(x):
    return _forward_kwargs(x, scale=3.0), _forward_kwargs(x)


def kwargs_merged_with_defaults(x):
    return _merge_defaults(x, shift=-1.0)


def kwargs_option_popped(x):
    return _pops_own_option(x, double=True, scale=0.5)


def kwargs_and_args_through_star_helper(x):
    return _args_and_kwargs_through(x, shift=4.0)


def kwargs_hold_tensors(x, y):
    return _forward_kwargs(x, scale=y, shift=y.mean())


def kwargs_dict_inspected(**kwargs):
    return sorted(kwargs), len(kwargs), kwargs.get("missing", "default")


def kwargs_from_caller(x, **kwargs):
    return _merge_defaults(x, **kwargs)


# ---------------------------------------------------------------- lambdas and functools.partial


def lambda_immediately_invoked(x):
    return (lambda t, k=2: t * k)(x)


def lambda_with_closure_and_default(x):
    offset = 5
    f = lambda t, s=2: t * s + offset  # noqa: E731
    return f(x), f(x, s=3)


def lambdas_in_a_list(x):
    fs = [lambda t, i=i: t + i for i in range(3)]
    return [f(x) for f in fs]


def lambda_returning_tuple(x):
    split = lambda t: (t[:1], t[1:])  # noqa: E731
    a, b = split(x)
    return b - a


def partial_with_keyword(x):
    p = functools.partial(_scale_shift, scale=4.0)
    return p(x), p(x, shift=1.0), p(x, scale=0.5)


def partial_of_lambda(x, y):
    mix = functools.partial(lambda a, b, w: a * w + b * (1 - w), w=0.25)
    return mix(x, y)


def partial_of_torch_add_alpha(x, y):
    add = functools.partial(torch.add, alpha=2)
    return add(x, y)


def partial_attributes():
    p = functools.partial(divmod, 17)
    return p(5), p.args, p.keywords


def partial_in_map(x, y):
    return list(map(functools.partial(torch.mul, 3.0), [x, y]))


# ---------------------------------------------------------------- gradients


def grads_through_while_loop(g):
    k = 0
    out = g
    while k < 3:
        out = out.tanh() * 1.5
        k += 1
    return out


def grads_through_comprehension(g, h):
    return [a * b for a in (g, h) for b in (h, g)]


def grads_through_kwargs(g, h):
    return _forward_kwargs(g, scale=h, shift=1.0)


def grads_through_partial(g, h):
    p = functools.partial(torch.addcmul, value=0.5)
    return p(g, g, h)


def grads_through_star_unpacking(g, h):
    first, *rest = [g, h, g * 2]
    return first * sum(rest)


def grads_through_dict_of_tensors(g, h):
    d = {"a": g, "b": h}
    d["c"] = d["a"] * d["b"]
    return d


# ---------------------------------------------------------------- iterating a tensor gives unbind's views


def rows_then_base_written(g):
    out = []
    for row in g:
        with torch.no_grad():
            g[0].mul_(-1.0)
        out.append(row[:] * 2)
    return out


def row_written_in_place(g):
    y = g * 2
    for row in y:
        row.add_(1.0)
    return y


def rows_of_unpacking_written(g):
    y = g * 2
    a, b, c = y
    a.mul_(2.0)
    return y


def row_grad_fn_names(g):
    y = g * 2
    return [type(r.grad_fn).__name__ for r in y], [r._is_view() for r in y]


def rows_without_grad_written(x):
    y = x * 2
    for row in y:
        row.add_(1.0)
    return y


CASES = [
    case(rows_then_base_written, g34),
    case(row_written_in_place, g34),
    case(rows_of_unpacking_written, g34),
    case(row_grad_fn_names, g34),
    case(rows_without_grad_written, x34),
    case(while_collatz_steps, 27, **PY),
    case(while_true_with_break, x34, **ONE),
    case(while_else_runs_without_break, x34, **ONE),
    case(while_else_skipped_by_break, x34, **ONE),
    case(while_pops_worklist, x34, **ONE),
    case(while_over_shape_halving, x6, **ONE),
    case(for_continue_on_odd, x34, **ONE),
    case(nested_loops_break_inner_only, x34, **ONE),
    case(for_else_with_break_found, x34, 7, **ONE),
    case(for_else_with_break_found, x34, 8, name="for_else_not_found", **ONE),
    case(loop_variable_after_loop, x34, **ONE),
    case(loop_over_dict_items_builds_other, x34, y34, **ONE),
    case(loop_appends_while_iterating_other, x34, **ONE),
    case(loop_with_counter_and_tensor_list, [x34, y34, z34], **ONE),
    case(nested_list_comprehension, **PY),
    case(flattening_comprehension, **PY),
    case(comprehension_with_two_conditions, **PY),
    case(dict_comprehension_from_zip, x34, y34, **ONE),
    case(dict_comprehension_inverts, **PY),
    case(set_comprehension_of_mods, **PY),
    case(nested_dict_of_lists_comprehension, **PY),
    case(comprehension_of_tensor_expressions, x34, y34, z34, **ONE),
    case(comprehension_captures_local, x34, **ONE),
    case(comprehension_matrix_transpose, **PY),
    case(comprehension_over_tensor_rows, x34, **ONE),
    case(set_of_shapes, x34, y34, x6, **PY),
    case(genexpr_into_max_min, **PY),
    case(genexpr_into_dict_and_tuple, **PY),
    case(genexpr_sum_over_two_ranges, **PY),
    case(genexpr_tensor_sum, [x34, y34, z34], **ONE),
    case(genexpr_any_on_python_flags, **PY),
    case(list_slicing_steps, **PY),
    case(tuple_and_string_slicing, **PY),
    case(slice_assignment_and_delete, **PY),
    case(slicing_tensor_list, x34, y34, z34, **ONE),
    case(star_unpack_middle, **PY),
    case(star_unpack_tensors, x34, y34, z34, **ONE),
    case(nested_star_unpack, **PY),
    case(star_in_displays, x34, **ONE),
    case(star_call_with_list_and_dict, x34, **ONE),
    case(dict_order_after_delete_and_reinsert, **PY),
    case(dict_update_pop_setdefault, **PY),
    case(dict_popitem_is_lifo, **PY),
    case(dict_copy_is_independent, x34, **PY),
    case(dict_fromkeys, x34, **PY),
    case(dict_merge_operators, **PY),
    case(dict_of_tensors_in_order, x34, y34, **ONE),
    case(dict_keys_view_membership_and_list, **PY),
    case(dict_keys_view_set_operations, **PY),
    case(dict_keys_view_is_live, **PY),
    case(dict_view_type_names, **PY),
    case(set_algebra, **PY),
    case(set_mutation_methods, **PY),
    case(frozenset_as_dict_key, **PY),
    case(set_dedupes_then_sorted, x34, **ONE),
    case(nested_containers_returned, x34, y34, **ONE),
    case(list_of_dicts_of_tensors, x34, y34, **ONE),
    case(nested_lists_built_by_multiplication, **PY),
    case(tuple_of_lists_mutated_inside, x34, **ONE),
    case(kwargs_forwarded_two_levels, x34, **ONE),
    case(kwargs_merged_with_defaults, x34, **ONE),
    case(kwargs_option_popped, x34, **ONE),
    case(kwargs_and_args_through_star_helper, x34, **ONE),
    case(kwargs_hold_tensors, x34, y34, **ONE),
    case(kwargs_dict_inspected, kwargs=dict(b=1, a=2), **PY),
    case(kwargs_from_caller, x34, kwargs=dict(scale=0.5), **ONE),
    case(lambda_immediately_invoked, x34, **ONE),
    case(lambda_with_closure_and_default, x34, **ONE),
    case(lambdas_in_a_list, x34, **ONE),
    case(lambda_returning_tuple, x34, **ONE),
    case(partial_with_keyword, x34, **ONE),
    case(partial_of_lambda, x34, y34, **ONE),
    case(partial_of_torch_add_alpha, x34, y34, **ONE),
    case(partial_attributes, **PY),
    case(partial_in_map, x34, y34, **ONE),
    case(grads_through_while_loop, g34, grads=True, **ONE),
    case(grads_through_comprehension, g34, h34, grads=True, **ONE),
    case(grads_through_kwargs, g34, h34, grads=True, **ONE),
    case(grads_through_partial, g34, h34, grads=True, **ONE),
    case(grads_through_star_unpacking, g34, h34, grads=True, **ONE),
    case(grads_through_dict_of_tensors, g34, h34, grads=True, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
