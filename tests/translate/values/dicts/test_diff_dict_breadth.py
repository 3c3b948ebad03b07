"""Differential tests: more of the dict family in one graph (values/dicts/dict_kinds.py, values/operator_rules.py,
context.py's wrap of the standard library's dict kinds).

OrderedDict.fromkeys takes its arguments by keyword as well (dict.fromkeys takes none: TypeError as
eagerly); an OrderedDict / defaultdict / Counter reached through a global is modelled like one passed as
an argument (iterated, read, written back, a defaultdict's missing key inserted); `"k" in C.__dict__`
answers from the class's own dict and is guarded by that answer; keys views compare as sets; and
`tensor.__len__()` is `len(tensor)`, a size.
"""
import collections

import torch

import framejit
from tests.differential import check, randn

x = randn(3, 2, seed=1)
y = randn(3, 2, seed=2)


class MyOrdered(collections.OrderedDict):
    pass


def fromkeys_keywords(x, y):
    d1 = collections.OrderedDict.fromkeys(("a", "b"), value=y)
    d2 = collections.OrderedDict.fromkeys(iterable="cd", value=x + 1)
    d3 = MyOrdered.fromkeys(["e"], value=x * 2)
    return d1["a"] + d1["b"] * d2["d"], d3, type(d3).__name__, list(d2)


def dict_fromkeys_keyword(x):
    return dict.fromkeys("ab", value=x)


G_ORDERED = collections.OrderedDict(a=2, b=3)
G_DEFAULT = collections.defaultdict(list)
G_COUNTER = collections.Counter("abca")


def global_dict_kinds(x):
    for k in G_ORDERED:
        x = x * G_ORDERED[k]
    G_ORDERED["c"] = 4
    G_ORDERED.move_to_end("a")
    G_DEFAULT["seen"].append(1)
    return x + G_COUNTER["a"] - G_COUNTER["z"], list(G_ORDERED.items()), len(G_DEFAULT)


class WithAttr:
    x = 4


def class_dict_membership(t):
    out = t + 1 if "x" in WithAttr.__dict__ else t - 1
    return out * 2 if "y" not in WithAttr.__dict__ else out


def keys_views(x):
    d = {3: x}
    keys = d.keys()
    d[4] = x + 1
    d2 = {3: 2, 4: "aa"}
    return d2.keys() == keys, keys == {3, 4}, keys != {3}, keys <= {3, 4, 5}, 3 in keys, x + len(keys)


def tensor_len_method(a, b):
    return a + b + len(a) + b.__len__() + torch.Tensor.__len__(a)


def test_ordered_fromkeys_by_keyword():
    check(fromkeys_keywords, x, y, fullgraph=True, graphs=1)


def test_dict_fromkeys_keyword_raises_as_eagerly():
    check(dict_fromkeys_keyword, x)


def _global_state():
    return (list(G_ORDERED.items()), type(G_ORDERED), {k: list(v) for k, v in G_DEFAULT.items()},
            G_DEFAULT.default_factory, dict(G_COUNTER))


def _reset_globals():
    G_ORDERED.clear(); G_ORDERED.update(a=2, b=3)
    G_DEFAULT.clear()
    G_COUNTER.clear(); G_COUNTER.update("abca")


def test_global_dict_kinds_in_one_graph():
    # the harness restores plain dicts only, so the globals (dict kinds) are reset and compared here
    try:
        runs = []
        for call in (global_dict_kinds, framejit.compile(global_dict_kinds, fullgraph=True)):
            _reset_globals()
            first = call(x)
            state = _global_state()
            runs.append((first, state, call(x), _global_state()))
        (e1, es1, e2, es2), (c1, cs1, c2, cs2) = runs
        assert torch.equal(e1[0], c1[0]) and e1[1:] == c1[1:] and es1 == cs1
        assert torch.equal(e2[0], c2[0]) and e2[1:] == c2[1:] and es2 == cs2
        counter = framejit.backends.CompileCounter()
        _reset_globals()
        framejit.compile(global_dict_kinds, backend=counter)(x)
        assert counter.frame_count == 1
    finally:
        _reset_globals()


def test_class_dict_membership_guarded():
    check(class_dict_membership, x, fullgraph=True, graphs=1)
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(class_dict_membership, backend=counter)
    assert torch.equal(compiled(x), class_dict_membership(x))
    WithAttr.y = 1
    try:
        assert torch.equal(compiled(x), class_dict_membership(x))
        assert counter.frame_count == 2
    finally:
        del WithAttr.y


def test_keys_views_compare_as_sets():
    check(keys_views, x, fullgraph=True, graphs=1)


def test_tensor_len_method_is_a_size():
    check(tensor_len_method, x, y, fullgraph=True, graphs=1)
