"""Differential tests: side effects on objects that come from outside the compiled frame.

setattr on argument objects (plain and through property setters / a Python __setattr__), list and
dict mutations of arguments and globals, global writes read back in the same frame, closure cells
written with `nonlocal` (of inlined closures and of the compiled function itself), in-place ops on
input tensors. Each effect must happen exactly once and in program order -- also when a graph break
splits the function (effects before the break happen before the breaking instruction runs, and the
code after the break sees them) -- and arguments that alias each other must behave as eagerly.
"""

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, check, compare, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)
SPLIT = dict(graphs=2, breaks=1)

x3 = randn(3, seed=1)
y3 = randn(3, seed=2)

LOG = []
STATE = {"calls": 0}
TOTAL = 0
LIMIT = 2


class Box:
    def __init__(self, value, items=None):
        self.value = value
        self.items = items if items is not None else []

    def __eq__(self, other):
        return type(other) is Box and vars(self).keys() == vars(other).keys() and all(
            _same(vars(self)[k], vars(other)[k]) for k in vars(self))

    def bump(self, by):
        self.value = self.value + by
        return self


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.allclose(a, b)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))
    return a == b


class Guarded:
    """A property setter that validates and a Python __setattr__ that counts writes."""

    def __init__(self):
        object.__setattr__(self, "writes", 0)
        object.__setattr__(self, "_level", 0)

    def __setattr__(self, name, value):
        object.__setattr__(self, "writes", self.writes + 1)
        object.__setattr__(self, name, value)

    @property
    def level(self):
        return self._level

    @level.setter
    def level(self, value):
        object.__setattr__(self, "_level", max(0, min(value, 10)))

    def __eq__(self, other):
        return type(other) is Guarded and vars(self) == vars(other)


def _break_counter():
    calls = 0

    def closure_write_before_break(x):
        nonlocal calls
        calls += 1
        y = x * calls
        print("calls", calls)
        return y + calls
    return closure_write_before_break


closure_write_before_break = _break_counter()


def _own_closure():
    seen = 0
    history = []

    def remember(x):
        nonlocal seen
        seen += 1
        history.append(seen)
        return x * seen
    return remember


remember = _own_closure()


def _ticking_pair():
    count = 0

    def tick(step=1):
        nonlocal count
        count += step
        return count

    def run(x):
        a = tick()
        b = tick(2)
        return x * a + b, count
    return run


inlined_closure_counter = _ticking_pair()


# ---------------------------------------------------------------- attributes of input objects


def setattr_on_input(box, x):
    box.value = x * 2
    box.extra = "new"
    return box.value + 1


def setattr_then_read_back(box, x):
    box.value = box.value + x
    box.value = box.value * 2
    return box.value


def method_mutates_input(box, x):
    box.bump(x).bump(1)
    return box.value


def property_setter_on_input(g):
    g.level = 42
    g.name = "set"
    return g.level, g.writes


def setattr_builtin_on_input(box, x):
    setattr(box, "value", x - 1)
    return getattr(box, "value") * 2


def tensor_attribute_in_place(box):
    box.value.mul_(3)
    return box.value.sum()


def new_object_stored_on_input(box, x):
    box.child = Box(x + 1)
    box.child.items.append("leaf")
    return box.child.value


def input_attribute_list_mutated(box, x):
    box.items.append(x)
    box.items.append(x * 2)
    return len(box.items)


# ---------------------------------------------------------------- lists and dicts passed in


def list_append_extend_pop(items, x):
    items.append(x)
    items.extend([x * 2, x * 3])
    first = items.pop(0)
    return first, len(items)


def list_item_assignment_and_del(items, x):
    items[0] = x
    items[-1] = items[-1] + x
    del items[1]
    return items[0] * 2


def list_sort_and_reverse(items):
    items.sort()
    items.reverse()
    items.insert(1, 100)
    return items[0]


def dict_mutations(d, x):
    d["new"] = x
    d["scale"] = d["scale"] * 2
    removed = d.pop("drop")
    d.setdefault("default", 7)
    d.update(extra=x * 2)
    return removed, len(d)


def nested_container_mutation(d, x):
    d["inner"].append(x)
    d["inner"][0] = d["inner"][0] + 1
    return d["inner"][-1] * 2


def list_mutated_in_helper(items, x):
    def add_twice(target, v):
        target.append(v)
        target.append(v + 1)
    add_twice(items, x)
    return len(items)


def list_cleared_and_refilled(items, x):
    items.clear()
    items += [x, x + 1]
    return items[1]


def list_returned_after_mutation(items, x):
    items.append(x)
    return items


# ---------------------------------------------------------------- globals


def global_write_then_read(x):
    global TOTAL
    TOTAL = TOTAL + 5
    TOTAL = TOTAL * 2
    return x * TOTAL


def global_list_and_dict(x):
    LOG.append("called")
    STATE["calls"] = STATE["calls"] + 1
    return x * len(LOG) + STATE["calls"]


def _bump_total(by):
    global TOTAL
    TOTAL += by
    return TOTAL


def global_written_by_helper(x):
    _bump_total(2)
    _bump_total(3)
    return x + TOTAL


def global_rebinds_to_new_list(x):
    global LOG
    LOG = [x.shape[0]]
    LOG.append(9)
    return x * len(LOG)


def class_attribute_write(x):
    Box.kind = "box"
    return x * len(Box.kind)


# ---------------------------------------------------------------- closure cells


def local_closure_nonlocal(x):
    total = 0

    def add(v):
        nonlocal total
        total += v
    add(1)
    add(2)
    return x * total


# ---------------------------------------------------------------- tensors


def inplace_on_input_tensor(x, y):
    x.add_(1)
    y.mul_(x)
    return x + y


def inplace_on_tensor_in_list(items):
    items[0].add_(items[1])
    return items[0].sum()


def inplace_through_view(x):
    x[0].fill_(5)
    x.view(-1)[1] = 7
    return x


# ---------------------------------------------------------------- aliasing


def same_list_twice(a, b):
    a.append(1)
    b.append(2)
    return len(a), len(b), a is b


def same_dict_twice(a, b):
    a["k"] = 1
    return b.get("k", 0)


def same_object_twice(p, q):
    p.value = 10
    return q.value


def same_tensor_twice(x, y):
    x.add_(1)
    return y * 2


# ---------------------------------------------------------------- effects around a graph break


def print_between_list_mutations(items, x):
    items.append(x)
    items.append(x * 2)
    print("between")
    items.append(x * 3)
    return len(items)


def global_before_break_seen_after(x):
    global TOTAL
    TOTAL = 11
    print("total is", TOTAL)
    return x * TOTAL


def setattr_before_break_seen_after(box, x):
    box.value = x + 1
    print("break")
    return box.value * 2


def aliased_lists_across_a_break(a, b):
    a.append(1)
    print("break")
    b.append(2)
    return len(a), a is b


def inplace_on_input_before_break(x):
    x.add_(1)
    print("break")
    return x * 2


def effects_then_raise(items, x):
    items.append(x)
    if len(items) > LIMIT:
        raise ValueError("too many items")
    return x


class Plain:
    """Compared by vars() in order: the order attributes were created in is observable."""

    def __init__(self):
        self.n = 1

    @property
    def level(self):
        return self.__dict__.get("_level", 0)

    @level.setter
    def level(self, value):
        self._level = value


def new_attribute_stored_twice_keeps_its_place(obj, x):
    obj.extra = 0
    obj.other = 3
    obj.extra = 5
    return x + 1


def dict_update_then_setter_then_store(obj, x):
    obj.__dict__.update(extra=1)
    obj.level = 3
    obj.extra = 2
    return x + 1


def interleaved_restores_keep_creation_order(obj, x):
    obj.a = x.sum()
    obj.b = 2
    obj.a = 3
    obj.c = x * 2
    obj.b = 4
    obj.a = 6
    return x - 1


CASES = [
    case(new_attribute_stored_twice_keeps_its_place, Plain(), x3, **ONE),
    case(dict_update_then_setter_then_store, Plain(), x3, **ONE),
    case(interleaved_restores_keep_creation_order, Plain(), x3, **ONE),
    case(setattr_on_input, Box(1.0), x3, **ONE),
    case(setattr_then_read_back, Box(x3), y3, **ONE),
    case(method_mutates_input, Box(x3), y3, **ONE),
    case(property_setter_on_input, Guarded(), **PY),
    case(setattr_builtin_on_input, Box(0), x3, **ONE),
    case(tensor_attribute_in_place, Box(randn(3, seed=5)), **ONE),
    case(new_object_stored_on_input, Box(1), x3, **ONE),
    case(input_attribute_list_mutated, Box(1, [0]), x3, **PY),
    case(list_append_extend_pop, [y3], x3, **ONE),
    case(list_item_assignment_and_del, [x3, y3, x3 * 2], y3, **ONE),
    case(list_sort_and_reverse, [3, 1, 2], **PY),
    case(dict_mutations, {"scale": 2, "drop": y3}, x3, **ONE),
    case(nested_container_mutation, {"inner": [1, 2]}, x3, **ONE),
    case(list_mutated_in_helper, [], x3, **ONE),
    case(list_cleared_and_refilled, [x3, y3, x3], y3, **ONE),
    case(list_returned_after_mutation, [y3], x3, **PY),
    case(global_write_then_read, x3, **ONE),
    case(global_list_and_dict, x3, **ONE),
    case(global_written_by_helper, x3, **ONE),
    case(global_rebinds_to_new_list, x3, **ONE),
    case(class_attribute_write, x3, **ONE),
    case(inlined_closure_counter, x3, **ONE),
    case(remember, x3, **ONE),
    case(local_closure_nonlocal, x3, **ONE),
    case(inplace_on_input_tensor, x3, y3, **ONE),
    case(inplace_on_tensor_in_list, [x3, y3], **ONE),
    case(inplace_through_view, randn(2, 3, seed=4), **ONE),
    case(print_between_list_mutations, [y3], x3, **SPLIT),
    case(global_before_break_seen_after, x3, graphs=1, breaks=1),
    case(setattr_before_break_seen_after, Box(0), x3, **SPLIT),
    case(closure_write_before_break, x3, **SPLIT),
    case(aliased_lists_across_a_break, *([0],) * 2, graphs=0, breaks=1),
    case(inplace_on_input_before_break, x3, **SPLIT),
    case(effects_then_raise, [1, 2], x3),
    case(effects_then_raise, [], x3),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


# ---------------------------------------------------------------- aliasing between arguments

SHARED_LIST = [0]
SHARED_BOX = Box(0)


@pytest.mark.parametrize("fn,make_args", [
    (same_list_twice, lambda: (SHARED_LIST, SHARED_LIST)),
    (same_dict_twice, lambda: ({"a": 0},) * 2),
    (same_object_twice, lambda: (SHARED_BOX,) * 2),
    (same_tensor_twice, lambda: (randn(3, seed=9),) * 2),
])
def test_aliased_arguments_behave_as_eagerly(fn, make_args):
    check(fn, *make_args(), fullgraph=True)


@pytest.mark.parametrize("fn,aliased,distinct", [
    (same_list_twice, lambda: ([0],) * 2, lambda: ([0], [0])),
    (same_dict_twice, lambda: ({"a": 0},) * 2, lambda: ({"a": 0}, {"a": 0})),
    (same_object_twice, lambda: (Box(0),) * 2, lambda: (Box(0), Box(0))),
    (same_tensor_twice, lambda: (randn(3, seed=9),) * 2, lambda: (randn(3, seed=9), randn(3, seed=9))),
])
def test_aliasing_is_part_of_the_cache_key(fn, aliased, distinct):
    compiled = framejit.compile(fn)
    for make in (aliased, distinct, aliased, distinct):
        eager_args, compiled_args = make(), make()
        compare(fn(*eager_args), compiled(*compiled_args))
        compare(eager_args, compiled_args, "input args after call")


def test_mutated_list_is_exactly_as_eager_after_a_break():
    items = [x3.clone()]
    check(print_between_list_mutations, items, y3, graphs=2, breaks=1)
    compiled = framejit.compile(print_between_list_mutations)
    mine, theirs = [x3.clone()], [x3.clone()]
    compiled(mine, y3)
    print_between_list_mutations(theirs, y3)
    assert len(mine) == 4
    compare(theirs, mine)


def test_each_effect_happens_once_per_call():
    compiled = framejit.compile(inlined_closure_counter)
    before = inlined_closure_counter(x3)[1]
    for _ in range(3):
        compiled(x3)
    assert inlined_closure_counter(x3)[1] == before + 12


def mutable_default_argument(x, acc=[]):  # noqa: B006  (the point of the test)
    acc.append(x.shape[0])
    return x * len(acc)


def test_mutable_default_argument_grows_once_per_call():
    compiled = framejit.compile(mutable_default_argument)
    mutable_default_argument.__defaults__[0].clear()
    outs = [compiled(x3) for _ in range(3)]
    assert mutable_default_argument.__defaults__[0] == [3, 3, 3]
    compare([x3, x3 * 2, x3 * 3], outs)


class _Collector:
    def __init__(self):
        self.slot = None
        self.active = False


COLLECTOR = _Collector()


def collect_around(x):
    COLLECTOR.slot = {}
    COLLECTOR.active = True
    y = x * 2
    COLLECTOR.slot = None
    COLLECTOR.active = False
    return y


def test_stores_overwritten_within_one_run_are_replayed_once():
    COLLECTOR.slot, COLLECTOR.active = "before", "before"
    check(collect_around, randn(3), graphs=1, breaks=0)
    compiled = framejit.compile(collect_around)
    for _ in range(2):
        COLLECTOR.slot, COLLECTOR.active = "before", "before"
        compiled(randn(3))
        assert COLLECTOR.slot is None and COLLECTOR.active is False
    code = "\n".join(framejit.explain(collect_around)(randn(3)).transformed_code)
    assert code.count("'slot'") == 1 and code.count("'active'") == 1, code
