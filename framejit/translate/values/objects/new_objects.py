"""Instances of user classes inside the translated frame: new objects, bound methods and super().

  NewObject     an instance created in the frame (calling a user class, object.__new__). Its instance
                attributes live in `attrs` (name -> Value). If it escapes (returned, stored, live at a
                graph break) codegen rebuilds it as a real object: object.__new__(cls), then every
                attribute set with object.__setattr__, so __slots__, frozen dataclasses and classes with
                their own __setattr__ come back exactly as the eager run left them.
  BoundMethod   a function bound to a receiver value (obj.method, super().method, a classmethod).
  SuperValue    super() / super(cls, obj): class attribute lookup that starts after cls in the MRO.

Attribute lookup follows Python's order: data descriptors of the class (properties, slots), then the
instance attributes, then class attributes (functions bind, staticmethod/classmethod unwrap), then a
Python __getattr__. Property getters and setters and a Python __setattr__ are inlined; stores they make
with object.__setattr__ (or super().__setattr__) are the raw stores.

Objects that come from outside (arguments, globals) stay ObjectValues whose attributes values/objects/attribute_model.py
models (reads, deletes, their __dict__); their stores pass through `store_instance_attr` here, so a
property setter or a Python __setattr__ runs once, in the frame, and the raw store is replayed after the
graph. Every class lookup that decides what the frame does (`lookup`) is guarded: a class can change
between calls.
"""
import dataclasses
import types

import torch

from ....errors import GraphBreak
from .attribute_sources import ABSENT, mro_lookup
from .attribute_model import BUILTIN_METHOD_TYPES, delete_instance_attr, descriptor_value, is_generic
from .bound_methods import BoundMethod
from .lookup_steps import class_lookup
from .instance_dict_views import instance_dict_value
from ...source import AttrSource
from ..base import Const, IteratorValue, ObjectValue, Value
from ..protocol import as_python, python_type_of, truth, unpack_iterable, wrap_unsourced

HEAPTYPE = 1 << 9
IS_ABSTRACT = 1 << 20                      # Py_TPFLAGS_IS_ABSTRACT
MISSING = ABSENT                 # what a class lookup finds when no class has the name
SLOT_TYPES = (types.MemberDescriptorType,)
BINARY_DUNDERS = {"+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__", "//": "__floordiv__",
                  "%": "__mod__", "**": "__pow__", "@": "__matmul__", "&": "__and__", "|": "__or__",
                  "^": "__xor__", "<<": "__lshift__", ">>": "__rshift__"}


def lookup_type(cls, name, after=None):
    """The raw attribute `name` from the __dict__ of the first class in cls's MRO (after `after`, for
    super()) that has it, or MISSING. Not guarded: translation decisions use `lookup`."""
    if after is None:
        return mro_lookup(cls, name)
    mro = cls.__mro__
    mro = mro[mro.index(after) + 1:] if after in mro else ()
    for klass in mro:
        d = klass.__dict__
        if name in d:
            return d[name]
    return MISSING


def lookup(tx, cls, name, after=None):
    """lookup_type, guarded (attribute_model.class_lookup): translation decisions depend on it."""
    return class_lookup(tx, cls, name, after)


def _is_data_descriptor(attr):
    t = type(attr)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def _no_attribute(cls, name):
    return GraphBreak("attribute error", f"AttributeError: '{cls.__name__}' object has no attribute '{name}'")


# ---- which classes and instances are modelled -----------------------------------------------------

def is_plain_instance(obj):
    """An instance of a class written in Python whose state lives in __dict__/__slots__ (no builtin
    base other than object): dataclasses, config objects, user classes, types.SimpleNamespace. nn.Modules are excluded (their
    hooks and registries are read without guards, so they stay matched by identity)."""
    t = type(obj)
    if t is types.SimpleNamespace:
        return True
    if not t.__flags__ & HEAPTYPE or isinstance(obj, (torch.nn.Module, torch.Tensor, BaseException, type)):
        return False
    if dataclasses.is_dataclass(t):        # dataclasses on builtin bases too (HF's ModelOutput is a dict)
        return True
    mro = t.__mro__
    return mro[-1] is object and all(k.__flags__ & HEAPTYPE for k in mro[:-1])


def why_not_constructible(cls, through_type_call=False):
    """None if instances of `cls` can be made symbolically, else the reason in plain words
    (through_type_call: asked by type.__call__ itself, which a metaclass's own __call__ reaches)."""
    if not isinstance(cls, type):
        return f"{cls!r} is not a class"
    name = cls.__qualname__
    if type(cls).__call__ is not type.__call__ and not through_type_call:
        return f"constructing {name}: its metaclass {type(cls).__name__} has its own __call__"
    mro = cls.__mro__
    if mro[-1] is not object or not all(k.__flags__ & HEAPTYPE for k in mro[:-1]):
        return f"constructing {name} objects (a subclass of a builtin type) is not supported in a graph"
    if issubclass(cls, torch.nn.Module):
        return f"constructing the nn.Module {name} inside a compiled function is not supported"
    if cls.__flags__ & IS_ABSTRACT:      # (the flag object.__new__ reads: not a lookup a metaclass could answer)
        return f"TypeError: Can't instantiate abstract class {name}"
    return None


def inline(tx, fn, args, kwargs=None):
    return tx.inline(fn, None, list(args), kwargs or {})


def call(tx, fn_value, args, kwargs=None):
    return tx.call(fn_value, list(args), kwargs or {})


# ---- values --------------------------------------------------------------------------------------

class NewObject(Value):
    """An instance of a user class created in the frame (see the module docstring)."""
    __slots__ = ("cls", "cls_value", "attrs")
    made_in_frame = True                      # (attribute_model.is_new_object)

    def __init__(self, cls, cls_value=None):
        super().__init__(None)
        self.cls = cls
        self.cls_value = cls_value if cls_value is not None else ObjectValue(cls)
        self.attrs = {}

    def python_type(self):
        return self.cls

    def __repr__(self):
        return f"NewObject({self.cls.__qualname__})"

    # attribute protocol used by values/attrs.py / ops/load_store.py / lookasides/builtins_table.py
    def load_attr(self, tx, name, use_getattr=True):
        if name == "__class__":
            return self.cls_value
        if name == "__dict__" and _has_instance_dict(self.cls) and \
                (type(lookup(tx, self.cls, "__dict__")) is types.GetSetDescriptorType or
                 self.cls is types.SimpleNamespace):        # (its __dict__ is a member descriptor)
            return instance_dict_value(tx, self)
        cls = self.cls
        attr = lookup(tx, cls, name)
        if attr is not MISSING and _is_data_descriptor(attr):
            if isinstance(attr, property):
                if attr.fget is None:
                    raise GraphBreak("attribute error", f"AttributeError: property {name!r} has no getter")
                return inline(tx, attr.fget, [self])
            getter = getattr(type(attr), "__get__", None)
            if not isinstance(attr, SLOT_TYPES) and isinstance(getter, types.FunctionType):
                return inline(tx, getter, [descriptor_value(cls, name, attr), self, self.cls_value])
            if not isinstance(attr, SLOT_TYPES):
                raise GraphBreak("attribute", f"descriptor {type(attr).__name__} {cls.__name__}.{name}")
            if name in self.attrs:
                return self.attrs[name]
        elif name in self.attrs:
            return self.attrs[name]
        elif attr is not MISSING:
            return class_attribute(tx, attr, self, False, self.cls_value, name)
        fallback = lookup(tx, cls, "__getattr__") if use_getattr else MISSING
        if isinstance(fallback, types.FunctionType):
            return inline(tx, fallback, [self, Const(name)])
        raise _no_attribute(cls, name)

    def store_attr(self, tx, name, value):
        store_instance_attr(tx, self, self.cls, name, value, self._raw_store)

    def delete_attr(self, tx, name):
        delete_instance_attr(tx, self, name)

    def _raw_store(self, tx, name, value):
        if name not in self.attrs and not _has_instance_dict(self.cls) and \
                not isinstance(lookup(tx, self.cls, name), SLOT_TYPES):
            raise _no_attribute(self.cls, name)
        self.attrs[name] = value

    def has_attr(self, tx, name):
        """hasattr(self, name), or None when only reading it can tell (a property, __getattr__)."""
        if name == "__class__":
            return True
        if name == "__dict__":
            return _has_instance_dict(self.cls)
        attr = lookup(tx, self.cls, name)
        if isinstance(attr, SLOT_TYPES) or attr is MISSING:
            if name in self.attrs:
                return True
            return None if lookup(tx, self.cls, "__getattr__") is not MISSING else False
        if _is_data_descriptor(attr):
            return None
        return True

    def call_method(self, tx, name, args, kwargs):
        return call(tx, self.load_attr(tx, name), args, kwargs)

    def call(self, tx, args, kwargs):
        return call(tx, self._special(tx, "__call__", "call"), [self, *args], kwargs)

    def truth(self, tx):
        for name in ("__bool__", "__len__"):
            fn = lookup(tx, self.cls, name)
            if fn is not MISSING:
                return truth(tx, call(tx, self._special(tx, name, "truth value"), [self]))
        return True

    def length(self, tx):
        out = call(tx, self._special(tx, "__len__", "len()"), [self])
        if not isinstance(out, Const):
            raise GraphBreak("len", f"{self.cls.__name__}.__len__ returned {out!r}")
        return out.value

    def getitem(self, tx, index):
        return call(tx, self._special(tx, "__getitem__", "subscript"), [self, index])

    def iterate(self, tx):
        """iter(obj): the class's Python __iter__, inlined (a generator method gives a generator value,
        run lazily by FOR_ITER: collections.abc.Sequence's own __iter__ is one)."""
        if not isinstance(lookup(tx, self.cls, "__iter__"), types.FunctionType):
            raise GraphBreak("iterate", f"cannot iterate over {self!r}")
        out = call(tx, self._special(tx, "__iter__", "iter()"), [self])
        if isinstance(out, IteratorValue) or out.is_lazy_iterator():
            return out
        raise GraphBreak("iterate", f"{self.cls.__name__}.__iter__ returned {out!r}")

    def unpack(self, tx):
        return unpack_iterable(tx, self.iterate(tx))

    def binary_op(self, tx, sym, other):
        inplace = sym.endswith("=")
        name = BINARY_DUNDERS.get(sym[:-1] if inplace else sym)
        fn = lookup(tx, self.cls, name) if name else MISSING
        if inplace and isinstance(lookup(tx, self.cls, "__i" + name[2:]), types.FunctionType):
            name = "__i" + name[2:]
            fn = lookup(tx, self.cls, name)
        if not isinstance(fn, types.FunctionType):
            raise GraphBreak("operator", f"{sym} on a {self.cls.__name__} made in the frame")
        out = inline(tx, fn, [self, other])
        if _is_not_implemented(out):
            raise GraphBreak("operator", f"{self.cls.__name__}.{name} returned NotImplemented")
        return out

    def rich_compare(self, tx, sym, left, right):
        return rich_compare(tx, sym, left, right)

    def _special(self, tx, name, what):
        fn = lookup(tx, self.cls, name)
        if isinstance(fn, types.FunctionType):
            return ObjectValue(fn)
        if fn is MISSING:
            raise GraphBreak("bad call", f"TypeError: {what} of a '{self.cls.__name__}' object is not supported")
        raise GraphBreak("method", f"{self.cls.__name__}.{name} is not Python code")

    # codegen
    def rebuild_parts(self):
        return list(self.attrs.values())

    def rebuild(self, rb):
        # (types.SimpleNamespace refuses object.__new__; its own __new__ runs no Python code)
        new = types.SimpleNamespace.__new__ if self.cls is types.SimpleNamespace else object.__new__
        name = rb.declare(self, f"{rb.ns.bind(new)}({rb.ns.bind(self.cls)})")
        if self.attrs:
            items = ", ".join(f"{k!r}: {rb.expr(v)}" for k, v in self.attrs.items())
            if _dict_holds_all(self.cls, self.attrs):        # one C call: the new object's __dict__ itself
                rb.prelude.append(f"{rb.ns.bind(object.__setattr__)}({name}, '__dict__', {{{items}}})")
            else:
                rb.prelude.append(f"{rb.ns.bind(fill_attributes)}({name}, {{{items}}})")
        return name


def fill_attributes(obj, attrs):
    """Runtime helper of rebuilt objects: the raw attribute stores, bypassing any __setattr__."""
    setter = object.__setattr__
    for name, value in attrs.items():
        setter(obj, name, value)


def _has_instance_dict(cls):
    return cls.__dictoffset__ != 0


def _dict_holds_all(cls, attrs):
    """Would raw stores of `attrs` into a new `cls` object all land in its instance __dict__, in order?
    Then the dict itself can be given at once. Not when a name is a data descriptor on the class (a
    property, a slot: object.__setattr__ goes through it) or `__dict__` itself is not object's own."""
    if not _has_instance_dict(cls) or type(lookup_type(cls, "__dict__")) is not types.GetSetDescriptorType:
        return False
    return all(not _is_data_descriptor(lookup_type(cls, k)) for k in attrs)


class SuperValue(Value):
    """super(start, receiver): attributes come from the receiver's MRO after `start`."""
    __slots__ = ("start", "receiver", "owner", "receiver_is_class")

    def __init__(self, start, receiver):
        super().__init__(None)
        self.start = start
        self.receiver = receiver
        obj = receiver.obj if isinstance(receiver, ObjectValue) else None
        self.receiver_is_class = isinstance(obj, type) and issubclass(obj, start)
        self.owner = obj if self.receiver_is_class else _python_type(receiver)
        if not (isinstance(self.owner, type) and issubclass(self.owner, start)):
            raise GraphBreak("bad call", "TypeError: super(type, obj): obj must be an instance or subtype of type")

    def python_type(self):
        return super

    def load_attr(self, tx, name):
        attr = lookup(tx, self.owner, name, after=self.start)
        if attr is MISSING:
            raise GraphBreak("attribute error", f"AttributeError: 'super' object has no attribute '{name}'")
        cls_value = self.receiver if self.receiver_is_class else ObjectValue(self.owner)
        return class_attribute(tx, attr, self.receiver, self.receiver_is_class, cls_value, name)

    def call_method(self, tx, name, args, kwargs):
        return call(tx, self.load_attr(tx, name), args, kwargs)


def _python_type(v):
    return python_type_of(v)


def class_attribute(tx, attr, receiver, receiver_is_class, cls_value, name):
    """The value of class attribute `attr` (raw, from a class __dict__) looked up through `receiver`."""
    if isinstance(attr, types.FunctionType):
        return ObjectValue(attr) if receiver_is_class else BoundMethod(attr, receiver)
    if isinstance(attr, staticmethod):
        return ObjectValue(attr.__func__)
    if isinstance(attr, classmethod):
        return BoundMethod(attr.__func__, cls_value)
    if isinstance(attr, property):
        if receiver_is_class:
            return ObjectValue(attr)
        if attr.fget is None:
            raise GraphBreak("attribute error", f"AttributeError: property {name!r} has no getter")
        return inline(tx, attr.fget, [receiver])
    if isinstance(attr, BUILTIN_METHOD_TYPES):          # object.__init__, object.__setattr__, ...
        return ObjectValue(attr) if receiver_is_class else BoundMethod(attr, receiver)
    if isinstance(attr, types.BuiltinFunctionType):      # object.__new__ and other builtins stored on a class
        return ObjectValue(attr)
    if hasattr(type(attr), "__get__"):
        raise GraphBreak("attribute", f"class attribute {name!r} is a {type(attr).__name__} descriptor")
    if cls_value.source is not None:
        return tx.ctx.wrap(attr, AttrSource(cls_value.source, name))
    return wrap_unsourced(attr)


# ---- comparisons ---------------------------------------------------------------------------------

COMPARE_DUNDERS = {"==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
REFLECTED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def rich_compare(tx, sym, a, b):
    """`a <sym> b` with at least one user object (made in the frame or not), as Python does it: the left operand's method, then the
    reflected method of the right one, then identity for ==/!= (TypeError for orderings)."""
    for left, right, op in ((a, b, sym), (b, a, REFLECTED[sym])):
        out = _compare_with(tx, op, left, right)
        if out is not NotImplemented:
            return out
    if sym in ("==", "!="):
        return Const((a is b) == (sym == "=="))
    raise GraphBreak("bad call", f"TypeError: '{sym}' not supported between these objects")


def _compare_with(tx, op, left, right):
    """left.__op__(right) as a Value, or NotImplemented."""
    if isinstance(left, NewObject):
        cls = left.cls
    elif isinstance(left, ObjectValue) and is_plain_instance(left.obj) and type(left.obj) is not types.SimpleNamespace:
        cls = type(left.obj)                      # a user object from outside the frame (values/objects/user_dunders.py)
    else:
        if isinstance(left, Const) and type(left.value).__module__ == "builtins":
            return NotImplemented                 # builtin values do not know user objects
        raise GraphBreak("operator", f"comparison {op} between {left!r} and {right!r}")
    fn = lookup(tx, cls, COMPARE_DUNDERS[op])
    if op == "!=" and fn is object.__ne__:     # the default __ne__ inverts __eq__
        eq = _compare_with(tx, "==", left, right)
        if eq is NotImplemented:
            return NotImplemented
        if not isinstance(eq, Const):
            raise GraphBreak("operator", f"{cls.__name__}.__eq__ returned {eq!r}")
        return Const(not eq.value)
    if fn is getattr(object, COMPARE_DUNDERS[op]):
        return Const(True) if op == "==" and left is right else NotImplemented
    if not isinstance(fn, types.FunctionType):
        raise GraphBreak("operator", f"{cls.__name__}.{COMPARE_DUNDERS[op]} is not Python code")
    out = inline(tx, fn, [left, right])
    return NotImplemented if _is_not_implemented(out) else out


def _is_not_implemented(v):
    return isinstance(v, Const) and v.value is NotImplemented or isinstance(v, ObjectValue) and v.obj is NotImplemented


# ---- stores ---------------------------------------------------------------------------------------

def store_instance_attr(tx, obj, cls, name, value, raw_store, through_object=False):
    """`obj.name = value` on an instance of Python class `cls`: a property setter or a Python
    __setattr__ is inlined; otherwise `raw_store(tx, name, value)` makes the store itself."""
    if not through_object:
        setattr_fn = lookup(tx, cls, "__setattr__")
        if not is_generic(setattr_fn, "__setattr__"):
            if not isinstance(setattr_fn, types.FunctionType):
                raise GraphBreak("store attr", f"{cls.__name__}.__setattr__ is not Python code")
            inline(tx, setattr_fn, [obj, Const(name), value])
            return
    attr = lookup(tx, cls, name)
    if attr is not MISSING and _is_data_descriptor(attr) and not isinstance(attr, SLOT_TYPES):
        if isinstance(attr, property):
            if attr.fset is None:
                raise GraphBreak("attribute error", f"AttributeError: can't set attribute {name!r}")
            inline(tx, attr.fset, [obj, value])
            return
        setter = getattr(type(attr), "__set__", None)
        if isinstance(setter, types.FunctionType):          # a data descriptor written in Python
            inline(tx, setter, [descriptor_value(cls, name, attr), obj, value])
            return
        raise GraphBreak("store attr", f"setting {cls.__name__}.{name} ({type(attr).__name__} descriptor)")
    raw_store(tx, name, value)


def store_input_attr(tx, obj, name, value):
    """Attribute store on a plain Python object from outside the frame (an ObjectValue with a Source)."""
    if obj.source is None:
        raise GraphBreak("store attr", f"setting .{name} on an object framejit cannot reach")
    store_instance_attr(tx, obj, type(obj.obj), name, value, _input_raw_store(obj))


def _input_raw_store(obj):
    def raw_store(tx, name, value):
        slot = isinstance(mro_lookup(type(obj.obj), name), SLOT_TYPES)
        if not slot and not _has_instance_dict(type(obj.obj)):
            raise _no_attribute(type(obj.obj), name)
        obj.edited = True
        tx.ctx.side_effects.store_attr(obj.obj, obj.source, name, value, raw=True, in_dict=not slot)
    return raw_store


# ---- lookasides: object.__new__/__init__/__setattr__, super ----------------------------------------

def object_setattr_lookaside(tx, args, kwargs):
    if len(args) != 3 or kwargs:
        raise GraphBreak("bad call", "TypeError: object.__setattr__ takes exactly 3 arguments")
    obj, name, value = args
    name = as_python(name)
    if isinstance(obj, NewObject):
        store_instance_attr(tx, obj, obj.cls, name, value, obj._raw_store, through_object=True)
    elif isinstance(obj, ObjectValue) and is_plain_instance(obj.obj) and obj.source is not None:
        store_instance_attr(tx, obj, type(obj.obj), name, value, _input_raw_store(obj), through_object=True)
    else:
        raise GraphBreak("store attr", f"object.__setattr__ on {obj!r}")
    return Const(None)


def object_delattr_lookaside(tx, args, kwargs):
    if len(args) != 2 or kwargs:
        raise GraphBreak("bad call", "TypeError: object.__delattr__ takes exactly 2 arguments")
    obj, name = args[0], as_python(args[1])
    if isinstance(obj, NewObject) or isinstance(obj, ObjectValue) and is_plain_instance(obj.obj):
        delete_instance_attr(tx, obj, name, through_object=True)
    else:
        raise GraphBreak("delete attr", f"object.__delattr__ on {obj!r}")
    return Const(None)


def object_init_lookaside(tx, args, kwargs):
    if len(args) > 1 or kwargs:
        overrides_new = isinstance(args[0], NewObject) and lookup(tx, args[0].cls, "__new__") is not object.__new__
        if not overrides_new:
            raise GraphBreak("bad call", "TypeError: object.__init__() takes exactly one argument")
    return Const(None)


def object_new_lookaside(tx, args, kwargs):
    if not args:
        raise GraphBreak("bad call", "TypeError: object.__new__(): not enough arguments")
    cls_value = args[0]
    cls = as_python(cls_value)
    why = why_not_constructible(cls, through_type_call=True)     # (object.__new__ never calls the metaclass)
    if why is not None:
        raise GraphBreak("construct", why)
    if (len(args) > 1 or kwargs) and lookup(tx, cls, "__init__") is object.__init__:
        raise GraphBreak("bad call", f"TypeError: {cls.__name__}() takes no arguments")
    return NewObject(cls, cls_value if isinstance(cls_value, ObjectValue) else None)


def super_lookaside(tx, args, kwargs):
    if len(args) == 2:
        start = as_python(args[0])
        receiver = args[1]
    elif not args:
        start, receiver = _implicit_super_args(tx)
    else:
        raise GraphBreak("super", "super() with one argument")
    if not isinstance(start, type):
        raise GraphBreak("bad call", "TypeError: super() argument 1 must be a type")
    return SuperValue(start, receiver)


def _implicit_super_args(tx):
    code = tx.code
    if "__class__" not in code.co_freevars:
        raise GraphBreak("bad call", "RuntimeError: super(): __class__ cell not found")
    cls_value = tx.closure[code.co_freevars.index("__class__")].get(tx, "__class__")
    if not code.co_argcount:
        raise GraphBreak("bad call", "RuntimeError: super(): no arguments")
    first = code.co_varnames[0]
    receiver = tx.cells[first].get(tx, first) if first in tx.cells else tx.load_local(first)
    return as_python(cls_value), receiver

