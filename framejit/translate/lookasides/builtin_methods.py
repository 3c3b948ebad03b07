"""Builtin container methods called on real objects: `dict.get(obj, key)`, `super().get(k)`, Mapping.get.

Why this exists: a dict subclass written in Python (transformers' registries) often forwards to the
builtin through `super().get(key)` or `dict.__getitem__(self, key)`. The object comes from outside the
frame (a global), so the lookup reads real state: the result is wrapped with a Source that repeats the
same builtin lookup (bypassing Python overrides, like the call itself), and whether the key was present
is guarded, so a registry that changes between calls is noticed.
"""

from ...errors import GraphBreak
from .builtins_table import LOOKASIDES, as_python
from ..source import DictKeySource, Source
from .identity_keys import LITERAL_KEY_TYPES, dict_key_source, is_identity_key
from ..values.base import Const, ObjectValue


def _real_dict(args, what):
    if not args or not isinstance(args[0], ObjectValue) or not isinstance(args[0].obj, dict):
        raise GraphBreak("call", f"dict.{what} on {args[0] if args else 'nothing'!r}")
    if args[0].source is None:
        raise GraphBreak("call", f"dict.{what} on a dict framejit cannot reach to guard")
    return args[0]


def _key(v):
    key = as_python(v)
    if type(key) not in LITERAL_KEY_TYPES and not is_identity_key(key):
        raise GraphBreak("call", f"dict lookup with a key of type {type(key).__name__}")
    return key


def _present(tx, d, key):
    found = dict.__contains__(d.obj, key)
    tx.ctx.guards.add("CONST_MATCH", dict_key_source(d.source, key, lookup=False), found)
    return found


def _value(tx, d, key):
    return tx.ctx.wrap(dict.__getitem__(d.obj, key), dict_key_source(d.source, key))


def _dict_get(tx, args, kwargs):
    d = _real_dict(args, "get")
    key = _key(args[1])
    default = args[2] if len(args) > 2 else Const(None)
    return _value(tx, d, key) if _present(tx, d, key) else default


def _dict_getitem(tx, args, kwargs):
    d = _real_dict(args, "__getitem__")
    key = _key(args[1])
    if not _present(tx, d, key):
        raise GraphBreak("key error", f"KeyError: {key!r}")
    return _value(tx, d, key)


def _dict_contains(tx, args, kwargs):
    d = _real_dict(args, "__contains__")
    return Const(_present(tx, d, _key(args[1])))


LOOKASIDES[dict.get] = _dict_get
LOOKASIDES[dict.__getitem__] = _dict_getitem
LOOKASIDES[dict.__contains__] = _dict_contains


# ---- collections.abc.Mapping.get / __contains__ on real mappings written in Python ------------------

def _try_getitem(tx, mapping, key):
    """mapping[key] through its class's Python __getitem__, or None if that raises KeyError (the
    guards it added while deciding stay: they are what makes the KeyError certain)."""
    import types
    getitem = getattr(type(mapping.obj), "__getitem__", None)
    if not isinstance(getitem, types.FunctionType):
        raise GraphBreak("call", f"Mapping.get on a {type(mapping.obj).__name__} (no Python __getitem__)")
    graph_mark, effects_mark = tx.ctx.graph.mark(), tx.ctx.side_effects.mark()
    try:
        return tx.inline(getitem, None, [mapping, key], {})
    except GraphBreak as gb:
        if gb.kind != "key error":
            raise
        tx.ctx.graph.rollback(graph_mark)
        tx.ctx.side_effects.rollback(effects_mark)
        return None


def _mapping_get(tx, args, kwargs):
    if len(args) < 2 or not isinstance(args[0], ObjectValue):
        raise GraphBreak("call", "Mapping.get on a value framejit does not model")
    default = args[2] if len(args) > 2 else kwargs.get("default", Const(None))
    found = _try_getitem(tx, args[0], args[1])
    return default if found is None else found


def _mapping_contains(tx, args, kwargs):
    if len(args) != 2 or not isinstance(args[0], ObjectValue):
        raise GraphBreak("call", "Mapping.__contains__ on a value framejit does not model")
    return Const(_try_getitem(tx, args[0], args[1]) is not None)


def _install_mapping_lookasides():
    import collections.abc
    LOOKASIDES[collections.abc.Mapping.get] = _mapping_get
    LOOKASIDES[collections.abc.Mapping.__contains__] = _mapping_contains


_install_mapping_lookasides()
