"""Differential tests: generator expressions and generator functions consumed inside the frame.

Generators are run lazily, one yield at a time, so the interleaving of the generator's work with the
consumer's stays as in Python: for loops, next(), any()/all() (which stop early), enumerate/zip/map/
filter over generators, `yield from`, send(), and consumers that take everything (list, tuple, sum,
max, sorted, dict, set, str.join). Root frames that are generators run as plain Python.
"""
import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)
z34 = randn(3, 4, seed=3)
x25 = randn(2, 5, seed=4)
g34 = randn(3, 4, seed=6, requires_grad=True)


def count_up(n):
    for i in range(n):
        yield i


def scaled(xs, k):
    for x in xs:
        yield x * k


def with_return(x):
    yield x + 1
    yield x + 2
    return "done"


def delegating(x):
    result = yield from with_return(x)
    yield result


def chained(xs, ys):
    yield from xs
    yield from ys


def accumulator():
    total = 0
    while True:
        got = yield total
        if got is None:
            return
        total = total + got


def logged(xs, log):
    for x in xs:
        log.append(len(log))
        yield x


def pairs(x):
    for i in range(x.shape[0]):
        yield i, x[i]


def cleanup_gen(x):
    try:
        yield x * 2
    finally:
        pass


# ---------------------------------------------------------------- generator expressions


def genexpr_sum_and_max(xs):
    return sum(t.sum() for t in xs), max(len(t) for t in xs)


def genexpr_into_tuple(xs):
    return tuple(t * 2 for t in xs)


def genexpr_into_list_with_filter(xs):
    return list(t + 1 for t in xs if t.shape[0] == 3)


def genexpr_any_all_shapes(xs):
    return any(t.shape[1] == 5 for t in xs), all(t.dim() == 2 for t in xs)


def genexpr_any_short_circuit(xs, d):
    # eager stops at the first True and never reads d["missing"]
    return any(t.dim() == 2 or d["missing"] for t in xs), xs[0] + 1


def genexpr_all_short_circuit(xs):
    return all(len(t) == 3 and t.shape[1] == 4 for t in xs), sum(t.shape[0] for t in xs)


def genexpr_nested(xs):
    return sum(a * b for a in xs for b in xs)


def genexpr_over_range_with_tensor(x):
    return torch.stack(tuple(x * i for i in range(3)))


def genexpr_sum_with_start(xs):
    return sum((t.mean() for t in xs), torch.tensor(1.0))


def genexpr_cat(xs):
    return torch.cat(list(t[:1] for t in xs), dim=0)


def genexpr_dict_and_set(xs):
    return dict((i, t * i) for i, t in enumerate(xs)), set(t.shape[0] for t in xs)


def genexpr_join(names):
    return "-".join(n.upper() for n in names)


def genexpr_sorted_min(xs):
    return sorted(t.shape[1] for t in xs), min(t.numel() for t in xs)


def genexpr_closure_variable(xs, bias):
    scale = 3
    return [t * scale + bias for t in xs], tuple(t - scale for t in xs)


def genexpr_next(xs):
    it = (t for t in xs if t.shape[1] == 5)
    return next(it), next(it, None)


def genexpr_for_loop(xs):
    out = x34 * 0
    for t in (u * 2 for u in xs):
        out = out + t
    return out


def genexpr_enumerate_zip(xs, ys):
    return [(i, a + b) for i, (a, b) in enumerate(zip((x * 2 for x in xs), ys))]


def genexpr_map_filter(xs):
    return list(map(torch.relu, (x - 0.5 for x in xs))), list(filter(None, (len(x) > 2 for x in xs)))


def genexpr_grads(g):
    return sum(g[i] * (i + 1) for i in range(g.shape[0]))


# ---------------------------------------------------------------- generator functions


def for_over_helper_generator(x):
    out = []
    for i in count_up(3):
        out.append(x * i)
    return out


def list_of_generator(xs):
    return list(scaled(xs, 2)), tuple(count_up(4))


def generator_with_return_value(x):
    return list(with_return(x))


def yield_from_result(x):
    return list(delegating(x))


def yield_from_lists(x, y):
    return [t * 2 for t in chained([x, y], (x + y,))]


def send_protocol(x):
    acc = accumulator()
    next(acc)
    a = acc.send(x)
    b = acc.send(x * 2)
    return a, b


def generator_partially_consumed(x):
    gen = count_up(10)
    first = next(gen)
    second = next(gen)
    return x * first + second


def generator_interleaves_with_consumer(xs, log):
    out = []
    for t in logged(xs, log):
        log.append("body")
        out.append(t * len(log))
    return out, log


def generator_inplace_interleaving(x):
    seen = []
    for v in scaled([x, x], 1):
        seen.append(v.sum() * 1)
        x.add_(1)
    return seen, x


def generator_yields_pairs(x):
    total = x[0] * 0
    for i, row in pairs(x):
        total = total + row * i
    return total


def generator_in_zip_with_list(xs):
    return [a * b for a, b in zip(count_up(5), xs)]


def generator_early_break(x):
    out = x
    for i in count_up(100):
        if i == 3:
            break
        out = out + i
    return out


def generator_iter_and_next(x):
    gen = iter(count_up(3))
    return x + next(gen) + next(gen) + next(gen), next(gen, "end")


def generator_object_is_truthy(x):
    gen = count_up(0)
    return x * 2 if gen else x, list(gen)


def generator_any_stops_early(xs, log):
    found = any(t.shape[0] == 3 for t in logged(xs, log))
    return found, log


def generator_try_finally_exhausted(x):
    return list(cleanup_gen(x))


def generator_try_finally_abandoned(x):
    gen = cleanup_gen(x)
    return next(gen)


def root_generator_function(x):
    yield x * 2
    yield x + 1


def consume_root_generator(x):
    return list(root_generator_function(x))


def generator_exhausted_next_raises(x):
    gen = count_up(1)
    next(gen)
    return next(gen)


def until_index_error(items):
    """collections.abc.Sequence.__iter__'s shape: a yield inside `try: ... except IndexError`."""
    i = 0
    try:
        while True:
            yield items[i]
            i += 1
    except IndexError:
        return


def until_lookup_error_or_key_error(items):
    try:
        for item in items:
            yield item * 2
    except (LookupError, TypeError):
        pass


def guarded_until_any_exception(items):
    try:
        for item in items:
            yield item
    except BaseException:               # would catch GeneratorExit: its close runs code
        items.append("closed")
        raise


def yield_inside_except_chain_exhausted(x, ys):
    return [x * y for y in until_index_error(ys)] + list(until_lookup_error_or_key_error([x, 1.0]))


def yield_inside_except_chain_abandoned(x):
    for v in until_index_error([1.0, 2.0, 3.0]):
        if v == 2.0:
            break                        # the generator is left at its yield: closing it runs nothing
    return x * v


def yield_inside_base_exception_handler_abandoned(x):
    items = [x, x + 1]
    gen = guarded_until_any_exception(items)
    first = next(gen)
    del gen
    return first, len(items)


class Numbers:
    """A sequence made in the frame whose iteration is a generator method."""

    def __init__(self, *values):
        self.values = values

    def __getitem__(self, i):
        return self.values[i]

    def __len__(self):
        return len(self.values)

    def __iter__(self):
        i = 0
        try:
            while True:
                yield self[i]
                i += 1
        except IndexError:
            return


class Pairs:
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(list(zip(self.items, self.items[1:])))


def iterate_objects_made_in_the_frame(x):
    total = sum(Numbers(x, x * 2, 3.0))
    a, b, c = Numbers(1.0, 2.0, x)
    return total + a + b + c + sum(p * q for p, q in Pairs([x, x + 1, x + 2]))


CASES = [
    case(genexpr_sum_and_max, [x34, y34], **ONE),
    case(genexpr_into_tuple, [x34, y34, z34], **ONE),
    case(genexpr_into_list_with_filter, [x34, x25, y34], **ONE),
    case(genexpr_any_all_shapes, [x34, x25], **PY),
    case(genexpr_any_short_circuit, [x34, y34], {}, **ONE),
    case(genexpr_all_short_circuit, [x34, x25, y34], **PY),
    case(genexpr_nested, [x34, y34], **ONE),
    case(genexpr_over_range_with_tensor, x34, **ONE),
    case(genexpr_sum_with_start, [x34, y34], **ONE),
    case(genexpr_cat, [x34, y34], **ONE),
    case(genexpr_dict_and_set, [x34, y34], **ONE),
    case(genexpr_join, ["a", "bc"], **PY),
    case(genexpr_sorted_min, [x34, x25], **PY),
    case(genexpr_closure_variable, [x34, y34], 0.5, **ONE),
    case(genexpr_next, [x34, x25, y34], **PY),
    case(genexpr_for_loop, [x34, y34], **ONE),
    case(genexpr_enumerate_zip, [x34, y34], [z34, x34], **ONE),
    case(genexpr_map_filter, [x34, y34], **ONE),
    case(genexpr_grads, g34, grads=True, **ONE),
    case(for_over_helper_generator, x34, **ONE),
    case(list_of_generator, [x34, y34], **ONE),
    case(generator_with_return_value, x34, **ONE),
    case(yield_from_result, x34, **ONE),
    case(yield_from_lists, x34, y34, **ONE),
    case(send_protocol, x34, **ONE),
    case(generator_partially_consumed, x34, **ONE),
    case(generator_interleaves_with_consumer, [x34, y34], [], **ONE),
    case(generator_inplace_interleaving, x34.clone(), **ONE),
    case(generator_yields_pairs, x34, **ONE),
    case(generator_in_zip_with_list, [x34, y34], **ONE),
    case(generator_early_break, x34, **ONE),
    case(generator_iter_and_next, x34, **ONE),
    case(generator_object_is_truthy, x34, **ONE),
    case(generator_any_stops_early, [x34, y34], [], **PY),
    case(generator_try_finally_exhausted, x34),
    case(generator_try_finally_abandoned, x34),
    case(consume_root_generator, x34, **ONE),
    case(generator_exhausted_next_raises, x34),
    case(yield_inside_except_chain_exhausted, x34, [1.0, 2.0, 3.0], **ONE),
    case(yield_inside_except_chain_abandoned, x34, **ONE),
    case(yield_inside_base_exception_handler_abandoned, x34),
    case(iterate_objects_made_in_the_frame, x34, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
