"""Differential tests: OrderedDict, defaultdict, Counter, dict.fromkeys, user dict subclasses, deque.

Made in the frame, passed in (mutated: the change must be visible after the compiled call exactly as
after the eager one), returned (rebuilt with the right class, factory and order, without running a
user __init__ again). Several cases are the examples of the Python documentation of `collections`
(the defaultdict grouping and counting examples, the OrderedDict LRU recipe, Counter's arithmetic).
"""

import collections

import pytest
import torch

from tests.differential import CASE_FIELDS, case, check, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)


# ---------------------------------------------------------------- OrderedDict


def ordered_move_to_end_and_popitem(x):
    d = collections.OrderedDict()
    d["a"] = x
    d["b"] = x + 1
    d["c"] = x * 2
    d.move_to_end("a")
    d.move_to_end("c", last=False)
    first_key, first = d.popitem(last=False)
    last_key, last = d.popitem()
    return d, first_key, first, last_key, last, list(d)


def ordered_lru_recipe(x):
    """The LRU cache recipe of the collections docs, driven with tensors as values."""
    cache = collections.OrderedDict()
    maxsize = 2
    out = []
    for key in ("a", "b", "a", "c", "b"):
        if key in cache:
            cache.move_to_end(key)
            out.append(cache[key])
            continue
        cache[key] = x * len(cache) + ord(key)
        if len(cache) > maxsize:
            cache.popitem(last=False)
    return cache, out


def ordered_from_pairs_and_kwargs(x):
    d = collections.OrderedDict([("z", x), ("y", x + 1)], w=x - 1)
    d.update(v=x * 3)
    return d, type(d).__name__, isinstance(d, dict)


def ordered_input_mutated(d, x):
    d.move_to_end("p", last=False)
    d["q"] = d["q"] + x
    return d.popitem()[1] * 2


# ---------------------------------------------------------------- defaultdict


def defaultdict_grouping_docs_example(x):
    s = [("yellow", 1), ("blue", 2), ("yellow", 3), ("blue", 4), ("red", 1)]
    d = collections.defaultdict(list)
    for k, v in s:
        d[k].append(x * v)
    return d, sorted(d.keys()), d.default_factory is list


def defaultdict_counting_docs_example(x):
    d = collections.defaultdict(int)
    for letter in "mississippi":
        d[letter] += 1
    return x * d["s"], dict(d), d["absent"], len(d)


def defaultdict_lambda_factory(x):
    d = collections.defaultdict(lambda: x * 0)
    d["a"] = d["a"] + x
    d["b"] += 2
    return d["a"], d["b"], d["c"], list(d)


def defaultdict_returned_keeps_factory(x):
    d = collections.defaultdict(set)
    d["k"].add(3)
    return d, x + 1


def defaultdict_none_factory_get(x):
    d = collections.defaultdict(None, {"a": x})
    return d.get("b", 5), d["a"] + 1


def defaultdict_fromkeys(x):
    d = collections.defaultdict.fromkeys(["a", "b"], 1)
    return x + d["a"], d, d.default_factory


def defaultdict_input_grows(d, x):
    d["new"].append(x)
    return len(d["old"]) + len(d["new"])


# ---------------------------------------------------------------- Counter


def counter_docs_examples(x):
    c = collections.Counter("abracadabra")
    c.update("aab")
    top = c.most_common(2)
    c2 = collections.Counter(a=4, b=2, c=0, d=-2)
    d2 = collections.Counter(a=1, b=2, c=3, d=4)
    c2.subtract(d2)
    return x * c["a"], top, c + collections.Counter("zz"), c2, c2.total(), sorted(c2.elements())


def counter_arithmetic(x):
    c = collections.Counter(a=3, b=1)
    d = collections.Counter(a=1, b=2)
    return c + d, c - d, c & d, c | d, x * (c - d)["a"], c["missing"]


def counter_word_count(x):
    words = "the quick the lazy the end".split()
    cnt = collections.Counter()
    for w in words:
        cnt[w] += 1
    return x + cnt["the"], cnt, cnt.most_common(1)[0][0]


# ---------------------------------------------------------------- dict.fromkeys, dict subclasses


def dict_fromkeys_shared_value(x):
    d = dict.fromkeys(["a", "b"], [])
    d["a"].append(x)
    return d, d["a"] is d["b"], len(d["b"])


class PlainDict(dict):
    pass


class CountingDict(dict):
    """Overrides __setitem__ and __missing__; forwards to the builtin through super()."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setitem__("writes", self.get("writes", 0) + 1)

    def __missing__(self, key):
        return key * 2

    def total_writes(self):
        return self["writes"]


class InitDict(dict):
    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self["scale"] = scale


def dict_subclass_made_in_frame(x):
    d = PlainDict(a=x)
    d["b"] = x + 1
    return d, type(d) is PlainDict, len(d)


def dict_subclass_overrides(x):
    d = CountingDict()
    d["t"] = x
    d["u"] = x * 2
    return d, d.total_writes(), d["zz"], x + d["t"]


def dict_subclass_with_init_escapes(x):
    d = InitDict(3, a=x)
    return d, x * d["scale"]


def dict_subclass_fromkeys(x):
    d = CountingDict.fromkeys(["p", "q"], 1)
    return d, x + d["writes"]


def dict_subclass_input_mutated(d, x):
    d["t"] = x + d["t"]
    del d["gone"]
    return d["writes"]


# ---------------------------------------------------------------- deque


def deque_methods(x):
    q = collections.deque(maxlen=3)
    for i in range(5):
        q.append(x + i)
    q.appendleft(x)
    a = q.pop()
    b = q.popleft()
    q.rotate(1)
    q.extend([x, x * 2])
    return list(q), a, b, len(q), q.maxlen


def deque_of_ints_returned(x):
    q = collections.deque([1, 2, 3])
    q.rotate(-1)
    q.extendleft([7, 8])
    q.remove(3)
    return q, x * q[0], q.index(2), 8 in q, q.count(1)


def deque_sliding_window_docs(x):
    """moving_average of the collections docs, over tensors."""
    it = iter([x, x + 1, x + 2, x + 3, x + 4])
    d = collections.deque()
    for _ in range(2):
        d.append(next(it))
    s = sum(d)
    out = []
    for elem in it:
        s += elem - d.popleft()
        d.append(elem)
        out.append(s / 2)
    return out


def deque_input_mutated(q, x):
    q.append(5)
    q.appendleft(0)
    return x * q[-1]


CASES = [
    case(ordered_move_to_end_and_popitem, x34, **ONE),
    case(ordered_lru_recipe, x34, **ONE),
    case(ordered_from_pairs_and_kwargs, x34, **ONE),
    case(ordered_input_mutated, collections.OrderedDict(p=x34, q=y34), y34, **ONE),
    case(defaultdict_grouping_docs_example, x34, **ONE),
    case(defaultdict_counting_docs_example, x34, **ONE),
    case(defaultdict_lambda_factory, x34, **ONE),
    case(defaultdict_returned_keeps_factory, x34, **ONE),
    case(defaultdict_none_factory_get, x34, **ONE),
    case(defaultdict_fromkeys, x34, **ONE),
    case(defaultdict_input_grows, collections.defaultdict(list, old=[1, 2]), x34, graphs=0, fullgraph=True),
    case(counter_docs_examples, x34, **ONE),
    case(counter_arithmetic, x34, **ONE),
    case(counter_word_count, x34, **ONE),
    case(dict_fromkeys_shared_value, x34, **PY),
    case(dict_subclass_made_in_frame, x34, **ONE),
    case(dict_subclass_overrides, x34, **ONE),
    case(dict_subclass_with_init_escapes, x34, **ONE),
    case(dict_subclass_fromkeys, x34, **ONE),
    case(dict_subclass_input_mutated, CountingDict(t=x34, gone=1), y34, **ONE),
    case(deque_methods, x34, **ONE),
    case(deque_of_ints_returned, x34, **ONE),
    case(deque_sliding_window_docs, x34, **ONE),
    case(deque_input_mutated, collections.deque([1, 2], maxlen=3), x34, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_defaultdict_graph_count_matches_torch_compile():
    """torch.compile(backend="eager") captures the grouping example in one graph; so does framejit."""
    import torch._dynamo

    torch._dynamo.reset()
    counts = []

    def counting(gm, example_inputs):
        counts.append(gm)
        return gm.forward

    torch.compile(defaultdict_grouping_docs_example, backend=counting)(x34)
    torch._dynamo.reset()
    check(defaultdict_grouping_docs_example, x34, graphs=len(counts), fullgraph=True)
    assert len(counts) == 1
