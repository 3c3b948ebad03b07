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
import functools
import types

from ....errors import GraphBreak
from ...source import AttrSource, fixed_source
from ..base import Const, ObjectValue
from .attribute_sources import ABSENT, InstanceHasSource, PresenceSource, mro_lookup
from .bound_methods import BoundMethod
from .instance_dict_views import instance_dict_value
from .lookup_steps import (DELETED, MISSING, class_edit_break, class_lookup, class_source, guard_if_sourced, has_class_edits,
                           inline, instance_dict_of, is_data_descriptor, is_new_object, raw_store)
from .trusted_modules import TRUSTED_MODULES

# what `__dict__` is on a class whose instances keep their attributes in a dict (SimpleNamespace: a member)
DICT_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)
BUILTIN_METHOD_TYPES = (types.WrapperDescriptorType, types.MethodDescriptorType)


class PropertyCall:
    """Marker: reading this attribute means calling a Python property getter (inlined by the caller)."""

    def __init__(self, owner, prop):
        self.owner = owner
        self.prop = prop


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


def missing(cls, name):
    """The AttributeError of `obj.name` for an instance of cls (a GraphBreak standing for the Python
    exception; the caller has guarded the absence)."""
    return GraphBreak("attribute error", f"AttributeError: '{cls.__name__}' object has no attribute '{name}'")


def is_attribute_error(gb):
    """Does this GraphBreak stand for a Python AttributeError (so getattr's default / hasattr apply)?"""
    from .exception_values import exception_of
    exc = exception_of(gb)
    return exc is not None and issubclass(exc.exc_type, AttributeError)


# ---- plain objects from outside the frame --------------------------------------------------------

def read_instance_attr(tx, ov, name, use_getattr=True):
    """`ov.name` for a plain Python object from outside the frame whose attribute lookup is object's own
    (identity.is_plain_instance; no __getattribute__ of its own; `use_getattr=False`: object.__getattribute__
    itself, no __getattr__ fallback). Returns a Value or a PropertyCall."""
    obj, src = ov.obj, ov.source
    cls = type(obj)
    if has_class_edits(tx, cls, name):
        raise class_edit_break(cls, name)
    found = mro_lookup(cls, name)
    if found is not ABSENT and is_data_descriptor(found):
        return _data_descriptor(tx, ov, cls, name, found)
    pending = tx.ctx.side_effects.pending_attr(obj, name)
    if pending is not None and pending is not DELETED:
        return pending
    if pending is None:
        inst = instance_dict_of(obj)
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
        guard_if_sourced(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, False)
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
    if src is not None and instance_dict_of(obj) is not None:
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
    if name == "__dict__" and type(found) in DICT_DESCRIPTORS and instance_dict_of(obj) is not None:
        return instance_dict_value(tx, ov)
    if isinstance(found, types.MemberDescriptorType):       # a slot
        pending = tx.ctx.side_effects.pending_attr(obj, name)
        if pending is not None and pending is not DELETED:
            return pending
        if pending is None:
            try:
                real = found.__get__(obj, cls)
            except AttributeError:
                real = MISSING
            if real is not MISSING:
                return _wrap(tx, real, AttrSource(src, name) if src is not None else None)
        if mro_lookup(cls, "__getattr__") is not ABSENT:
            raise GraphBreak("attribute", f"an unset slot {cls.__name__}.{name} with a __getattr__")
        class_lookup(tx, cls, "__getattr__")
        if pending is None:
            guard_if_sourced(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, False)
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
        raw_store(tx, receiver, attrname, value)
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


def instance_has(tx, ov, name):
    """hasattr(ov, name) for a plain object from outside the frame, with the guard on the answer; None
    when only a full read can tell (a property, __getattr__: the caller reads and catches)."""
    obj, src = ov.obj, ov.source
    cls = type(obj)
    if has_class_edits(tx, cls, name):
        raise class_edit_break(cls, name)
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
        guard_if_sourced(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, answer)
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
            inst = instance_dict_of(obj)
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
        raise class_edit_break(cls, name)
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
    if _module_property(obj, name) and any(getattr(m, "switches_backend_flags", False) for m in tx.active_managers):
        # torch.backends.cudnn.enabled & co. inside a kernel-flag block: the block's value, not the entry
        # value a guard could pin (lookasides/backend_flags.py)
        raise GraphBreak("attribute", f"reading {obj.__name__}.{name} inside a kernel-flag block")
    try:
        real = getattr(obj, name)
    except AttributeError as e:
        if _guarded(tx, obj):                 # (trusted modules' attributes are not guarded at all)
            guard_if_sourced(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, False)
        raise GraphBreak("attribute error", f"AttributeError: {e}")
    except Exception as e:
        raise GraphBreak("attribute", f"reading .{name} raised {type(e).__name__}: {e}")
    if tx.ctx.recorder is not None and isinstance(obj, types.ModuleType):
        tx.ctx.recorder.record_module_attr(obj, name, real)
    return tx.ctx.wrap_attr(obj, src, name, real)


def _module_property(obj, name):
    """Is `obj.name` a property of a module subclass (torch.backends.cudnn.enabled and the like)?"""
    if not isinstance(obj, types.ModuleType):
        return False
    for klass in type(obj).__mro__:
        if klass is types.ModuleType:
            return False
        if name in klass.__dict__:
            return hasattr(type(klass.__dict__[name]), "__set__")
    return False


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
        guard_if_sourced(tx, "CONST_MATCH", PresenceSource(src, name) if src is not None else None, answer)
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
