"""Did running a callable symbolically change the frame's own values? (for bodies that run later, elsewhere)

Why this exists: a callable traced into a subgraph (torch.cond branches, checkpointed bodies) or run
only to check it (an autograd.Function's forward) must not change anything the frame holds: its real
counterpart runs at run time inside torch (cond runs one branch, checkpoint runs its body again in
backward, apply runs forward), so a mutation made while tracing would happen at the wrong time, the
wrong number of times, or hand the frame a tensor of another graph. Mutations of outside objects are
side effects (side_effects.py, checked by the callers); the frame's own containers, objects and cells are
not recorded anywhere, so their contents are snapshotted before and compared after (by identity).
"""
from ..values.base import DictValue, IteratorValue, SeqValue, SetValue, Value
from ..values.dicts.identity_hashed_keys import IdentityKey
from ..values.functions.cells import CellValue
from ..values.functions.function_values import FunctionValue
from ..values.objects.new_objects import NewObject


def _contents(v):
    if isinstance(v, SeqValue):
        return list(v.items)
    if isinstance(v, DictValue):
        return [(k.value if type(k) is IdentityKey else k, x) for k, x in v.items.items()]
    if isinstance(v, SetValue):
        return list(v.items)
    if isinstance(v, NewObject):
        return list(v.attrs.items())
    if isinstance(v, CellValue):
        return [v.contents]
    if isinstance(v, IteratorValue):
        return [v.pos]
    return None


def _children(v):
    if isinstance(v, FunctionValue):
        return [*v.closure, *v.defaults, *v.kwdefaults.values(), *v.attrs.values()]
    contents = _contents(v)
    if contents is None:
        return []
    out = []
    for item in contents:
        out.extend(item if isinstance(item, tuple) else (item,))
    return out


def snapshot(tx, extra=()):
    """{id: (value, contents)} of every mutable Value reachable from the frames (stack, locals, cells)."""
    roots = list(extra)
    frame = tx
    while frame is not None:
        roots += list(frame.stack) + list(frame.locals.values()) + list(frame.cells.values())
        roots += list(getattr(frame, "closure", None) or ())
        frame = frame.parent
    seen = {}
    pending = [r for r in roots if isinstance(r, Value)]
    while pending:
        v = pending.pop()
        if id(v) in seen:
            continue
        contents = _contents(v)
        seen[id(v)] = (v, contents)
        pending.extend(c for c in _children(v) if isinstance(c, Value) and id(c) not in seen)
    return seen


def changed(before):
    """The first Value whose contents differ from the snapshot, or None."""
    for v, contents in before.values():
        now = _contents(v)
        if now is None and contents is None:
            continue
        if now is None or contents is None or len(now) != len(contents) or \
                not all(_same(a, b) for a, b in zip(now, contents)):
            return v
    return None


def _same(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):           # (key, value) of a dict or an object
        return a[0] == b[0] and a[1] is b[1]
    return a is b
