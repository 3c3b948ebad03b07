"""copy.copy / copy.deepcopy of plain Python values: a new object made in the frame.

Why this exists: library code copies small configuration objects on the hot path (transformers'
`config.get_text_config(decoder=True)` deep-copies the model config of an encoder-decoder before every
cache is built). The `copy` module is machinery framejit does not inline (reduce protocols, memo dicts),
so this was a graph break. Its result for plain values is simple to state: a container or an instance of a
Python class whose `__dict__` is copied (deeply: every container and plain object inside copied too, the
memo keeping shared references shared; constants are themselves). That is what is built here,
symbolically: the source object's attributes are read through its own Source (so they are guarded, and
a config changed between calls is noticed), and the copy is a NewObject, a new object on every call:
its writes stay in the frame, and it is rebuilt as a new object where it escapes.

Not modelled (a graph break, the call runs for real): classes with their own `__copy__`,
`__deepcopy__`, `__reduce__`/`__reduce_ex__`, `__getstate__`/`__setstate__` or `__slots__`, tensors,
modules, and anything not made of those pieces.
"""
import copy
import types

from ...errors import GraphBreak
from ..source import fixed_source
from ..values.base import Const, DictValue, ObjectValue, SeqValue, SetValue
from ..values.dicts.identity_hashed_keys import has_identity_keys
from .builtins_table import LOOKASIDES

_PROTOCOL = ("__copy__", "__deepcopy__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__")


def _copyable_class(cls):
    """A Python class whose instances copy.copy/deepcopy copy through their __dict__ alone."""
    for name in _PROTOCOL:
        if getattr(cls, name, None) is not getattr(object, name, None):
            return False
    return all("__slots__" not in k.__dict__ for k in cls.__mro__[:-1])


def _instance_dict(tx, v):
    """The attributes of user object `v`, name -> Value, as the frame sees them now (the real object
    and the frame's own writes; read through its Source, so guarded: values/objects/attribute_model.py)."""
    from ..values.objects.instance_dict_views import instance_dict_value
    from ..values.objects.new_objects import NewObject, is_plain_instance
    if isinstance(v, NewObject):
        return dict(v.attrs)
    if v.source is None or not is_plain_instance(v.obj) or type(v.obj) is types.SimpleNamespace:
        raise GraphBreak("copy", f"copying {v!r}")
    return _view_items(instance_dict_value(tx, v))


def _view_items(view):
    return {k: view.get(k) for k in view.keys()}


def _user_class(v):
    from ..values.objects.new_objects import NewObject
    if isinstance(v, NewObject):
        return v.cls
    if isinstance(v, ObjectValue):
        return type(v.obj)
    return None


def copy_value(tx, v, deep, memo):
    """A new Value for `copy.deepcopy(v)` (deep) or `copy.copy(v)`; GraphBreak where not modelled."""
    from ..values.objects.new_objects import NewObject
    from ..values.objects.instance_dict_views import InstanceDictValue
    if isinstance(v, Const):
        value = v.value
        if isinstance(value, (list, dict, set, bytearray)):      # a mutable constant: a new one
            return Const(copy.deepcopy(value) if deep else copy.copy(value))
        return v
    known = memo.get(id(v))
    if known is not None:
        return known
    if isinstance(v, SeqValue) and v.kind in (list, tuple):
        if v.kind is tuple and not deep:
            return v
        out = SeqValue(v.kind, [])
        memo[id(v)] = out
        out.items = [copy_value(tx, i, deep, memo) if deep else i for i in v.items]
        if v.kind is tuple and all(a is b for a, b in zip(out.items, v.items)):
            memo[id(v)] = v
            return v
        return out
    if isinstance(v, DictValue) and v.kind is dict and deep and has_identity_keys(v.items):
        raise GraphBreak("deepcopy", "copy.deepcopy of a dict keyed by tensors copies its keys")
    if isinstance(v, DictValue) and v.kind is dict:
        out = DictValue({})
        memo[id(v)] = out
        out.items = {k: copy_value(tx, i, deep, memo) if deep else i for k, i in v.items.items()}
        return out
    if isinstance(v, SetValue):
        out = SetValue(list(v.items))
        memo[id(v)] = out
        return out
    if isinstance(v, InstanceDictValue):       # copy.deepcopy(self.__dict__) (a config's to_dict)
        out = DictValue({})
        memo[id(v)] = out
        out.items = {k: copy_value(tx, i, deep, memo) if deep else i for k, i in _view_items(v).items()}
        return out
    cls = _user_class(v)
    if cls is not None and _copyable_class(cls):
        attrs = _instance_dict(tx, v)
        out = NewObject(cls, tx.ctx.wrap(cls, fixed_source(cls, cls.__qualname__)))   # class reads guarded
        memo[id(v)] = out
        out.attrs = {k: copy_value(tx, a, deep, memo) if deep else a for k, a in attrs.items()}
        return out
    raise GraphBreak("copy", f"copy.{'deepcopy' if deep else 'copy'} of {v!r} is not modelled")


def _deepcopy(tx, args, kwargs):
    if len(args) != 1 or kwargs:
        raise GraphBreak("copy", "copy.deepcopy with a memo")
    return copy_value(tx, args[0], True, {})


def _copy(tx, args, kwargs):
    if len(args) != 1 or kwargs:
        raise GraphBreak("copy", "copy.copy with extra arguments")
    return copy_value(tx, args[0], False, {})


LOOKASIDES[copy.deepcopy] = _deepcopy
LOOKASIDES[copy.copy] = _copy
