"""Differential tests: tensors and identity-hashed objects as dict keys and set members (values/dicts/identity_hashed_keys.py,
lookasides/builtin_methods.py's lookups of input dicts).

torch.Tensor hashes by id(): a dict or set finds a tensor key exactly when it is the same object, and
never compares values. Dicts and sets the frame builds, and dicts passed in keyed by parameters (an
optimizer's `{param: state}`), stay in one graph with eager's keys, order and identity.
"""
import collections

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, check, check_calls, randn, run_case

ONE = dict(fullgraph=True, graphs=1)

x = randn(3, seed=1)
y = randn(3, seed=2)
lin = torch.nn.Linear(3, 2)


class Plain:
    pass


def dict_keyed_by_tensors(a, b):
    d = {a: 1, b: 2}
    return d[a], a in d, (a + 1) in d, d.get(b), d.get(a * 2, "none"), list(d.values()), len(d)


def dict_iteration_order_and_rebuild(a, b):
    d = {}
    d[b] = a * 2
    d[a] = b + 1
    d[b] = a - 1                       # overwrite keeps b's place
    keys = [k * 1 for k in d]
    return d, keys, [k is a for k in d], list(d.items())[0][1]


def dict_comprehension_of_tensor_keys(a, b):
    grads = {t: t * 2 for t in (a, b)}
    return grads[b], list(grads)[0] is a, grads.pop(a), len(grads), grads.setdefault(a, 5), grads


def dict_key_identity_not_value(a):
    b = a.clone()                      # equal values, another object
    d = {a: "a"}
    return b in d, a in d, d.get(b, "missing"), dict.fromkeys([a, b], 0)


def in_place_result_is_the_key(a):
    d = {a: 1}
    return d[a.mul_(2)], a


def set_of_tensors(a, b):
    s = {a, b, a}
    s.add(b)
    s.add(a + 0)
    seen = a in s, (a * 1) in s, len(s)
    s.discard(b)
    return seen, len(s), b in s, len(set([a, a]))


def user_objects_as_keys(a):
    p, q = Plain(), Plain()
    d = {p: a, q: a + 1}
    return d[q], p in d, len({p, q, p})


def input_dict_keyed_by_parameters(state, weight, bias, x):
    st = state[weight]
    missing = state.get(bias, "none")
    return x * st["scale"], missing, weight in state, bias in state, (x + 0) in state, len(state)


def input_dict_iterated_and_written(grads, weight, x):
    total = sum(g.sum() for g in grads.values())
    order = [k is weight for k in grads]
    for p, g in grads.items():
        grads[p] = g * 2
    grads[x] = total                  # a new key
    del grads[weight]
    return order, total, [k.shape for k in grads]


def input_dict_of_mixed_keys(d, w):
    return d["lr"] * d[w], list(d)[0], len(d)


def dict_kinds_keyed_by_tensors(a, b):
    ordered = collections.OrderedDict()
    ordered[a] = 1
    ordered[b] = 2
    ordered.move_to_end(a)
    groups = collections.defaultdict(list)
    groups[a].append(1)
    groups[b].append(2)
    groups[a].append(3)
    return ordered[b], list(ordered)[0] is b, ordered.popitem()[0] is a, groups[a], len(groups), groups, a * 2


def set_algebra_of_tensors(a, b):
    s, t = {a}, {b, a}
    return len(s | t), a in (s & t), b in (t - s), len(s ^ t), a * 2


def iterating_a_set_of_tensors(a, b):
    # a set iterates in the order of its members' hashes, id(t): known only at run time, so a break
    return [t is a for t in {b, a}], a * 2


def dicts_keyed_by_tensors_compared(a, b):
    d = {a: 1, b: a}
    return d == {b: a, a: 1}, d == {a: 1, b.clone(): a}, {a: 1} != {a: 2}, d == {a: 1}, a * 2


CASES = [
    case(dict_keyed_by_tensors, x, y, **ONE),
    case(dict_iteration_order_and_rebuild, x, y, **ONE),
    case(dict_comprehension_of_tensor_keys, x, y, **ONE),
    case(dict_key_identity_not_value, x, **ONE),
    case(in_place_result_is_the_key, x, **ONE),
    case(set_of_tensors, x, y, **ONE),
    case(user_objects_as_keys, x, **ONE),
    case(dict_kinds_keyed_by_tensors, x, y, **ONE),
    case(set_algebra_of_tensors, x, y, **ONE),
    case(dicts_keyed_by_tensors_compared, x, y, **ONE),
    case(iterating_a_set_of_tensors, x, y, breaks=2),     # (and its resume function's listcomp)
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_identity_keys(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def _weights():
    return lin.weight.detach().clone(), lin.bias.detach().clone()


def test_input_dict_keyed_by_parameters():
    """The dict and its keys are passed in (each call's deep copy keeps the keys the same objects as
    the tensors passed beside them)."""
    w, b = _weights()
    check(input_dict_keyed_by_parameters,
          {w: {"scale": torch.tensor(2.0)}}, w, b, x, fullgraph=True, graphs=1)


def test_input_dict_iterated_and_written():
    w, b = _weights()
    check(input_dict_iterated_and_written, {w: w + 1, b: b * 3}, w, x, fullgraph=True, graphs=1)


def test_input_dict_of_mixed_keys():
    w, _ = _weights()
    check(input_dict_of_mixed_keys, {w: w * 2, "lr": 0.5}, w, fullgraph=True, graphs=1)


def test_input_dict_guards_keys_and_their_aliasing():
    """Which argument each key is, the keys' metadata and the dict's length are guarded: a call with
    another layout recompiles and answers as eagerly."""
    w, b = _weights()
    calls = [({w: 1}, w, x), ({b: 1}, w, x), ({w: 1, b: 2}, w, x), ({w: 1}, w, x), ({w.double(): 1}, w, x)]
    _, counter = check_calls(lambda d, p, x: (x * d[p]) if p in d else (x - len(d)), calls)
    assert counter.frame_count == 4


def test_lookup_guard_notices_a_new_key():
    """`key in state` of a dict reached through a global is answered and guarded by its answer."""
    w = torch.ones(2)

    def f(x):
        return x * 2 if w in GLOBAL_STATE else x - 1

    compiled = framejit.compile(f, backend="eager", fullgraph=True)
    GLOBAL_STATE.clear()
    assert torch.equal(compiled(x), x - 1)
    GLOBAL_STATE[w] = 1
    assert torch.equal(compiled(x), x * 2)
    GLOBAL_STATE.clear()


GLOBAL_STATE = {}


def test_set_of_tensors_rebuilt():
    """A set of tensors leaving the frame is a real set of the same tensor objects (its order is a
    real set's: by their hashes)."""
    def f(a, b):
        return {a, b * 2, a}, b * 2

    compiled = framejit.compile(f, backend="eager", fullgraph=True)
    s, doubled = compiled(x, y)
    assert type(s) is set and len(s) == 2 and x in s and any(torch.equal(t, doubled) for t in s if t is not x)


def dict_keyed_by_an_argument_object(o, x):
    d = {o: x * 2}
    return d, o in d, d[o]


def test_object_keys_are_the_call_s_own_objects():
    """A user object passed in (matched by type) keys a dict the frame builds: the dict that leaves the
    frame holds this call's object, not the one the graph was traced with."""
    calls = [(Plain(), x), (Plain(), y)]
    compiled, counter = check_calls(dict_keyed_by_an_argument_object, calls)
    o = Plain()
    d, found, _ = compiled(o, x)
    assert list(d)[0] is o and found and counter.frame_count == 1


def modules_as_keys(table, x):
    own = {lin: 1, torch.relu: 2}
    return own[lin] + own.get(torch.relu), table[lin](x), lin in own


def test_modules_and_functions_as_keys():
    table = {lin: torch.tanh}
    compiled = framejit.compile(modules_as_keys, backend="eager", fullgraph=True)
    a, b, c = compiled(table, x)
    assert (a, c) == (3, True) and torch.equal(b, torch.tanh(x))
