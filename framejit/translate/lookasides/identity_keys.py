"""Lookups in real dicts keyed by identity-hashed objects (classes, typing forms), and a real dict's
bound builtin methods (`REGISTRY.get(key)`).

Why this exists: libraries dispatch on tables keyed by types and typing forms
(`_BASIC_TYPE_VALIDATORS.get(get_origin(tp))` in huggingface_hub's strict dataclasses, which every
transformers config assignment runs; singledispatch-like registries keyed by classes). Such a dict
holds non-literal keys, so it is a real object (ObjectValue), and its `get` is a bound builtin method
made fresh on each access. The lookup is answered from the real dict like `dict.get(d, key)`
(lookasides/builtin_methods.py), and guarded the same way; a key that is neither a literal nor an
object whose class hashes and compares by identity is not looked up (a graph break, as before).
The guard names the key object through a fixed-object name (source.fixed_source), since its repr is
not an expression.
"""
from __future__ import annotations

import types
from dataclasses import dataclass

from ..source import DictKeySource, Source, fixed_source

LITERAL_KEY_TYPES = (str, int, bool, type(None), float)
BOUND_DICT_METHODS = ("get", "__getitem__", "__contains__")


def is_identity_key(key) -> bool:
    """True when `key` hashes and compares by identity: looking it up in a dict finds exactly the
    entry made with this very object, so the object itself can stand for the key in a guard."""
    cls = type(key)
    if isinstance(key, type):
        return cls.__hash__ is type.__hash__ and cls.__eq__ is type.__eq__
    return cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__


@dataclass(frozen=True)
class IdentityKeySource(Source):
    """`dict.__getitem__(base, <key object>)` (lookup) or `dict.__contains__(base, <key object>)`."""
    base: Source
    key: Source            # a FixedObjectSource naming the key object
    label: str
    lookup: bool = True

    def expr(self):
        method = "__getitem__" if self.lookup else "__contains__"
        return f"__fj_b['dict'].{method}({self.base.expr()}, {self.key.expr()})"

    def name(self):
        return f"{self.base.name()}[{self.label}]" if self.lookup else f"{self.label} in {self.base.name()}"

    def root(self):
        return self.base.root()


def dict_key_source(base: Source, key, lookup: bool = True) -> Source:
    """The Source of `base[key]` (or of `key in base`) for a literal or an identity-hashed key."""
    if type(key) in LITERAL_KEY_TYPES:
        return DictKeySource(base, key, lookup=lookup)
    label = getattr(key, "__qualname__", None) or repr(key)
    return IdentityKeySource(base, fixed_source(key, label), label, lookup)


def bound_dict_method(obj):
    """For `d.get` / `d.__getitem__` / `d.__contains__` bound to a real dict (exactly dict: a subclass
    may override them), the unbound builtin the lookaside table knows; else None."""
    if isinstance(obj, types.BuiltinMethodType) and type(obj.__self__) is dict and obj.__name__ in BOUND_DICT_METHODS:
        return getattr(dict, obj.__name__)
    return None
