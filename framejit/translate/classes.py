"""Calling a class: constructing a value.

  namedtuples, torch.return_types   a SeqValue of that kind (and their methods: _replace, _asdict,
                                    _fields, _make, user methods of NamedTuple subclasses)
  user classes written in Python    a NewObject (objects.py): __new__ when it is object.__new__ or a
                                    Python __new__ (inlined), then a Python __init__ inlined on it;
                                    dataclasses are the same thing (their __init__ is generated Python)
  anything else                     a graph break naming the class (builtin bases, metaclasses with
                                    their own __call__, abstract classes)
  torch.nn modules                  a FreshModuleValue (module_values.fresh_module) when parameterless
                                    and made from constants (losses, activations); other nn.Modules break
"""
import types

import torch

from ..errors import GraphBreak
from .builtins_table import as_python, lookaside, unpack_iterable
from .context import is_namedtuple_class, is_structseq_class
from .module_values import fresh_module
from .objects import NewObject, class_attribute, inline, lookup, lookup_type
from .values import Const, DictValue, ObjectValue, SeqValue, Value

HEAPTYPE = 1 << 9
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
    why = why_not_constructible(cls)
    if why is not None:
        raise GraphBreak("construct", why)
    return construct_object(tx, cls_value, cls, args, kwargs)


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


def why_not_constructible(cls):
    """None if instances of `cls` can be made symbolically, else the reason in plain words."""
    import torch
    if not isinstance(cls, type):
        return f"{cls!r} is not a class"
    name = cls.__qualname__
    if type(cls).__call__ is not type.__call__:
        return f"constructing {name}: its metaclass {type(cls).__name__} has its own __call__"
    mro = cls.__mro__
    if mro[-1] is not object or not all(k.__flags__ & HEAPTYPE for k in mro[:-1]):
        return f"constructing {name} objects (a subclass of a builtin type) is not supported in a graph"
    if issubclass(cls, torch.nn.Module):
        return f"constructing the nn.Module {name} inside a compiled function is not supported"
    if getattr(cls, "__abstractmethods__", None):
        return f"TypeError: Can't instantiate abstract class {name}"
    return None


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

def namedtuple_attr(tx, seq, name):
    """Attributes of a namedtuple value other than its fields (None: not handled here)."""
    kind = seq.kind
    if name == "_fields":
        return Const(kind._fields)
    if name == "_field_defaults":
        return DictValue({k: Const(v) for k, v in kind._field_defaults.items()})
    if name in ("_replace", "_asdict", "_make"):
        return NamedTupleMethod(seq, name)
    owner = next((k for k in kind.__mro__ if name in k.__dict__), None)
    if owner is None or not owner.__flags__ & HEAPTYPE:
        return None                          # tuple's own methods (count, index): the container path
    return class_attribute(tx, owner.__dict__[name], seq, False, ObjectValue(kind), name)


class NamedTupleMethod(Value):
    """p._replace / p._asdict / p._make, computed directly on the items."""
    __slots__ = ("seq", "name")

    def __init__(self, seq, name):
        super().__init__(None)
        self.seq = seq
        self.name = name

    def call(self, tx, args, kwargs):
        seq, kind = self.seq, self.seq.kind
        if self.name == "_asdict":
            return DictValue(dict(zip(kind._fields, seq.items)))
        if self.name == "_make":
            items = unpack_iterable(tx, args[0])
            if len(items) != len(kind._fields):
                raise GraphBreak("bad call", f"TypeError: Expected {len(kind._fields)} arguments, got {len(items)}")
            return SeqValue(kind, items)
        unknown = [k for k in kwargs if k not in kind._fields]
        if args or unknown:
            raise GraphBreak("bad call", f"ValueError: Got unexpected field names: {unknown!r}")
        return SeqValue(kind, [kwargs.get(f, v) for f, v in zip(kind._fields, seq.items)])

    def children(self):
        return [self.seq]

    def rebuild(self, rb):
        return f"getattr({rb.expr(self.seq)}, {self.name!r})"


@lookaside(tuple.__new__)
def _tuple_new(tx, args, kwargs):
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

