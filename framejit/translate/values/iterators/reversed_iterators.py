"""reversed() iterators across a graph break: held in a local, or passed in, as eager's objects.

Why: `it = reversed(xs); a = next(it); print(); b = next(it)` ran its whole frame as plain Python (the
translator's reversed() made an IteratorValue with no sequence behind it, which a break cannot rebuild),
and a reversed iterator passed in was an opaque object whose `next()` was a graph break. iter() of a list,
tuple or range already crosses (values/base.py's `iterator_at`, iterator_positions.py); reversed() is its
mirror:

* held: reversed() of a list, tuple or range the frame knows is a `ReversedIteratorValue` over that Value,
  rebuilt at a break as `reversed(seq)` at its position (`reversed_at`: a list's or tuple's reverse
  iterator set to its index, counted from the length it was made at, as eager's is; a range's is a forward
  range iterator), so `type(it)` and what it yields are eager's;
* passed in (an argument, or what a break function hands its resume function): a tuple's `reversed` object
  is the tuple of the items it has left (`reversed_rows`, read through __reduce__ without advancing it);
  a list's reverse iterator reads its list (wrapped as the input list it is) live from its index down
  (`ReversedItems`), so the frame's writes into that list show as they do eagerly. A range's reversed()
  is a range iterator, already modelled. Both advance the real iterator after the graph by as many items
  as the frame took (iterator_positions.py's `advance_lines`).

reversed() of a dict or its views: reversed_dict_iterators.py (read live from the dict).
"""
import itertools

from ..base import Const, IteratorValue, SeqValue

LIST_REVERSE_ITERATOR = type(reversed([]))
TUPLE_REVERSE_ITERATOR = type(reversed(()))            # the `reversed` class
_RANGE_ITERATOR = type(iter(range(0)))
# the reverse iterators a frame may receive and model (iterator_positions.py's MODELLED_TYPES)
INPUT_REVERSE_TYPES = (LIST_REVERSE_ITERATOR, TUPLE_REVERSE_ITERATOR)


class ReversedIteratorValue(IteratorValue):
    """reversed(seq) made in the frame: the items snapshotted (as the IteratorValue of reversed() always
    was), and the sequence Value it reverses, so a break rebuilds it as eager's object."""
    __slots__ = ("real_type",)

    def __init__(self, items, seq, real_type):
        super().__init__(items, seq)
        self.real_type = real_type

    def python_type(self):
        return self.real_type

    def rebuild(self, rb):
        seq = rb.expr(self.seq)
        return rb.declare(self, f"{rb.ns.bind(reversed_at)}({seq}, {self.pos}, {len(self.items)})")


def reversed_iterator(seq, items):
    """The Value of reversed(seq), whose items (already reversed) are `items`."""
    real_type = _real_type(seq)
    if real_type is None:
        return IteratorValue(items)
    return ReversedIteratorValue(items, seq, real_type)


_REVERSE_TYPES = {list: LIST_REVERSE_ITERATOR, tuple: TUPLE_REVERSE_ITERATOR, range: _RANGE_ITERATOR}


def _real_type(seq):
    """The class of eager's reversed(seq), for the sequences a break can rebuild it over, else None."""
    if isinstance(seq, SeqValue) and seq.kind in (list, tuple):
        return _REVERSE_TYPES[seq.kind]
    if isinstance(seq, Const) and type(seq.value) in (tuple, range):
        return _REVERSE_TYPES[type(seq.value)]
    return None         # (a dict's: reversed_dict_iterators.py, from the reversed() lookaside)


def reversed_at(seq, pos, length):
    """reversed(seq) past its first `pos` items, for a sequence that had `length` items when the frame
    reversed it (generated code: a rebuilt ReversedIteratorValue)."""
    it = reversed(seq)
    if not pos:
        return it
    if type(it) in (LIST_REVERSE_ITERATOR, TUPLE_REVERSE_ITERATOR):
        it.__setstate__(length - 1 - pos)              # eager's index counts down from where it started
    elif type(it) is _RANGE_ITERATOR:
        it.__setstate__(pos)
    else:
        next(itertools.islice(it, pos, pos), None)
    return it


def reversed_rows(it):
    """The items a `reversed` object over a tuple or str has left, as a tuple, without advancing it (None:
    it reverses something else, whose items a read could run code for)."""
    state = it.__reduce__()
    if len(state) < 3:
        return ()
    seq, index = state[1][0], state[2]
    if type(seq) not in (tuple, str):
        return None
    return tuple(seq[index::-1]) if index >= 0 else ()


def reversed_list(it):
    """The list a list's reverse iterator reads."""
    return it.__reduce__()[1][0]


def reversed_index(it):
    """The index a list's reverse iterator reads next (-1 when exhausted: it never reads again)."""
    state = it.__reduce__()
    return state[2] if len(state) > 2 else -1


class ReversedItems:
    """The items a list's reverse iterator yields, from `last` down, read live from the list Value's items
    (a sequence for IteratorValue.items: len, an index, a slice). Eagerly it stops for good once its index
    is past the list's end (the list shrank)."""
    __slots__ = ("items", "last")

    def __init__(self, items, last):
        self.items = items
        self.last = last

    def __len__(self):
        return self.last + 1 if 0 <= self.last < len(self.items) else 0

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self.items[self.last - k]

    def __iter__(self):
        return iter(self[:])
