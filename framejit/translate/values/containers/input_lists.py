"""A list the frame receives and only appends to: its items are neither read nor guarded.

Why this exists: `outputs.append(y)` into a list passed in (or a global log) is how users collect
results across calls. Guarding such a list by its length and items, as every other input sequence is,
fails on the next call -- the list just grew -- so the function converts again on every call until the
recompile limit and then runs without graphs (torch.compile does the same). An append does not depend on
what the list holds, so nothing about the contents needs a guard until the frame reads them.

An InputList is a SeqValue whose items are made (and guarded: length, then each item through its Source)
the first time anything reads `.items` -- len, iteration, indexing, `in`, a copy, any list method other
than append/extend. Until then the frame's appends go to `appended` and are replayed after the graph as
one `extend` of the real list (side-effect kind "list_extend"); once read, the list is an ordinary input
sequence (real items + appended), and a recorded extend becomes the usual whole write-back ("list").
Reads happen during translation only: codegen and break handling see the appended values alone
(`visible_items`), so they never make guards after the guards are built.
"""
from ..base import SeqValue

_ITEMS = SeqValue.items            # the base class's slot, under the property below


class InputList(SeqValue):
    __slots__ = ("real", "ctx", "appended")

    def __init__(self, ctx, obj, source):
        super().__init__(list, (), source)
        self.ctx = ctx
        self.real = obj                # the list as the call found it, until its items are read
        self.appended = []

    @property
    def unread(self):
        return self.real is not None

    @property
    def effect_kind(self):
        return "list_extend" if self.unread else "list"

    @property
    def items(self):
        if self.real is not None:
            self._read_items()
        return _ITEMS.__get__(self)

    @items.setter
    def items(self, items):
        _ITEMS.__set__(self, items)

    def _read_items(self):
        from ...source import ItemSource
        obj, ctx, source = self.real, self.ctx, self.source
        self.real = None
        ctx.guards.add("LEN_MATCH", source, len(obj))
        _ITEMS.__set__(self, [ctx.wrap(x, ItemSource(source, i)) for i, x in enumerate(obj)] + self.appended)
        for effect in ctx.side_effects.effects:
            if effect.value is self and effect.kind == "list_extend":
                effect.kind = "list"   # the whole list is written back now: its real items are known

    def rebuild_parts(self):
        return visible_items(self)

    def __repr__(self):
        return f"InputList(unread, +{len(self.appended)})" if self.unread else super().__repr__()


def append_items(tx, lst, values):
    """lst.append / lst.extend of `values` (Values): to `appended` while the list is unread."""
    if isinstance(lst, InputList) and lst.unread:
        lst.appended.extend(values)
    else:
        lst.items.extend(values)
    tx.ctx.side_effects.mutate_container(lst)


def visible_items(v):
    """The items of sequence value v that codegen must rebuild: only the appended ones of an unread list
    (the rest are the real list's, never read)."""
    if isinstance(v, InputList) and v.unread:
        return v.appended
    return v.items
