"""zip / enumerate / map / filter iterators that cross a graph break, as the objects eager has.

Why this exists: a list, tuple or range iterator held in a local keeps its position through a break
(iterator_positions.py), but `it = zip(xs, ys); next(it); print(); next(it)` ran the whole frame as plain
Python: the translator computes such an iterator's items when it is made (builtins_table.py's zip, map...),
and an IteratorValue with no sequence behind it could not be rebuilt.

Now it is rebuilt after the graph as a real object of its kind over tuple iterators of the items it has left
(`remade_iterator`: a zip of columns, an enumerate counting on from where it was, a map or filter whose
function hands items through), so `type(it)` and what it yields are eager's. The resume function that
receives it reads its items left without advancing it (`composed_rows`, through __reduce__, over tuple and
range iterators, nested), guards them like a tuple argument and advances the real object after its graph
(iterator_positions.py's InputIteratorValue path). A zip, enumerate, map or filter passed in by a caller is
modelled the same way when it reads tuple or range iterators (a map or filter only with the pass-through
functions below: another function would have to run when the item is read).
"""
from ..base import IteratorValue

COMPOSED_TYPES = (zip, enumerate, map, filter)
_TUPLE_ITERATOR = type(iter(()))
_RANGE_ITERATOR = type(iter(range(0)))


def same_item(item):
    """The function of a remade map: the items were computed in the graph already."""
    return item


def kept_item(item):
    """The function of a remade filter: the items left are those the filter kept."""
    return True


def remade_iterator(kind, rows, count):
    """A real `kind` iterator yielding `rows` (generated code, after the graph); `count`: an enumerate's
    next number."""
    if kind is zip:
        return zip(*[iter(column) for column in zip(*rows)]) if rows else zip()
    if kind is enumerate:
        return enumerate(iter(tuple(v for _, v in rows)), count)
    if kind is map:
        return map(same_item, iter(rows))
    return filter(kept_item, iter(rows))


def composed_rows(it):
    """The items a zip / enumerate / map / filter (over tuple or range iterators, nested) has left, as a
    tuple, without advancing it; None when they cannot be read so."""
    kind = type(it)
    if kind in (_TUPLE_ITERATOR, _RANGE_ITERATOR):
        state = it.__reduce__()
        return tuple(state[1][0][state[2]:]) if len(state) > 2 else ()
    if kind not in COMPOSED_TYPES:
        return None
    state = it.__reduce__()
    args = state[1]
    if kind is zip:
        if len(state) > 2 and state[2]:
            return None                   # strict=True: its error at the end is not modelled
        columns = [composed_rows(inner) for inner in args]
        return None if any(c is None for c in columns) else tuple(zip(*columns))
    if kind is enumerate:
        inner, count = args
        rows = composed_rows(inner)
        return None if rows is None else tuple((count + i, v) for i, v in enumerate(rows))
    fn, *inners = args
    if len(inners) != 1 or fn is not (same_item if kind is map else kept_item):
        return None
    return composed_rows(inners[0])


class ComposedIterator(IteratorValue):
    """What zip(), enumerate(), map(), filter() made in the frame: its items, computed when it was made."""
    __slots__ = ("kind", "start")

    def __init__(self, items, kind, start=0):
        super().__init__(items)
        self.kind = kind
        self.start = start                # an enumerate's first number

    def python_type(self):
        return self.kind

    def rebuild_parts(self):
        return list(self.items[self.pos:])

    def rebuild(self, rb):
        left = self.items[self.pos:]
        rows = "".join(f"{rb.expr(v)}, " for v in left)
        return rb.declare(self, f"{rb.ns.bind(remade_iterator)}({rb.ns.bind(self.kind)}, ({rows}), "
                                f"{self.start + self.pos})")


def composed(kind, items, start=0):
    return ComposedIterator(items, kind, start)
