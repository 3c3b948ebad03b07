"""collections.deque as a symbolic sequence: made in the frame, passed in, mutated, returned.

Why this exists: a bounded history (`deque(maxlen=k)` of past hidden states), a work queue of tensors
or a sliding window is ordinary model code; as an opaque object it is a graph break at construction.

A DequeValue holds its items (Values) and its maxlen (a constant) and does what deque does to them:
appends past maxlen drop from the other end, rotate, pops of an empty deque raise (a graph break,
so Python raises it). Indexing, len, truth, `in` and iteration read the items. An input deque is
guarded by type, length, maxlen and items (`d[i]`), and a mutation is written back after the graph
with the deque's own clear/extend (effect kind "deque"); one made in the frame that escapes is
rebuilt as `deque([...], maxlen)`. Only exact `collections.deque` objects are modelled.
"""
import collections

from ....errors import GraphBreak
from ..base import Const, MethodValue, SeqValue, TensorValue, Value
from ..protocol import as_python, unpack_iterable


class DequeValue(Value):
    __slots__ = ("items", "maxlen")
    effect_kind = "deque"          # side_effects.mutate_container: how an input's new contents are written

    def __init__(self, items, maxlen=None, source=None):
        super().__init__(source)
        self.items = list(items)
        self.maxlen = maxlen
        if maxlen is not None and len(self.items) > maxlen:
            del self.items[:len(self.items) - maxlen]

    def python_type(self):
        return collections.deque

    def __repr__(self):
        return f"DequeValue({self.items!r}, maxlen={self.maxlen})"

    # ---- what every value kind answers
    def rebuild_parts(self):
        return list(self.items)

    def rebuild(self, rb):
        items = ", ".join(rb.expr(i) for i in self.items)
        return f"{rb.ns.bind(collections.deque)}([{items}], {self.maxlen!r})"

    def unpack(self, tx):
        return list(self.items)

    def length(self, tx):
        return len(self.items)

    def truth(self, tx):
        return bool(self.items)

    def contains(self, tx, item):
        return _find(tx, self.items, item) is not None

    def getitem(self, tx, index):
        i = _index(self, index)
        return self.items[i]

    def setitem(self, tx, index, value):
        self.items[_index(self, index)] = value
        _changed(tx, self)

    def delitem(self, tx, index):
        del self.items[_index(self, index)]
        _changed(tx, self)

    def load_attr(self, tx, name):
        if name == "maxlen":
            return Const(self.maxlen)
        if callable(getattr(collections.deque, name, None)):
            return MethodValue(self, name)
        raise GraphBreak("attribute error", f"AttributeError: 'collections.deque' object has no attribute {name!r}")

    def call_method(self, tx, name, args, kwargs):
        impl = _METHODS.get(name)
        if impl is None or kwargs:
            raise GraphBreak("method", f"deque.{name} is not supported")
        return impl(tx, self, *args)


def _index(d, index):
    if isinstance(index, TensorValue):
        raise GraphBreak("subscript", "indexing a deque with a tensor needs its value")
    i = as_python(index)
    if not isinstance(i, int):
        raise GraphBreak("bad call", f"TypeError: sequence index must be integer, not '{type(i).__name__}'")
    if not -len(d.items) <= i < len(d.items):
        raise GraphBreak("index error", "IndexError: deque index out of range")
    return i


def _find(tx, items, value):
    """Index of the first item equal to value as deque compares (identity first), or None."""
    for i, item in enumerate(items):
        if item is value:
            return i
        if isinstance(item, Const) and isinstance(value, Const):
            if item.value == value.value:
                return i
            continue
        raise GraphBreak("data-dependent", "comparing deque items that are not constants")
    return None


def _changed(tx, d):
    tx.ctx.side_effects.mutate_container(d)


def _append(tx, d, v):
    d.items.append(v)
    if d.maxlen is not None and len(d.items) > d.maxlen:
        d.items.pop(0)
    _changed(tx, d)
    return Const(None)


def _appendleft(tx, d, v):
    d.items.insert(0, v)
    if d.maxlen is not None and len(d.items) > d.maxlen:
        d.items.pop()
    _changed(tx, d)
    return Const(None)


def _extend(tx, d, it):
    for v in (list(d.items) if it is d else unpack_iterable(tx, it)):
        _append(tx, d, v)
    _changed(tx, d)
    return Const(None)


def _extendleft(tx, d, it):
    for v in (list(d.items) if it is d else unpack_iterable(tx, it)):
        _appendleft(tx, d, v)
    _changed(tx, d)
    return Const(None)


def _pop(tx, d):
    if not d.items:
        raise GraphBreak("index error", "IndexError: pop from an empty deque")
    v = d.items.pop()
    _changed(tx, d)
    return v


def _popleft(tx, d):
    if not d.items:
        raise GraphBreak("index error", "IndexError: pop from an empty deque")
    v = d.items.pop(0)
    _changed(tx, d)
    return v


def _rotate(tx, d, n=Const(1)):
    steps = as_python(n)
    if d.items:
        steps %= len(d.items)
        if steps:
            d.items[:] = d.items[-steps:] + d.items[:-steps]
    _changed(tx, d)
    return Const(None)


def _clear(tx, d):
    d.items.clear()
    _changed(tx, d)
    return Const(None)


def _copy(tx, d):
    return DequeValue(d.items, d.maxlen)


def _count(tx, d, v):
    return Const(sum(1 for i in range(len(d.items)) if _find(tx, d.items[i:i + 1], v) is not None))


def _dindex(tx, d, v, *bounds):
    if bounds:
        raise GraphBreak("method", "deque.index with start/stop")
    i = _find(tx, d.items, v)
    if i is None:
        raise GraphBreak("value error", "ValueError: value is not in deque")
    return Const(i)


def _insert(tx, d, i, v):
    if d.maxlen is not None and len(d.items) >= d.maxlen:
        raise GraphBreak("index error", "IndexError: deque already at its maximum size")
    d.items.insert(as_python(i), v)
    _changed(tx, d)
    return Const(None)


def _remove(tx, d, v):
    i = _find(tx, d.items, v)
    if i is None:
        raise GraphBreak("value error", "ValueError: deque.remove(x): x not in deque")
    del d.items[i]
    _changed(tx, d)
    return Const(None)


def _reverse(tx, d):
    d.items.reverse()
    _changed(tx, d)
    return Const(None)


_METHODS = {"append": _append, "appendleft": _appendleft, "extend": _extend, "extendleft": _extendleft,
            "pop": _pop, "popleft": _popleft, "rotate": _rotate, "clear": _clear, "copy": _copy,
            "__copy__": _copy, "count": _count, "index": _dindex, "insert": _insert, "remove": _remove,
            "reverse": _reverse}


def deque_lookaside(tx, args, kwargs):
    if len(args) > 2 or set(kwargs) - {"iterable", "maxlen"}:
        raise GraphBreak("bad call", "TypeError: deque() takes at most 2 arguments")
    iterable = args[0] if args else kwargs.get("iterable", Const(()))
    maxlen = as_python(args[1] if len(args) > 1 else kwargs.get("maxlen", Const(None)))
    if maxlen is not None and (not isinstance(maxlen, int) or maxlen < 0):
        raise GraphBreak("bad call", "ValueError: maxlen must be a non-negative integer")
    return DequeValue(unpack_iterable(tx, iterable), maxlen)


def wrap_input(ctx, obj, source, guard):
    """An exact deque read from `source`: guarded by type, length, maxlen and items."""
    from ...source import AttrSource, ItemSource
    if guard:
        ctx.guards.add("TYPE_MATCH", source, collections.deque)
        ctx.guards.add("LEN_MATCH", source, len(obj))
        ctx.guards.add("CONST_MATCH", AttrSource(source, "maxlen"), obj.maxlen)
    items = [ctx.wrap(x, ItemSource(source, i), guard) for i, x in enumerate(obj)]
    return DequeValue(items, obj.maxlen, source)


def write_back_lines(target, items):
    return f"__fj_d = {target}; __fj_d.clear(); __fj_d.extend(({''.join(f'{i}, ' for i in items)}))"
