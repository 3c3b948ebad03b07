"""A dict argument keyed by tensors (an optimizer's `{param: state}`, `{p: p.grad}`): a DictValue whose keys
are the tensors' own Values (values/identity_keys.py), so the frame can look it up, iterate it in its
order, take its length and write to it, all in the graph.

Why this exists: a dict's keys are guarded as constants (`list(d.keys()) == [...]`), which a tensor key
cannot be (Tensor.__eq__ compares values). Here each key is read by its position, `[*d][i]`: a tensor
key is an input tensor there (TENSOR_MATCH, and the identity tracker's `[*d][0] is w` when the frame
also receives it by another name), a constant key is matched by value; its value is read by the same
position, `[*d.values()][i]`. The dict's length is guarded first, so every position exists.
"""
from dataclasses import dataclass

import torch

from ..source import ItemSource, Source
from ..values.base import DictValue
from ..values.dicts.identity_hashed_keys import IdentityKey

_CONSTANT_KEYS = (str, int, bool, type(None), float)


@dataclass(frozen=True)
class NthKeySource(Source):
    base: Source
    index: int

    def expr(self):
        return f"[*{self.base.expr()}][{self.index}]"

    def name(self):
        return f"list({self.base.name()})[{self.index}]"

    def root(self):
        return self.base.root()


@dataclass(frozen=True)
class NthValueSource(Source):
    base: Source
    index: int

    def expr(self):
        return f"[*{self.base.expr()}.values()][{self.index}]"

    def name(self):
        return f"list({self.base.name()}.values())[{self.index}]"

    def root(self):
        return self.base.root()


def _tensor_key(key):
    return type(key) in (torch.Tensor, torch.nn.Parameter)


def wrappable(obj):
    """A plain dict with at least one tensor key, every key a plain tensor or a constant."""
    return type(obj) is dict and any(_tensor_key(k) for k in obj) and \
        all(_tensor_key(k) or type(k) in _CONSTANT_KEYS for k in obj)


def wrap_input(ctx, obj, source, guard):
    g = ctx.guards
    if guard:
        g.add("TYPE_MATCH", source, dict)
        g.add("LEN_MATCH", source, len(obj))
    items = {}
    for i, (key, value) in enumerate(obj.items()):
        if _tensor_key(key):
            items[IdentityKey(ctx.wrap(key, NthKeySource(source, i), guard))] = \
                ctx.wrap(value, NthValueSource(source, i), guard)
        else:
            if guard:
                g.add("CONST_MATCH", NthKeySource(source, i), key)
            items[key] = ctx.wrap(value, ItemSource(source, key), guard)
    return DictValue(items, source)
