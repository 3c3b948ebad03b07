"""reversed() of a dict or of its keys/values/items view, made in the frame: read live, rebuilt at a break.

Why: `it = reversed(d); k = next(it); print(); k2 = next(it)` ran its whole frame as plain Python (the
translator's reversed() was a snapshot of the items with no object behind it, which a break cannot
rebuild), and even inside one graph the snapshot was not eager's iterator: a dict's reverse iterator reads
the dict as it is at each next() (a value written after reversed() shows), and once the dict changed size
its next() raises "RuntimeError: dictionary changed size during iteration", for good.

So the iterator is the dict Value, the view (keys, values, items), the dict's size when it was made and
its position (IteratorValue.pos). Its items are read from the dict Value at each step (`LiveReversedRows`);
a step after the size changed is a graph break of the "op raised" family, so the call runs that step as
Python and raises eager's error. At a break it is rebuilt as eager's object (`reversed_dict_at`): reversed()
of the real dict (view) after the graph, advanced by its position, or, when the dict's size is no longer
the one it was made at, a reverse iterator of that type whose next() raises eager's RuntimeError; a for
loop's iterator crosses as itself too (not as the tuple of the items left, which would not see the dict).

Not modelled: reversed() of an input dict the frame wrote before (at a break, the frame runs as plain
Python: the rebuilt iterator is made before the frame's writes are replayed); a dict whose keys were
replaced at equal size (eager's iterator walks the dict's entry table,
deleted slots included, where this reads the keys in order); an iterator that ran out and then sees the
dict grow is rebuilt as spent (eager raises RuntimeError if no next() had yet reported the end).

Passed in (an argument, or what a break function hands its resume function): the iterator's dict is read
from the iterator itself (`reversed_dict_of`, the one object it refers to besides an items iterator's
result tuple) and wrapped as the input dict it is (one Value with the frame's other references to it), and
its position from the count it has left (`reversed_dict_left`, guarded; -1 when the dict changed size
since it was made, which stays an opaque object whose next() runs as Python). The frame reads it live as
above, and after the graph the real iterator is advanced by as many items as the frame took, before the
frame's writes to the dict are replayed (iterator_positions.py's `advance_lines`), as eager took them.
"""
import gc

from ....errors import GraphBreak
from ..base import IteratorValue, SeqValue
from ..dicts.identity_hashed_keys import key_value

DICT_REVERSE_TYPES = {"keys": type(reversed({})), "values": type(reversed({}.values())),
                      "items": type(reversed({}.items()))}


class ReversedDictIteratorValue(IteratorValue):
    """reversed(d) / reversed(d.<view>()) over a DictValue `seq` of `size` items (see the module doc)."""
    __slots__ = ("view", "size", "made_after_writes")
    crosses_as_itself = True            # (convert/break_split.py: a for loop's iterator is not snapshotted)

    def __init__(self, dict_value, view, made_after_writes=False):
        super().__init__((), dict_value)
        self.view = view
        self.size = len(dict_value.items)
        self.items = LiveReversedRows(dict_value, view, self.size)
        self.made_after_writes = made_after_writes

    def python_type(self):
        return DICT_REVERSE_TYPES[self.view]

    def rebuild_parts(self):
        # made over an input dict the frame had already written: its real dict holds the frame's writes only
        # after the rebuilt objects are made (the write-back comes later), so it cannot be made as eager's
        return None if self.made_after_writes else [self.seq]

    def rebuild(self, rb):
        seq = rb.expr(self.seq)
        return rb.declare(self, f"{rb.ns.bind(reversed_dict_at)}({seq}, {self.view!r}, {self.pos}, {self.size})")


class LiveReversedRows:
    """What a dict reverse iterator yields, read from the dict Value when asked (a sequence for
    IteratorValue.items: len, an index, a slice); asked after the dict changed size, a graph break."""
    __slots__ = ("dict_value", "view", "size")

    def __init__(self, dict_value, view, size):
        self.dict_value = dict_value
        self.view = view
        self.size = size

    def _rows(self):
        d = self.dict_value.items
        if len(d) != self.size:
            raise GraphBreak("op raised", "next() on a dict's reverse iterator raises RuntimeError: dictionary "
                             "changed size during iteration")
        keys = list(d)[::-1]
        if self.view == "keys":
            return [key_value(k) for k in keys]
        if self.view == "values":
            return [d[k] for k in keys]
        return [SeqValue(tuple, [key_value(k), d[k]]) for k in keys]

    def __len__(self):
        return len(self._rows())

    def __getitem__(self, k):
        return self._rows()[k]

    def __iter__(self):
        return iter(self._rows())


def reversible_dict(dict_value):
    """Is `dict_value` (a DictValue) reversed the way a plain dict is (a dict, or a subclass keeping
    dict's __reversed__: defaultdict, a user subclass; not OrderedDict, whose iterator is its own)?"""
    kind = getattr(dict_value, "kind", None)
    return isinstance(kind, type) and issubclass(kind, dict) and kind.__reversed__ is dict.__reversed__


def reversed_dict_at(d, view, pos, size):
    """The reverse iterator over `d` (its `view`) a frame made when d had `size` items, `pos` items taken
    (generated code: a rebuilt ReversedDictIteratorValue)."""
    if len(d) != size:              # eager's would raise at its next step: one of its type that does
        stale = dict.fromkeys(range(size))
        it = reversed(stale if view == "keys" else getattr(stale, view)())
        stale[-1] = None
        return it
    it = reversed(d if view == "keys" else getattr(d, view)())
    if pos >= size:                 # spent: it reports the end for good, as eager's does once it has
        it = reversed({} if view == "keys" else getattr({}, view)())
        next(it, None)
        return it
    for _ in range(pos):
        next(it)
    return it


def reversed_dict_of(it):
    """The dict a dict reverse iterator reads (None once it reported its end: it never reads again)."""
    return next((r for r in gc.get_referents(it) if isinstance(r, dict)), None)


def reversed_dict_left(it):
    """How many items a dict reverse iterator has left, without advancing it; -1 when its dict changed
    size since it was made (its next() raises RuntimeError), -2 when it reported its end (for good)."""
    if reversed_dict_of(it) is None:
        return -2
    try:
        it.__reduce__()                 # (lists a copy of it: raises as its next() would)
    except RuntimeError:
        return -1
    return it.__length_hint__()
