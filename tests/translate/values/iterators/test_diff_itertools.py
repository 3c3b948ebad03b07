"""Differential tests: itertools iterators over tensors and constants (functools.reduce already had its own).

Many cases are the recipes and examples of the `itertools` documentation; the order tests check
that lazy iterators pull from a generator input exactly when the C implementation does (a print in
the generator would show the interleaving: here a list the generator appends to does).
"""

import itertools
import operator

import pytest
import torch

from tests.differential import CASE_FIELDS, case, check, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)


def product_pairs(x):
    return [x * a + b for a, b in itertools.product([1, 2], (3, 4))]


def product_repeat(x):
    return [x * (a - b) for a, b in itertools.product(range(2), repeat=2)]


def chain_and_from_iterable(x, y):
    a = sum(itertools.chain([x, y], (x + 1,)))
    b = list(itertools.chain.from_iterable([[x, 1], [2], []]))
    return a, b


def combinations_and_permutations(x, y):
    combos = [a * b for a, b in itertools.combinations([x, y, x + y], 2)]
    perms = [a - b for a, b in itertools.permutations([x, y])]
    cwr = list(itertools.combinations_with_replacement("AB", 2))
    return combos, perms, cwr


def zip_longest_docs(x, y):
    rows = list(itertools.zip_longest("ABCD", "xy", fillvalue="-"))
    ts = [a if b is None else a + b for a, b in itertools.zip_longest([x, y, x], [y])]
    return rows, ts


def islice_forms(x):
    items = [x, x + 1, x + 2, x + 3, x + 4]
    return (list(itertools.islice(items, 2)), list(itertools.islice(items, 1, None, 2)),
            list(itertools.islice("ABCDEFG", 2, 4)), list(itertools.islice(itertools.count(), 0, 9, 4)))


def accumulate_forms(x):
    running = list(itertools.accumulate([x, x, x]))
    maxes = list(itertools.accumulate([3, 4, 6, 2, 1, 9, 0, 7, 5, 8], max))
    with_initial = list(itertools.accumulate([1, 2, 3], operator.mul, initial=10))
    return running, maxes, with_initial, x * maxes[-1]


def repeat_count_cycle(x):
    out = [t * i for i, t in zip(itertools.count(2, 3), itertools.repeat(x, 3))]
    cyc = list(itertools.islice(itertools.cycle("AB"), 5))
    squares = list(map(pow, range(4), itertools.repeat(2)))
    return out, cyc, squares


def groupby_docs(x):
    keys = [k for k, g in itertools.groupby("AAAABBBCCDAABBB")]
    groups = [list(g) for k, g in itertools.groupby("AAAABBBCCD")]
    by_len = [(k, [t.shape[0] for t in g])
              for k, g in itertools.groupby([x, x[:2], x[:2], x], key=lambda t: t.shape[0])]
    return keys, groups, by_len, x * len(keys)


def groupby_groups_consumed_late(x):
    """Keeping the group iterators and reading them later: all but the last are empty (C semantics)."""
    kept = [g for k, g in itertools.groupby([1, 1, 2, 2, 3])]
    return [list(g) for g in kept], x + 1


def starmap_pairwise_filters(x):
    prods = list(itertools.starmap(operator.mul, [(x, 2), (x, 3)]))
    diffs = [b - a for a, b in itertools.pairwise([x, x * 2, x * 4])]
    take = list(itertools.takewhile(lambda v: v < 5, [1, 4, 6, 4, 1]))
    drop = list(itertools.dropwhile(lambda v: v < 5, [1, 4, 6, 4, 1]))
    odd = list(itertools.filterfalse(lambda v: v % 2, range(10)))
    sel = list(itertools.compress("ABCDEF", [1, 0, 1, 0, 1, 1]))
    return prods, diffs, take, drop, odd, sel


def chain_pulls_lazily(x):
    log = []

    def gen(tag):
        for i in range(2):
            log.append((tag, i))
            yield x * i

    it = itertools.chain(gen("a"), gen("b"))
    first = next(it)
    log.append("after first")
    rest = list(it)
    return first, rest, log


def islice_stops_without_overreading(x):
    log = []

    def gen():
        for i in range(5):
            log.append(i)
            yield x + i

    it = gen()
    head = list(itertools.islice(it, 2))
    log.append("sliced")
    return head, next(it), log


def zip_longest_pulls_in_order(x):
    log = []

    def gen(tag, n):
        for i in range(n):
            log.append((tag, i))
            yield i

    pairs = list(itertools.zip_longest(gen("a", 1), gen("b", 2)))
    return pairs, log, x * 2


CASES = [
    case(product_pairs, x34, **ONE),
    case(product_repeat, x34, **ONE),
    case(chain_and_from_iterable, x34, y34, **ONE),
    case(combinations_and_permutations, x34, y34, **ONE),
    case(zip_longest_docs, x34, y34, **ONE),
    case(islice_forms, x34, **ONE),
    case(accumulate_forms, x34, **ONE),
    case(repeat_count_cycle, x34, **ONE),
    case(groupby_docs, x34, **ONE),
    case(groupby_groups_consumed_late, x34, **ONE),
    case(starmap_pairwise_filters, x34, **ONE),
    case(chain_pulls_lazily, x34, **ONE),
    case(islice_stops_without_overreading, x34, **ONE),
    case(zip_longest_pulls_in_order, x34, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


@pytest.mark.parametrize("fn", [product_pairs, chain_and_from_iterable, combinations_and_permutations])
def test_graph_count_matches_torch_compile(fn):
    import torch._dynamo

    torch._dynamo.reset()
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    args = (x34,) if fn is product_pairs else (x34, y34)
    torch.compile(fn, backend=counting)(*args)
    torch._dynamo.reset()
    check(fn, *args, graphs=len(graphs), fullgraph=True)
