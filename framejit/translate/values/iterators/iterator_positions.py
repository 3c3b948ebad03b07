"""Iterators from outside the frame, modelled by position: a list, tuple or range iterator passed in (or
handed to a resume function by the graph break before it) is an IteratorValue over the items it has left.

Why: `next(it)` on a real iterator was a graph break, so an iterator that crossed a break (`it =
iter(xs); a = next(it); print(); b = next(it)`) ran its whole frame as plain Python. Now the items left
are read without advancing the iterator (`remaining_items`, through __reduce__) and guarded like a tuple
argument (its length, constants by value, tensors as graph inputs); the frame consumes them in the graph,
and after the graph the real iterator is advanced by as many items as the frame took
(`advance_lines`), so the caller, the break function and the resume function see it where eager leaves
it. The iterator itself escapes as the same object (reloaded by its Source). An iterator with more than
MAX_MODELLED items left stays an opaque object, as before.
"""
from dataclasses import dataclass
import itertools

from ...source import FixedObjectSource, Source, fixed_source
from ..base import Const, DictValue, IteratorValue, SeqValue
from .composed_iterators import COMPOSED_TYPES, composed_rows
from .reversed_dict_iterators import (DICT_REVERSE_TYPES, LiveReversedRows, reversed_dict_left,
                                      reversed_dict_of, reversible_dict)
from .reversed_iterators import (INPUT_REVERSE_TYPES, LIST_REVERSE_ITERATOR, ReversedItems, reversed_index,
                                 reversed_list, reversed_rows)

LIST_ITERATOR = type(iter([]))
# (zip, enumerate, map and filter objects over tuple and range iterators too: composed_iterators.py; reversed()
# of a list or tuple: reversed_iterators.py)
_DICT_VIEWS = {t: view for view, t in DICT_REVERSE_TYPES.items()}
MODELLED_TYPES = (type(iter(())), LIST_ITERATOR, type(iter(range(0)))) + COMPOSED_TYPES + INPUT_REVERSE_TYPES + \
    tuple(_DICT_VIEWS)
MAX_MODELLED = 64


def remaining_items(it):
    """The items a tuple, list or range iterator has left, as a tuple, without advancing it."""
    state = it.__reduce__()
    if len(state) < 3:
        return ()
    return tuple(state[1][0][state[2]:])


def iterated_list(it):
    """The list a list iterator reads (an empty list when it is exhausted: it never reads again)."""
    return it.__reduce__()[1][0]


def iterator_index(it):
    """How far a list iterator is (-1 when exhausted: it stays so, whatever its list holds later)."""
    state = it.__reduce__()
    return state[2] if len(state) > 2 else -1


def advance_iterator(it, n):
    """Consume n items of a tuple, list or range iterator (generated code, after the graph)."""
    next(itertools.islice(it, n, n), None)


@dataclass(frozen=True)
class IteratorStateSource(Source):
    """`reader(base)`: the items left, the list read or the index of iterator `base` (remaining_items,
    iterated_list, iterator_index), read without advancing it."""
    base: Source
    reader: FixedObjectSource

    def expr(self):
        return f"{self.reader.expr()}({self.base.expr()})"

    def name(self):
        return f"{self.reader.name()}({self.base.name()})"

    def root(self):
        return self.base.root()


def _state_source(source, reader):
    return IteratorStateSource(source, fixed_source(reader, reader.__name__))


class InputIteratorValue(IteratorValue):
    """A real iterator from outside the frame: its items left (`items`, `pos` of them consumed here)."""
    __slots__ = ("real_type", "start")
    advanced_before_effects = False   # (a dict's reverse iterator: before the frame's writes to its dict)
    tracks_identity = True       # one Value per real iterator, however many paths reach it (guards/identity.py)

    def __init__(self, items, source, real_type, start=0):
        super().__init__(())
        self.items = items         # a list iterator's: the list Value's own items, so appends show
        self.pos = self.start = start
        self.source = source
        self.real_type = real_type

    def python_type(self):
        return self.real_type

    def rebuild_parts(self):
        return []                  # itself, reloaded

    def rebuild(self, rb):
        return rb.reload(self.source)


def wrap_input_iterator(ctx, obj, source):
    """An InputIteratorValue for a tuple, list or range iterator argument, or None (too many items left).
    A tuple or range iterator is the tuple of the items it has left; a list iterator reads its list
    (wrapped as the input list it is, one Value with the frame's other references to it) from its index."""
    t = type(obj)
    if t is LIST_ITERATOR and iterator_index(obj) >= 0:
        lst, index = iterated_list(obj), iterator_index(obj)
        if len(lst) - index > MAX_MODELLED:
            return None
        ctx.guards.add("TYPE_MATCH", source, t)
        ctx.guards.add("CONST_MATCH", _state_source(source, iterator_index), index)
        list_value = ctx.wrap(lst, _state_source(source, iterated_list))
        if not isinstance(list_value, SeqValue) or list_value.kind is not list:
            return None
        return InputIteratorValue(list_value.items, source, t, start=index)
    if t is LIST_REVERSE_ITERATOR and reversed_index(obj) >= 0:
        index = reversed_index(obj)
        if index + 1 > MAX_MODELLED:
            return None
        ctx.guards.add("TYPE_MATCH", source, t)
        ctx.guards.add("CONST_MATCH", _state_source(source, reversed_index), index)
        list_value = ctx.wrap(reversed_list(obj), _state_source(source, reversed_list))
        if not isinstance(list_value, SeqValue) or list_value.kind is not list:
            return None
        return InputIteratorValue(ReversedItems(list_value.items, index), source, t)
    if t in _DICT_VIEWS:
        return _wrap_reversed_dict(ctx, obj, source, t)
    reader = composed_rows if t in COMPOSED_TYPES else reversed_rows if t in INPUT_REVERSE_TYPES else remaining_items
    rest = reader(obj)
    if rest is None or len(rest) > MAX_MODELLED:
        return None
    ctx.guards.add("TYPE_MATCH", source, t)
    rest_value = ctx.wrap(rest, _state_source(source, reader))
    items = list(rest_value.items) if isinstance(rest_value, SeqValue) else [Const(x) for x in rest_value.value]
    return InputIteratorValue(items, source, t)


class InputReversedDictIterator(InputIteratorValue):
    """A dict reverse iterator from outside the frame (values/iterators/reversed_dict_iterators.py)."""
    __slots__ = ()
    advanced_before_effects = True
    crosses_as_itself = True          # (convert/break_decision.py: its items are not read at a break)


def _wrap_reversed_dict(ctx, obj, source, t):
    """An InputReversedDictIterator reading its dict (wrapped as the input it is) live, or None."""
    d, left = reversed_dict_of(obj), reversed_dict_left(obj)
    if left == -1 or (d is not None and len(d) > MAX_MODELLED):
        return None
    ctx.guards.add("TYPE_MATCH", source, t)
    ctx.guards.add("CONST_MATCH", _state_source(source, reversed_dict_left), left)
    if d is None:                     # spent: it yields nothing, whatever its dict holds later
        return InputReversedDictIterator([], source, t)
    dict_value = ctx.wrap(d, _state_source(source, reversed_dict_of))
    if not isinstance(dict_value, DictValue) or not reversible_dict(dict_value):
        return None
    size = len(d)            # the real dict's at entry (the frame may have written its Value before this read)
    return InputReversedDictIterator(LiveReversedRows(dict_value, _DICT_VIEWS[t], size), source, t, start=size - left)


def advance_lines(wrapped_values, rb, before_effects=False):
    """Generated statements moving each input iterator the frame consumed from by as many items (with
    `before_effects`, those advanced before the frame's side effects are replayed; else the others)."""
    lines, seen = [], set()
    for v in wrapped_values:         # (one Value may be wrapped under several Sources: `it is __fj_s0`)
        if isinstance(v, InputIteratorValue) and v.advanced_before_effects is before_effects and \
                v.pos > v.start and id(v) not in seen:
            seen.add(id(v))
            lines.append(f"{rb.ns.bind(advance_iterator)}({rb.reload(v.source)}, {v.pos - v.start})")
    return lines
