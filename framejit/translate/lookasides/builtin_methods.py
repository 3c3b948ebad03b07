"""Builtin container methods called on real objects: `dict.get(obj, key)`, `super().get(k)`, Mapping.get.

Why this exists: a dict subclass written in Python (transformers' registries) often forwards to the
builtin through `super().get(key)` or `dict.__getitem__(self, key)`. The object comes from outside the
frame (a global), so the lookup reads real state: the result is wrapped with a Source that repeats the
same builtin lookup (bypassing Python overrides, like the call itself), and whether the key was present
is guarded, so a registry that changes between calls is noticed.
"""
import types

import torch

from ...errors import GraphBreak
from .builtins_table import LOOKASIDES, as_python
from ..source import fixed_source
from ..values.base import Const, DictValue, ObjectValue, TensorValue
from ..values.containers.subscripts import DICT_METHODS
from ..values.dicts.dict_kinds import builtin_getitem
from ..values.dicts.constant_keys import DictObjectKeySource, constant_key_source, is_constant_key


def _real_dict(args, what):
    if not args or not isinstance(args[0], ObjectValue) or not isinstance(args[0].obj, dict):
        raise GraphBreak("call", f"dict.{what} on {args[0] if args else 'nothing'!r}")
    if args[0].source is None:
        raise GraphBreak("call", f"dict.{what} on a dict framejit cannot reach to guard")
    return args[0]


class _FreshTensor:
    """The key of a tensor the frame made: a new object, so no dict from outside the frame holds it
    (a tensor hashes by identity)."""


def _key(tx, v):
    """(the real key, the Source that reaches it when it is no constant: an input tensor's)."""
    if isinstance(v, TensorValue) and v.python_type().__hash__ is torch.Tensor.__hash__:
        if v.node.op != "placeholder":
            return _FreshTensor, None
        for source, real, node in tx.ctx.graph.inputs:
            if node is v.node:
                return real, source
        raise GraphBreak("call", "dict lookup with a tensor key framejit cannot name")
    key = as_python(v)
    if not is_constant_key(key) and not _identity_key(key):
        raise GraphBreak("call", f"dict lookup with a key of type {type(key).__name__}")
    return key, None


# C callables: equal when they are the same C function bound to the same object (`torch.mean`, the
# `Tensor.add` a __torch_function__ receives), which is what a guard holding the key object checks too
_C_CALLABLE_TYPES = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
                     types.MethodWrapperType, types.GetSetDescriptorType)


def _identity_key(key):
    """A key that hashes and compares by identity, named in guards by a bound object (a class, a typing
    special form, a function, a C function): huggingface_hub's validator table is keyed by typing origins,
    a tensor subclass's HANDLED_FUNCTIONS by torch functions."""
    t = type(key)
    return t.__hash__ is object.__hash__ and t.__eq__ is object.__eq__ or t in _C_CALLABLE_TYPES or \
        isinstance(key, type) and type(key).__hash__ is type.__hash__ and type(key).__eq__ is type.__eq__


def _key_source(d, key, key_source, lookup):
    if key_source is not None:              # an input tensor: the guard names it by its own Source
        return DictObjectKeySource(d.source, key_source, lookup)
    if is_constant_key(key):            # str, numbers, enum members, tuples of them (values/dicts/constant_keys.py)
        return constant_key_source(d.source, key, lookup)
    return DictObjectKeySource(d.source, fixed_source(key, getattr(key, "__qualname__", None) or repr(key)), lookup)


def _present(tx, d, key, key_source):
    if key is _FreshTensor:
        return False
    found = dict.__contains__(d.obj, key)
    tx.ctx.guards.add("CONST_MATCH", _key_source(d, key, key_source, False), found)
    return found


def _value(tx, d, key, key_source):
    return tx.ctx.wrap(dict.__getitem__(d.obj, key), _key_source(d, key, key_source, True))


def _dict_get(tx, args, kwargs):
    if args and isinstance(args[0], DictValue):        # a dict subclass modelled as a dict: super().get(k)
        return DICT_METHODS["get"](tx, *args, **kwargs)
    d = _real_dict(args, "get")
    key, key_source = _key(tx, args[1])
    default = args[2] if len(args) > 2 else Const(None)
    return _value(tx, d, key, key_source) if _present(tx, d, key, key_source) else default


def _dict_getitem(tx, args, kwargs):
    if len(args) == 2 and isinstance(args[0], DictValue):
        return builtin_getitem(tx, args[0], args[1])
    d = _real_dict(args, "__getitem__")
    key, key_source = _key(tx, args[1])
    if not _present(tx, d, key, key_source):
        raise GraphBreak("key error", f"KeyError: {args[1]!r}")
    return _value(tx, d, key, key_source)


def _dict_contains(tx, args, kwargs):
    if len(args) == 2 and isinstance(args[0], DictValue):
        return DICT_METHODS["__contains__"](tx, *args)
    d = _real_dict(args, "__contains__")
    return Const(_present(tx, d, *_key(tx, args[1])))


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
