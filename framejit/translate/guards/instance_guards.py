"""Shared entries: one capture serves every instance of a module class with the same structure.

Why this exists: the guards of a conversion name every nn.Module it reached by identity (ID_MATCH), so
a fresh instance of the same class, a deep copy, or the next block of a model compiled on its own
missed and converted again. Yet a module's parameters and buffers are graph inputs already, read from
the instance on every call, and everything else the graph depends on (attribute constants such as
`eps`, the training flag, hook tables, the keys of `_modules`/`_parameters`, parameter metadata) is
guarded through its own Source. Identity only adds "and it is that object".

So a conversion whose frame receives modules (an argument, a closure cell, an item of `*args`) gives
two entries over the same graph:

  the identity entry  as before: the modules by id (held weakly, the entry goes when one dies), module
                      state behind the module watch's counter, library state behind version words.
                      The repeated call of one model runs this one, inlined in the dispatcher.
  the shared entry    every module reached from such a root guarded by type instead (`shared_guards`),
                      plus what identity implied between them: a module reached twice is the same object
                      (`b is a`), modules of one type reached once each are distinct objects (a store
                      through one must not be seen through the other). Module state reached from a root
                      through module attributes is still checked only when the module watch's counter
                      moved, or when a root is another object than the one the check last passed for
                      (module_guards.ModulePlan.render: `RootPins` remembers the roots by id and weakly,
                      and watches the new root's modules and parameters).

Version words (guards/dict_guards.py) read fixed addresses, so nothing under a root is versioned in the
shared entry: its guards there stay plain, or covered by the watch.
"""
import weakref

import torch

from .guard_set import Guard
from .kinds import CONST_MATCH, ID_MATCH, TYPE_MATCH
from .identity import FactSource
from .module_watch import watch
from ..source import ClosureSource, ItemSource, LocalSource


def _from_frame(source, frame_params):
    """Is `source` a path from the frame's arguments or closure cells (objects a caller can swap)?"""
    root = source.root()
    return isinstance(root, ClosureSource) or isinstance(root, LocalSource) and root.local in frame_params


def is_root(source):
    """Can `source` be a root of the shared entry: an argument, a closure cell, an item of one (`*args`)?
    Its id is compared on every call, so its expression must be cheap."""
    if isinstance(source, ItemSource):
        source = source.base
    return isinstance(source, (LocalSource, ClosureSource))


def shared_guards(guards, frame_params):
    """(guards of the shared entry, {root Source: module}, {Source: module} of every module it matches
    by type), or None when no module the frame receives is matched by identity."""
    out, modules, fixed = [], {}, {}
    for g in guards:
        if g.kind is ID_MATCH and isinstance(g.expected, torch.nn.Module) and g.source is not None:
            if _from_frame(g.source, frame_params):
                modules[g.source] = g.expected
                out.append(Guard(TYPE_MATCH, g.source, type(g.expected), g.origin))
                continue
            fixed[g.source] = g.expected          # a global model, still matched by id
        out.append(g)
    if not modules:
        return None
    roots = {s: m for s, m in modules.items() if is_root(s)}
    return out + identity_facts(modules, fixed), roots, modules


def identity_facts(modules, fixed=None):
    """The facts identity guards implied between modules: each object reached twice is one object, and
    the objects of one type are distinct (CONST_MATCH guards on FactSources). `fixed`: modules still
    matched by id, which a module matched by type may or may not be (`m is MODEL` in the frame)."""
    first, by_type, facts = {}, {}, []
    for source, obj in {**(fixed or {}), **modules}.items():
        seen = first.get(id(obj))
        if seen is not None:
            facts.append(Guard(CONST_MATCH, FactSource("({0} is {1})", (source, seen)), True))
            continue
        first[id(obj)] = source
        by_type.setdefault(type(obj), []).append(source)
    for sources in by_type.values():
        if len(sources) > 1:
            ids = ", ".join(f"id({{{i}}})" for i in range(len(sources)))
            template = f"(len({{{{{ids}}}}}) == {len(sources)})"
            facts.append(Guard(CONST_MATCH, FactSource(template, tuple(sources)), True))
    return facts


class RootPins:
    """The roots the shared entry's module checks passed for, by id, and held weakly. `state` is the
    entry's [epoch, member cache, id of each current root...]; `known` remembers, per combination of
    live roots, the epoch its checks passed at and its member cache, so the blocks of a model compiled
    one by one, called in turn, each find their own checks still valid (`recall`) instead of running
    them again. When a root dies its combination is forgotten, and the state reset if it was current:
    no id can be mistaken for a new object's, and no member cache keeps a dead root's parameters."""

    __slots__ = ("state", "known", "__weakref__")
    LIMIT = 64                       # combinations remembered (the oldest forgotten first)

    def __init__(self, state):
        self.state = state
        self.known = {}              # ids of the roots -> (epoch, member cache, weak refs to the roots)

    def recall(self, epoch, *roots):
        """Make the checks these roots passed at `epoch` current, if they did: True, else False."""
        key = tuple(map(id, roots))
        found = self.known.pop(key, None)
        if found is None:
            return False
        self.known[key] = found                         # the newest now (never forgotten while current)
        if found[0] != epoch:
            return False
        state = self.state
        state[1] = found[1]
        state[2:] = key
        state[0] = epoch
        return True

    def pin(self, epoch, *roots):
        """The checks passed for these roots at `epoch`: watch them and their modules and parameters
        (the member cache, just refreshed), and remember them. Always True (a term of the guard
        expression)."""
        for obj in roots:
            watch(obj)
        members = self.state[1]
        for obj in members:
            if isinstance(obj, (torch.nn.Module, torch.nn.Parameter)):
                watch(obj)
        key = tuple(map(id, roots))
        found = self.known.pop(key, None)
        if found is None:
            me = weakref.ref(self)
            refs = tuple(weakref.ref(obj, lambda _, me=me, key=key: _forget(me, key)) for obj in roots)
            while len(self.known) >= self.LIMIT:
                del self.known[next(iter(self.known))]
        else:
            refs = found[2]
        self.known[key] = (epoch, members, refs)
        self.state[2:] = key
        return True


def _forget(me, key):
    """A root of the combination `key` died."""
    pins = me()
    if pins is None:
        return
    pins.known.pop(key, None)
    state = pins.state
    if tuple(state[2:]) == key:
        state[0] = -1
        state[1] = None
        state[2:] = [0] * len(key)
