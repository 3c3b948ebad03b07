"""Attributes of real objects the frame reaches (arguments, globals, what they hold): one model.

Why this exists: a differential fuzzer found most of its wrong results on attributes of objects passed
in. Two families: a read that did not see the frame's own write made another way (`o.__dict__['b'] = 2`
then `o.b`; an `o.a = 1` lost when `o.__dict__` was written back whole), and an answer that depended on
an attribute being *absent* (hasattr false, a getattr default, a caught AttributeError, `'k' in
o.__dict__`) with no guard, so compiled code kept the stale answer once the attribute appeared.

The model of one object's attributes is the real object as the call finds it plus the frame's own writes
and deletes (SideEffects.attrs / attr_log), whatever spelling made them: `o.k = v`, setattr,
object.__setattr__, `o.__dict__[k] = v`, `vars(o).update(...)`, delattr, `del o.__dict__[k]`, a
cached_property filling itself in. Every read goes through Python's lookup order over that state: data
descriptors of the class (a property: its getter inlined; a slot), then the instance __dict__, then
class attributes (functions bind), then a Python __getattr__. `o.__dict__` / `vars(o)` is a view over
the same state (InstanceDictValue), so its keys, order, `in`, get and items agree with attribute reads.

Each outcome guards what it relied on in the real state, and nothing more:

  found in the instance __dict__ / a plain class value   the value at `o.k` (as any read)
  a method, property, slot, __getattr__ of the class     `mro_lookup(C, 'k') is <that object>` and, for a
                                                         non-data one, `'k' not in o.__dict__`
  absent                                                 `hasattr(o, 'k') is False`
  hasattr()                                              `hasattr(o, 'k') is <answer>`
  `'k' in o.__dict__`, a dict view's keys                that test / the dict's keys

`mro_lookup(C, k)` is the raw class-dictionary lookup attribute access starts with (ABSENT if no class
on C's MRO has k): the class of a plain object is fixed by its TYPE_MATCH guard, so a guard on the lookup
names the class directly. These guards are versioned (guards/dict_guards.py): a class lookup is a function of
the class's version tag, presence on a plain object of its instance __dict__ and class, so on state
reached from globals they cost one word each, re-checked only when the word moves.

A frame that changes a *class* attribute and then reads that name through an instance or subclass
breaks the graph at the read (the read then runs as plain Python, after the write was replayed).
"""
import dataclasses
import functools
import types

from ....errors import GraphBreak
from ...source import AttrSource, DictKeySource, ItemSource, Source, fixed_source
from ..base import Const, MethodValue, ObjectValue, Value

HEAPTYPE = 1 << 9
_MISSING = object()
# what `__dict__` is on a class whose instances keep their attributes in a dict (SimpleNamespace: a member)
DICT_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


class _Absent:
    """What mro_lookup returns when no class on the MRO has the name (bound into guards by name)."""
    __slots__ = ()

    def __repr__(self):
        return "ABSENT"


ABSENT = _Absent()


# what a pending attribute write is when the frame deleted the attribute (SideEffects.attrs)
DELETED = type("Deleted", (), {"__repr__": lambda self: "DELETED", "__slots__": ()})()
# modules whose attributes are read without guards (the frame may not change them, nor does anyone else)
TRUSTED_MODULES = {"torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.fft",
                   "torch.special", "torch.nn.modules", "math", "operator", "functools", "itertools",
                   "collections", "builtins", "typing", "warnings", "numbers", "enum", "dataclasses",
                   "numpy", "numpy.linalg", "numpy.fft"}
BUILTIN_METHOD_TYPES = (types.WrapperDescriptorType, types.MethodDescriptorType)


def inline(tx, fn, args, kwargs=None):
    return tx.inline(fn, None, list(args), kwargs or {})


def is_new_object(value):
    """Is value an instance of a user class made in the frame (objects.py's NewObject)?"""
    return getattr(type(value), "made_in_frame", False)


class PropertyCall:
    """Marker: reading this attribute means calling a Python property getter (inlined by the caller)."""

    def __init__(self, owner, prop):
        self.owner = owner
        self.prop = prop


class BoundMethod(Value):
    """`func` bound to `receiver` (a Value): calling it passes the receiver first."""
    __slots__ = ("func", "receiver")

    def __init__(self, func, receiver):
        super().__init__(None)
        self.func = func
        self.receiver = receiver

    def python_type(self):
        return types.MethodType if isinstance(self.func, types.FunctionType) else types.BuiltinMethodType

    def __repr__(self):
        return f"BoundMethod({getattr(self.func, '__qualname__', self.func)})"

    def call(self, tx, args, kwargs):
        if isinstance(self.func, types.FunctionType):
            return inline(tx, self.func, [self.receiver, *args], kwargs)
        return tx.call(ObjectValue(self.func), [self.receiver, *args], kwargs or {})

    def load_attr(self, tx, name):
        if name == "__self__":
            return self.receiver
        if name == "__func__":
            return ObjectValue(self.func)
        if name in ("__name__", "__qualname__", "__doc__", "__module__"):
            return Const(getattr(self.func, name))
        raise GraphBreak("attribute", f"attribute {name!r} of a bound method")

    def children(self):
        return [self.receiver]

    def rebuild(self, rb):
        return f"{rb.ns.bind(self.func)}.__get__({rb.expr(self.receiver)})"


def _hf_config_lookup(obj, attr):
    """transformers' PreTrainedConfig.__getattribute__: renames `attr` through the `attribute_map` dict."""
    names = object.__getattribute__(obj, "attribute_map")
    return (names.get(attr, attr), [names]) if type(names) is dict else None


def _hf_heterogeneous_lookup(obj, attr):
    """transformers' HeterogeneousConfigMixin.__getattribute__: plain unless the config is heterogeneous."""
    spec = object.__getattribute__(obj, "__dict__").get("_heterogeneity_spec")
    return (attr, []) if spec is None else None


# __getattribute__ overrides whose answer is still a plain lookup decided by dicts: (module, qualname) ->
# f(obj, attr) -> (the attribute finally looked up, extra dicts the choice reads) or None (not plain now)
DICT_DETERMINED_LOOKUPS = {
    ("transformers.configuration_utils", "PreTrainedConfig.__getattribute__"): _hf_config_lookup,
    ("transformers.integrations.heterogeneity.configuration_utils", "HeterogeneousConfigMixin.__getattribute__"):
        _hf_heterogeneous_lookup,
}



# object's own attribute protocol, and types.SimpleNamespace's (C slot wrappers doing the same thing)
_NS = types.SimpleNamespace.__dict__
GENERIC = {"__getattribute__": (object.__getattribute__, _NS["__getattribute__"]),
           "__setattr__": (object.__setattr__, _NS["__setattr__"]),
           "__delattr__": (object.__delattr__, _NS["__delattr__"])}


def is_generic(fn, name):
    """Is `fn` (what a class holds as __getattribute__/__setattr__/__delattr__) object's own behaviour?"""
    return any(fn is g for g in GENERIC[name])


def mro_lookup(cls, name, after=None):
    """The raw attribute `name` from the __dict__ of the first class on cls's MRO (after class `after`,
    for super()) that has it, or ABSENT: the first step of attribute lookup (_PyType_Lookup)."""
    mro = cls.__mro__
    if after is not None:
        mro = mro[mro.index(after) + 1:] if after in mro else ()
    for klass in mro:
        d = klass.__dict__
        if name in d:
            return d[name]
    return ABSENT


_LOOKUP = fixed_source(mro_lookup, "mro_lookup")


@dataclasses.dataclass(frozen=True)
class ClassLookupSource(Source):
    """`mro_lookup(cls, attr[, after])`: what a class's MRO holds under `attr` (ABSENT if nothing)."""
    cls: Source
    attr: str
    after: Source = None

    def expr(self):
        after = f", {self.after.expr()}" if self.after is not None else ""
        return f"{_LOOKUP.expr()}({self.cls.expr()}, {self.attr!r}{after})"

    def name(self):
        start = f" after {self.after.name()}" if self.after is not None else ""
        return f"class lookup of {self.attr!r} on {self.cls.name()}{start}"

    def root(self):
        return self.cls.root()


@dataclasses.dataclass(frozen=True)
class PresenceSource(Source):
    """`hasattr(base, attr)`."""
    base: Source
    attr: str
    boolean = True

    def expr(self):
        return f"hasattr({self.base.expr()}, {self.attr!r})"

    def name(self):
        return f"hasattr({self.base.name()}, {self.attr!r})"

    def root(self):
        return self.base.root()


@dataclasses.dataclass(frozen=True)
class InstanceHasSource(Source):
    """`attr in base.__dict__` (an object's own attributes, or a class's own __dict__)."""
    base: Source
    attr: str
    boolean = True

    def expr(self):
        return f"({self.attr!r} in {self.base.expr()}.__dict__)"

    def name(self):
        return f"{self.attr!r} in {self.base.name()}.__dict__"

    def root(self):
        return self.base.root()


def is_data_descriptor(found):
    t = type(found)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def _is_user_class(cls):
    return isinstance(cls, type) and bool(cls.__flags__ & HEAPTYPE)


def class_source(cls):
    """A Source naming class `cls` itself (guards on what its MRO holds need no path to it)."""
    return fixed_source(cls, cls.__qualname__)


def class_lookup(tx, cls, name, after=None):
    """mro_lookup(cls, name, after), guarded: what the frame does with an instance of a user class depends
    on the class's attributes, which can change between calls (builtin classes cannot). A name the frame
    itself changed on one of the classes is a graph break (the read then runs after the write)."""
    if _has_class_edits(tx, cls, name):
        raise _class_edit_break(cls, name)
    found = mro_lookup(cls, name, after)
    if cls.__flags__ & HEAPTYPE:
        start = class_source(after) if after is not None else None
        tx.ctx.guards.add("ID_MATCH", ClassLookupSource(class_source(cls), name, start), found)
    return found


def missing(cls, name):
    """The AttributeError of `obj.name` for an instance of cls (a GraphBreak standing for the Python
    exception; the caller has guarded the absence)."""
    return GraphBreak("attribute error", f"AttributeError: '{cls.__name__}' object has no attribute '{name}'")


def is_attribute_error(gb):
    """Does this GraphBreak stand for a Python AttributeError (so getattr's default / hasattr apply)?"""
    from .exception_values import exception_of
    exc = exception_of(gb)
    return exc is not None and issubclass(exc.exc_type, AttributeError)


def _guard(tx, kind, source, expected):
    if source is not None:
        tx.ctx.guards.add(kind, source, expected)


def _instance_dict(obj):
    try:
        d = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return d if type(d) is dict else None


def _has_class_edits(tx, cls, name):
    """Did the frame store or delete `name` on cls or a base class?"""
    attrs = tx.ctx.side_effects.attrs
    return any((id(k), name) in attrs for k in cls.__mro__)


def _class_edit_break(cls, name):
    return GraphBreak("attribute", f"reading {cls.__name__}.{name} after the frame changed it on the class")


# ---- plain objects from outside the frame --------------------------------------------------------

def read_instance_attr(tx, ov, name, use_getattr=True):
    """`ov.name` for a plain Python object from outside the frame whose attribute lookup is object's own
    (identity.is_plain_instance; no __getattribute__ of its own; `use_getattr=False`: object.__getattribute__
    itself, no __getattr__ fallback). Returns a Value or a PropertyCall."""
    obj, src = ov.obj, ov.source
    cls = type(obj)
    if _has_class_edits(tx, cls, name):
        raise _class_edit_break(cls, name)
    found = mro_lookup(cls, name)
    if found is not ABSENT and is_data_descriptor(found):
        return _data_descriptor(tx, ov, cls, name, found)
    pending = tx.ctx.side_effects.pending_attr(obj, name)
    if pending is not None and pending is not DELETED:
        return pending
    if pending is None:
        inst = _instance_dict(obj)
        if inst is not None and name in inst:
            return _wrap(tx, inst[name], AttrSource(src, name) if src is not None else None)
    if found is not ABSENT:
        if pending is None and src is not None and not hasattr(type(found), "__get__"):
            return tx.ctx.wrap(found, AttrSource(src, name))     # one guard: the value `o.name` has
        if pending is None:
            _not_in_instance(tx, obj, src, name)
        return class_value(tx, ov, cls, name, class_lookup(tx, cls, name))
    getattr_fn = mro_lookup(cls, "__getattr__") if use_getattr else ABSENT
    if getattr_fn is not ABSENT:
        if pending is None:
            _not_in_instance(tx, obj, src, name)
        class_lookup(tx, cls, name)
        return _call_getattr(tx, ov, cls, name, class_lookup(tx, cls, "__getattr__"))
    if pending is None and use_getattr:
        _guard(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, False)
    else:                   # deleted by the frame, or no __getattr__ asked: what the class has decides
        if pending is None:
            _not_in_instance(tx, obj, src, name)
        class_lookup(tx, cls, name)
        if use_getattr:
            class_lookup(tx, cls, "__getattr__")
    raise missing(cls, name)


def has_python_lookup(tx, ov):
    """Is `ov` a plain object whose class has a __getattribute__ written in Python that reads must go
    through (inlined)? Not for the DICT_DETERMINED_LOOKUPS overrides (transformers' configs), whose
    reads are made for real and versioned, unless the frame has changed the object's attributes."""
    found = mro_lookup(type(ov.obj), "__getattribute__")
    if is_generic(found, "__getattribute__") or not isinstance(found, types.FunctionType):
        return False
    return ov.edited or (found.__module__, found.__qualname__) not in DICT_DETERMINED_LOOKUPS


def read_through_override(tx, ov, name):
    """`ov.name` through the class's Python __getattribute__ (inlined: its object.__getattribute__ is
    read_instance_attr), then __getattr__ if that raises AttributeError, as type slots do."""
    cls = type(ov.obj)
    fn = class_lookup(tx, cls, "__getattribute__")
    try:
        return inline(tx, fn, [ov, Const(name)])
    except GraphBreak as gb:
        getattr_fn = class_lookup(tx, cls, "__getattr__") if is_attribute_error(gb) else ABSENT
        if getattr_fn is ABSENT:
            raise
    return _call_getattr(tx, ov, cls, name, getattr_fn)


def _not_in_instance(tx, obj, src, name):
    if src is not None and _instance_dict(obj) is not None:
        tx.ctx.guards.add("CONST_MATCH", InstanceHasSource(src, name), False)


def _wrap(tx, real, source):
    if source is None:
        from ..protocol import wrap_unsourced
        return wrap_unsourced(real)
    return tx.ctx.wrap(real, source)


def _call_getattr(tx, receiver, cls, name, fn):
    if not isinstance(fn, types.FunctionType):
        raise GraphBreak("attribute", f"{cls.__name__}.__getattr__ is not Python code")
    return inline(tx, fn, [receiver, Const(name)])


def _data_descriptor(tx, ov, cls, name, found):
    """A data descriptor of the class decides `obj.name` before the instance __dict__."""
    obj, src = ov.obj, ov.source
    class_lookup(tx, cls, name)
    if isinstance(found, property):
        if found.fget is None:
            raise GraphBreak("attribute error", f"AttributeError: property '{name}' of '{cls.__name__}' object "
                             "has no getter")
        return PropertyCall(ov, found)
    if name == "__dict__" and type(found) in DICT_DESCRIPTORS and _instance_dict(obj) is not None:
        return instance_dict_value(tx, ov)
    if isinstance(found, types.MemberDescriptorType):       # a slot
        pending = tx.ctx.side_effects.pending_attr(obj, name)
        if pending is not None and pending is not DELETED:
            return pending
        if pending is None:
            try:
                real = found.__get__(obj, cls)
            except AttributeError:
                real = _MISSING
            if real is not _MISSING:
                return _wrap(tx, real, AttrSource(src, name) if src is not None else None)
        if mro_lookup(cls, "__getattr__") is not ABSENT:
            raise GraphBreak("attribute", f"an unset slot {cls.__name__}.{name} with a __getattr__")
        class_lookup(tx, cls, "__getattr__")
        if pending is None:
            _guard(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, False)
        raise missing(cls, name)
    if name == "__class__" and found is object.__dict__["__class__"]:
        return _wrap(tx, cls, AttrSource(src, "__class__") if src is not None else None)
    getter = getattr(type(found), "__get__", None)
    if isinstance(getter, types.FunctionType):                # a data descriptor written in Python
        return inline(tx, getter, [descriptor_value(cls, name, found), ov, ObjectValue(cls, class_source(cls))])
    try:                                        # a descriptor written in C (or one framejit does not model)
        real = getattr(obj, name)
    except AttributeError:
        raise GraphBreak("attribute", f"{type(found).__name__} descriptor {cls.__name__}.{name} raised AttributeError")
    return _wrap(tx, real, AttrSource(src, name) if src is not None else None)


def class_value(tx, receiver, cls, name, found):
    """The value of class attribute `found` (raw, non-data) read through instance `receiver`."""
    if isinstance(found, types.FunctionType):
        return BoundMethod(found, receiver)
    if isinstance(found, staticmethod):
        return ObjectValue(found.__func__)
    if isinstance(found, classmethod):
        return BoundMethod(found.__func__, ObjectValue(cls, class_source(cls)))
    if isinstance(found, BUILTIN_METHOD_TYPES):
        return BoundMethod(found, receiver)
    if isinstance(found, types.BuiltinFunctionType):
        return ObjectValue(found)
    if isinstance(found, functools.cached_property):
        value = inline(tx, found.func, [receiver])
        attrname = found.attrname or name
        if hasattr(receiver, "store_cached"):
            receiver.store_cached(tx, attrname, value)
        else:
            _raw_store(tx, receiver, attrname, value)
        return value
    getter = getattr(type(found), "__get__", None)
    if getter is not None:
        if isinstance(getter, types.FunctionType):
            return inline(tx, getter, [descriptor_value(cls, name, found), receiver, ObjectValue(cls, class_source(cls))])
        if receiver.source is None or not isinstance(receiver, ObjectValue):
            raise GraphBreak("attribute", f"class attribute {name!r} is a {type(found).__name__} descriptor")
        return _wrap(tx, getattr(receiver.obj, name), AttrSource(receiver.source, name))
    return tx.ctx.wrap(found, AttrSource(class_source(cls), name))


def descriptor_value(cls, name, found):
    """A descriptor object found on cls's MRO, named directly (a class lookup guard pins which it is)."""
    return ObjectValue(found, fixed_source(found, f"{cls.__qualname__}.{name}"))


def _raw_store(tx, ov, name, value):
    if ov.source is None:
        raise GraphBreak("store attr", f"setting .{name} on an object framejit cannot reach")
    ov.edited = True
    tx.ctx.side_effects.store_attr(ov.obj, ov.source, name, value, raw=True,
                                   in_dict=not isinstance(mro_lookup(type(ov.obj), name), types.MemberDescriptorType))


def instance_has(tx, ov, name):
    """hasattr(ov, name) for a plain object from outside the frame, with the guard on the answer; None
    when only a full read can tell (a property, __getattr__: the caller reads and catches)."""
    obj, src = ov.obj, ov.source
    cls = type(obj)
    if _has_class_edits(tx, cls, name):
        raise _class_edit_break(cls, name)
    found = mro_lookup(cls, name)
    pending = tx.ctx.side_effects.pending_attr(obj, name)
    if found is not ABSENT and not _answers_without_code(found):
        return None                 # a property, a cached_property...: hasattr would run its code
    if pending is not None and pending is not DELETED:
        return True
    if mro_lookup(cls, "__getattr__") is not ABSENT:
        return None
    if pending is None:
        answer = hasattr(obj, name)
        _guard(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, answer)
        return answer
    if isinstance(found, types.MemberDescriptorType):        # a slot the frame deleted
        class_lookup(tx, cls, name)
        return False
    class_lookup(tx, cls, "__getattr__")
    return class_lookup(tx, cls, name) is not ABSENT


def _answers_without_code(found):
    """Does looking `found` (a class attribute) up through an instance run no Python code?"""
    return not hasattr(type(found), "__get__") or isinstance(found, (
        types.FunctionType, staticmethod, classmethod, types.MemberDescriptorType, types.BuiltinFunctionType,
        types.GetSetDescriptorType) + BUILTIN_METHOD_TYPES)


def delete_instance_attr(tx, ov, name, through_object=False):
    """`del ov.name` on a plain object from outside the frame (or made in it: NewObject)."""
    is_new = is_new_object(ov)
    cls = ov.cls if is_new else type(ov.obj)
    if not is_new and ov.source is None:
        raise GraphBreak("delete attr", f"deleting .{name} of an object framejit cannot reach")
    if not through_object:
        delattr_fn = class_lookup(tx, cls, "__delattr__")
        if not is_generic(delattr_fn, "__delattr__"):
            if not isinstance(delattr_fn, types.FunctionType):
                raise GraphBreak("delete attr", f"{cls.__name__}.__delattr__ is not Python code")
            inline(tx, delattr_fn, [ov, Const(name)])
            return
    found = class_lookup(tx, cls, name)
    if found is not ABSENT and is_data_descriptor(found):
        if isinstance(found, property):
            if found.fdel is None:
                raise GraphBreak("attribute error", f"AttributeError: property '{name}' of '{cls.__name__}' "
                                 "object has no deleter")
            inline(tx, found.fdel, [ov])
            return
        deleter = getattr(type(found), "__delete__", None)
        if isinstance(deleter, types.FunctionType):
            inline(tx, deleter, [descriptor_value(cls, name, found), ov])
            return
        if not isinstance(found, types.MemberDescriptorType):
            raise GraphBreak("delete attr", f"deleting {cls.__name__}.{name} ({type(found).__name__} descriptor)")
        in_dict = False
    else:
        in_dict = True
    if is_new:
        if name not in ov.attrs:
            raise missing(cls, name)
        del ov.attrs[name]
        return
    obj, src = ov.obj, ov.source
    pending = tx.ctx.side_effects.pending_attr(obj, name)
    if pending is DELETED:
        raise missing(cls, name)
    if pending is None:
        if in_dict:
            inst = _instance_dict(obj)
            present = inst is not None and name in inst
            if inst is not None:
                tx.ctx.guards.add("CONST_MATCH", InstanceHasSource(src, name), present)
        else:
            try:
                found.__get__(obj, cls)
                present = True
            except AttributeError:
                present = False
            _guard_slot(tx, cls, src, name, present)
        if not present:
            raise missing(cls, name)
    ov.edited = True
    tx.ctx.side_effects.delete_attr(obj, src, name, raw=True, in_dict=in_dict)


def _guard_slot(tx, cls, src, name, present):
    """Whether a slot is set: hasattr, when nothing but the slot can answer it."""
    if class_lookup(tx, cls, "__getattr__") is not ABSENT:
        raise GraphBreak("delete attr", f"deleting slot {cls.__name__}.{name} of an object with __getattr__")
    tx.ctx.guards.add("CONST_MATCH", PresenceSource(src, name), present)


# ---- classes, modules and other objects from outside the frame ----------------------------------

def read_class_attr(tx, ov, name):
    """`C.name` for a user class from outside the frame (metaclass type: its lookup is type's own)."""
    cls, src = ov.obj, ov.source
    pending = tx.ctx.side_effects.pending_attr(cls, name)
    if pending is not None and pending is not DELETED:
        return pending
    if pending is DELETED or any((id(k), name) in tx.ctx.side_effects.attrs for k in cls.__mro__[1:]):
        raise _class_edit_break(cls, name)
    return read_real_attr(tx, ov, name)


def read_real_attr(tx, ov, name):
    """`obj.name` read for real (modules, classes, objects with a lookup of their own), with the absence
    guarded when it raises AttributeError."""
    obj, src = ov.obj, ov.source
    pending = tx.ctx.side_effects.pending_attr(obj, name)
    if pending is DELETED:
        raise GraphBreak("attribute", f"reading .{name} after the frame deleted it")
    if pending is not None:
        return pending
    try:
        real = getattr(obj, name)
    except AttributeError as e:
        if _guarded(tx, obj):                 # (trusted modules' attributes are not guarded at all)
            _guard(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, False)
        raise GraphBreak("attribute error", f"AttributeError: {e}")
    except Exception as e:
        raise GraphBreak("attribute", f"reading .{name} raised {type(e).__name__}: {e}")
    if tx.ctx.recorder is not None and isinstance(obj, types.ModuleType):
        tx.ctx.recorder.record_module_attr(obj, name, real)
    return tx.ctx.wrap_attr(obj, src, name, real)


def _guarded(tx, obj):
    """Are attributes of obj guarded at all (not a trusted module's)?"""
    return not (isinstance(obj, types.ModuleType) and obj.__name__ in TRUSTED_MODULES)


def real_has(tx, ov, name):
    """hasattr(ov, name) for an object read for real, with the guard on the answer."""
    obj, src = ov.obj, ov.source
    pending = tx.ctx.side_effects.pending_attr(obj, name)
    if pending is not None:
        return pending is not DELETED
    answer = hasattr(obj, name)
    if _guarded(tx, obj):
        _guard(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, answer)
    return answer


def delete_class_attr(tx, ov, name):
    """`del C.name` for a user class from outside the frame."""
    cls, src = ov.obj, ov.source
    if src is None or type(cls) is not type:
        raise GraphBreak("delete attr", f"deleting {getattr(cls, '__name__', cls)}.{name}")
    pending = tx.ctx.side_effects.pending_attr(cls, name)
    if pending is DELETED:
        raise GraphBreak("attribute error", f"AttributeError: type object '{cls.__name__}' has no attribute '{name}'")
    if pending is None:
        present = name in cls.__dict__
        tx.ctx.guards.add("CONST_MATCH", InstanceHasSource(src, name), present)
        if not present:
            raise GraphBreak("attribute error", f"AttributeError: type object '{cls.__name__}' has no attribute '{name}'")
    ov.edited = True
    tx.ctx.side_effects.delete_attr(cls, src, name, raw=False, in_dict=False)


# ---- obj.__dict__ / vars(obj) --------------------------------------------------------------------

def instance_dict_value(tx, owner):
    """The one InstanceDictValue of `owner` (an ObjectValue of a plain object, or a NewObject)."""
    views = tx.ctx.instance_dicts
    key = id(owner.obj) if isinstance(owner, ObjectValue) else id(owner)
    view = views.get(key)
    if view is None:
        view = views[key] = InstanceDictValue(tx.ctx, owner)
    return view


class _LiveItems:
    """The view's current items as a read-only mapping (dict views and `**` read it); values are read
    (and guarded) only when asked for."""

    def __init__(self, view):
        self.view = view

    def __iter__(self):
        return iter(self.view.keys())

    def __len__(self):
        return len(self.view.keys())

    def __contains__(self, key):
        return self.view.has(key)

    def __getitem__(self, key):
        value = self.view.get(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def keys(self):
        return self.view.keys()

    def values(self):
        return [self[k] for k in self.view.keys()]

    def items(self):
        return [(k, self[k]) for k in self.view.keys()]

    def get(self, key, default=None):
        value = self.view.get(key)
        return default if value is _MISSING else value


class InstanceDictValue(Value):
    """`obj.__dict__` of a plain object from outside the frame (an ObjectValue) or made in it (a
    NewObject): a view over the attribute model, so it and attribute reads always agree."""
    __slots__ = ("ctx", "owner")

    def __init__(self, ctx, owner):
        super().__init__(None)
        self.ctx = ctx
        self.owner = owner

    def python_type(self):
        return dict

    def __repr__(self):
        return f"InstanceDictValue({self.owner!r})"

    @property
    def items(self):
        return _LiveItems(self)

    @property
    def _new(self):
        return is_new_object(self.owner)

    def _cls(self):
        return self.owner.cls if self._new else type(self.owner.obj)

    def _is_slot(self, name):
        return isinstance(mro_lookup(self._cls(), name), types.MemberDescriptorType)

    # the state
    def keys(self):
        if self._new:
            return [k for k in self.owner.attrs if not self._is_slot(k)]
        obj, src = self.owner.obj, self.owner.source
        real = list(_instance_dict(obj))
        if src is not None:
            self.ctx.guards.add("DICT_KEYS", AttrSource(src, "__dict__"), tuple(real))
        keys = dict.fromkeys(real)
        for name, present in self.ctx.side_effects.dict_edits(obj):
            if present:
                keys.setdefault(name)
            else:
                keys.pop(name, None)
        return list(keys)

    def has(self, name):
        return self.get(name, read=False) is not _MISSING

    def get(self, name, read=True):
        """The Value of key `name`, or _MISSING; guards the real dict's answer."""
        if self._new:
            if name in self.owner.attrs and not self._is_slot(name):
                return self.owner.attrs[name]
            return _MISSING
        obj, src = self.owner.obj, self.owner.source
        if type(name) is str and not self._is_slot(name):
            pending = self.ctx.side_effects.pending_attr(obj, name)
            if pending is DELETED:
                return _MISSING
            if pending is not None:
                return pending
        inst = _instance_dict(obj)
        present = name in inst
        if src is None:
            return _wrap_unsourced(inst[name]) if present else _MISSING
        if not present or not read:
            self.ctx.guards.add("CONST_MATCH", InstanceHasSource(src, name) if type(name) is str else
                                _dict_key_source(src, name), present)
        if not present:
            return _MISSING
        return self.ctx.wrap(inst[name], ItemSource(AttrSource(src, "__dict__"), name)) if read else True

    def _plain_key(self, tx, name, what):
        """Writes and deletes through the dict are attribute stores and deletes (object.__setattr__ /
        __delattr__ replay them) unless the class has a data descriptor under that name."""
        if type(name) is not str:
            raise GraphBreak(what, f"a non-string key {name!r} in an instance __dict__")
        cls = self._cls()
        found = class_lookup(tx, cls, name)
        if found is not ABSENT and is_data_descriptor(found):
            raise GraphBreak(what, f"changing {cls.__name__}.__dict__[{name!r}], a name the class has a "
                             f"{type(found).__name__} for")

    def set(self, tx, name, value):
        self._plain_key(tx, name, "store subscript")
        if self._new:
            self.owner.attrs[name] = value
            return
        _raw_store(tx, self.owner, name, value)

    def delete(self, tx, name):
        if type(name) is str:
            self._plain_key(tx, name, "delete subscript")
        if self.get(name, read=False) is _MISSING:
            raise GraphBreak("key error", f"KeyError: {name!r}")
        if self._new:
            del self.owner.attrs[name]
            return
        self.owner.edited = True
        tx.ctx.side_effects.delete_attr(self.owner.obj, self.owner.source, name, raw=True, in_dict=True)

    # value protocol (values/containers.py, values/operators.py, lookasides/builtins_table.py)
    def getitem(self, tx, index):
        from ..protocol import as_python
        key = as_python(index)
        value = self.get(key)
        if value is _MISSING:
            raise GraphBreak("key error", f"KeyError: {key!r}")
        return value

    def setitem(self, tx, index, value):
        from ..protocol import as_python
        self.set(tx, as_python(index), value)

    def delitem(self, tx, index):
        from ..protocol import as_python
        self.delete(tx, as_python(index))

    def contains(self, tx, item):
        from ..protocol import as_python
        return self.has(as_python(item))

    def length(self, tx):
        return len(self.keys())

    def truth(self, tx):
        return bool(self.keys())

    def unpack(self, tx):
        return [Const(k) for k in self.keys()]

    def load_attr(self, tx, name):
        if name not in DICT_VIEW_METHODS:
            raise GraphBreak("attribute", f"dict.{name} of an instance __dict__")
        return MethodValue(self, name)

    def call_method(self, tx, name, args, kwargs):
        impl = DICT_VIEW_METHODS.get(name)
        if impl is None:
            raise GraphBreak("method", f"dict.{name} on an instance __dict__")
        return impl(tx, self, *args, **kwargs)

    def children(self):
        return [self.owner]

    def rebuild(self, rb):
        return f"getattr({rb.expr(self.owner)}, '__dict__')"


def _wrap_unsourced(real):
    from ..protocol import wrap_unsourced
    return wrap_unsourced(real)


def _dict_key_source(src, key):
    return DictKeySource(AttrSource(src, "__dict__"), key, lookup=False)


def _view_get(tx, view, key, default=Const(None)):
    from ..protocol import as_python
    value = view.get(as_python(key))
    return default if value is _MISSING else value


def _view_pop(tx, view, key, *default):
    from ..protocol import as_python
    k = as_python(key)
    value = view.get(k)
    if value is _MISSING:
        if default:
            return default[0]
        raise GraphBreak("key error", f"KeyError: {k!r}")
    view.delete(tx, k)
    return value


def _view_setdefault(tx, view, key, default=Const(None)):
    from ..protocol import as_python
    k = as_python(key)
    value = view.get(k)
    if value is _MISSING:
        view.set(tx, k, default)
        return default
    return value


def _view_update(tx, view, other=None, **kwargs):
    from ..protocol import as_python, unpack_iterable
    from ..base import DictValue
    pairs = []
    if other is not None:
        if isinstance(other, DictValue):
            pairs += list(other.items.items())
        elif isinstance(other, InstanceDictValue):
            pairs += [(k, other.get(k)) for k in other.keys()]
        else:
            for pair in unpack_iterable(tx, other):
                k, v = unpack_iterable(tx, pair)
                pairs.append((as_python(k), v))
    pairs += list(kwargs.items())
    for k, v in pairs:
        view.set(tx, k, v)
    return Const(None)


def _view_clear(tx, view):
    for k in view.keys():
        view.delete(tx, k)
    return Const(None)


def _view_copy(tx, view):
    from ..base import DictValue
    return DictValue({k: view.get(k) for k in view.keys()})


def _view_kind(kind):
    def impl(tx, view):
        from ..containers.subscripts import DictViewValue
        return DictViewValue(view, kind)
    return impl


DICT_VIEW_METHODS = {"get": _view_get, "pop": _view_pop, "setdefault": _view_setdefault, "update": _view_update,
                     "clear": _view_clear, "copy": _view_copy, "keys": _view_kind("keys"),
                     "values": _view_kind("values"), "items": _view_kind("items"),
                     "__contains__": lambda tx, view, k: Const(view.contains(tx, k)),
                     "__getitem__": lambda tx, view, k: view.getitem(tx, k),
                     "__setitem__": lambda tx, view, k, v: (view.setitem(tx, k, v), Const(None))[1],
                     "__delitem__": lambda tx, view, k: (view.delitem(tx, k), Const(None))[1],
                     "__len__": lambda tx, view: Const(view.length(tx))}
