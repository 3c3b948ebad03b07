"""Calling a class: constructing a value.

  namedtuples, torch.return_types   a SeqValue of that kind (their _replace, _asdict, _fields, _make and
                                    user methods: namedtuples.py)
  user classes written in Python    a NewObject (objects.py): __new__ when it is object.__new__ or a
                                    Python __new__ (inlined), then a Python __init__ inlined on it;
                                    dataclasses are the same thing (their __init__ is generated Python)
  a class whose metaclass defines    that __call__ inlined with the class as its first argument; its
    __call__ in Python              super().__call__(...) is type.__call__: __new__ and __init__ as above
  anything else                     a graph break naming the class (builtin bases, a metaclass __call__
                                    not written in Python, abstract classes)
  torch.nn modules                  a FreshModuleValue (modules.fresh_module) when parameterless
                                    and made from constants (losses, activations); other nn.Modules break
"""
import types

import torch

from ....errors import GraphBreak
from ..dicts.dict_kinds import construct as construct_dict_kind, is_dict_kind
from ..modules.module_values import fresh_module
from .new_objects import NewObject, inline, lookup, why_not_constructible
from ..base import Const, ObjectValue, SeqValue
from ..protocol import as_python, is_namedtuple_class, is_structseq_class, unpack_iterable

_Module = torch.nn.Module


def construct(tx, cls_value, cls, args, kwargs):
    if is_namedtuple_class(cls):
        return SeqValue(cls, _namedtuple_items(cls, args, kwargs))
    if is_structseq_class(cls):
        return SeqValue(cls, unpack_iterable(tx, args[0]))
    if isinstance(cls, type) and issubclass(cls, _Module):
        fresh = fresh_module(tx, cls, args, kwargs)
        if fresh is not None:
            return fresh
    if is_dict_kind(cls):                     # OrderedDict, defaultdict, Counter, a dict subclass
        return construct_dict_kind(tx, cls, args, kwargs)
    if cls is types.SimpleNamespace:          # its C __init__ only stores the keyword arguments
        return _simple_namespace(tx, cls_value, args, kwargs)
    meta_call = metaclass_call(cls)
    if meta_call is not None:                 # the metaclass's own __call__, inlined on the class
        return inline(tx, meta_call, [cls_value, *args], kwargs)
    why = why_not_constructible(cls)
    if why is not None:
        raise GraphBreak("construct", why)
    return construct_object(tx, cls_value, cls, args, kwargs)


def metaclass_call(cls):
    """The Python __call__ a user metaclass defines (a singleton registry, a class that tags or caches
    its instances), or None. Its `super().__call__(...)` reaches type.__call__: type_call below."""
    if not isinstance(cls, type) or type(cls) is type:
        return None
    call = type(cls).__call__
    return call if isinstance(call, types.FunctionType) else None


def type_call(tx, args, kwargs):
    """type.__call__(cls, *args, **kwargs): __new__ then __init__, as for a class without a metaclass
    __call__ (what a metaclass's own __call__ reaches through super().__call__)."""
    if not args:
        raise GraphBreak("bad call", "TypeError: descriptor '__call__' of 'type' object needs an argument")
    cls_value, *rest = args
    cls = as_python(cls_value)
    if not isinstance(cls, type):
        raise GraphBreak("bad call", "type.__call__ of something other than a class")
    why = why_not_constructible(cls, through_type_call=True)
    if why is not None:
        raise GraphBreak("construct", why)
    return construct_object(tx, cls_value, cls, rest, kwargs)


def _simple_namespace(tx, cls_value, args, kwargs):
    """types.SimpleNamespace(**kwargs): a NewObject whose __dict__ holds the keywords in their order
    (Python 3.11 takes no positional argument)."""
    if args:
        raise GraphBreak("bad call", "TypeError: no positional arguments expected")
    obj = NewObject(types.SimpleNamespace, cls_value)
    for name, value in kwargs.items():
        obj.attrs[name] = value
    return obj


def _namedtuple_items(cls, args, kwargs):
    fields = cls._fields
    if len(args) > len(fields):
        raise GraphBreak("bad call", f"TypeError: {cls.__name__}() takes {len(fields)} arguments")
    values = list(args)
    defaults = getattr(cls, "_field_defaults", {})
    for f in fields[len(values):]:
        if f in kwargs:
            values.append(kwargs[f])
        elif f in defaults:
            values.append(Const(defaults[f]))
        else:
            raise GraphBreak("bad call", f"TypeError: {cls.__name__}() missing argument {f!r}")
    unknown = set(kwargs) - set(fields[len(args):])
    if unknown:
        raise GraphBreak("bad call", f"TypeError: {cls.__name__}() got an unexpected keyword argument")
    return values


def construct_object(tx, cls_value, cls, args, kwargs):
    """cls(*args, **kwargs) for a Python class: __new__ then __init__, as type.__call__ does."""
    new = lookup(tx, cls, "__new__")
    if new is object.__new__:
        obj = NewObject(cls, cls_value)
    elif isinstance(new, staticmethod) and isinstance(new.__func__, types.FunctionType):
        obj = inline(tx, new.__func__, [cls_value, *args], kwargs)
        if not (isinstance(obj, NewObject) and issubclass(obj.cls, cls)):
            return obj                       # __new__ returned something else: __init__ is not called
    else:
        raise GraphBreak("construct", f"{cls.__qualname__}.__new__ is not Python code")
    init = lookup(tx, cls, "__init__")
    if init is object.__init__:
        if (args or kwargs) and new is object.__new__:
            raise GraphBreak("bad call", f"TypeError: {cls.__name__}() takes no arguments")
        return obj
    if not isinstance(init, types.FunctionType):
        raise GraphBreak("construct", f"{cls.__qualname__}.__init__ is not Python code")
    out = inline(tx, init, [obj, *args], kwargs)
    if not (isinstance(out, Const) and out.value is None):
        raise GraphBreak("bad call", "TypeError: __init__() should return None")
    return obj


# ---- namedtuples ----------------------------------------------------------------------------------

def tuple_new_lookaside(tx, args, kwargs):
    """tuple.__new__(cls, iterable): how namedtuple's _make builds its result."""
    cls = as_python(args[0])
    if not (isinstance(cls, type) and issubclass(cls, tuple)):
        raise GraphBreak("bad call", "TypeError: tuple.__new__(X): X is not a subtype of tuple")
    items = unpack_iterable(tx, args[1]) if len(args) > 1 else []
    if cls is tuple:
        return SeqValue(tuple, items)
    if not is_namedtuple_class(cls):
        raise GraphBreak("construct", f"tuple.__new__ of {cls.__qualname__}")
    return SeqValue(cls, items)



# ---- a metaclass's own __instancecheck__ ------------------------------------------------------------

# ABCMeta, Protocol, torch's _ParameterMeta...: answered from the value's type (builtins_table.py)
_LIBRARY_CHECKS = ("abc", "typing", "typing_extensions", "torch")


def custom_instancecheck(cls):
    """The Python __instancecheck__ a user metaclass of `cls` defines, or None (type's own, ABCMeta's,
    typing's, torch's: answered from the value's type)."""
    meta = type(cls)
    if meta is type or not isinstance(cls, type):
        return None
    check = getattr(meta, "__instancecheck__", None)
    if not isinstance(check, types.FunctionType) or (check.__module__ or "").split(".")[0] in _LIBRARY_CHECKS:
        return None
    return check


def isinstance_with_metaclasses(tx, value, value_type, classes):
    """isinstance(value, classes) when a class in `classes` has a metaclass __instancecheck__ written in
    Python, None when none has: as CPython does it, an exact type match is True without the check,
    otherwise the check is inlined on (cls, value) and its truth taken; a tuple is tried in order."""
    members = classes if isinstance(classes, tuple) else (classes,)
    if not any(custom_instancecheck(c) is not None for c in members):
        return None
    from ..protocol import truth
    for c in members:
        check = custom_instancecheck(c)
        if value_type is c:
            return True
        if check is not None:
            if truth(tx, inline(tx, check, [ObjectValue(c), value])):
                return True
        elif issubclass(value_type, c):
            return True
    return False
