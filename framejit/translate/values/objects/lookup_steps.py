"""The steps of attribute lookup every part of the attribute model shares (objects/attribute_model.py reads,
writes and deletes; objects/instance_dict_views.py is `obj.__dict__`): the guarded class lookup, the instance
__dict__ of a real object, a raw store into it, and the markers of a pending delete and of a missing key.
"""
import types

from ....errors import GraphBreak
from ...source import fixed_source
from .attribute_sources import ClassLookupSource, mro_lookup


HEAPTYPE = 1 << 9


MISSING = object()


# what a pending attribute write is when the frame deleted the attribute (SideEffects.attrs)
DELETED = type("Deleted", (), {"__repr__": lambda self: "DELETED", "__slots__": ()})()


def inline(tx, fn, args, kwargs=None):
    return tx.inline(fn, None, list(args), kwargs or {})


def is_new_object(value):
    """Is value an instance of a user class made in the frame (objects.py's NewObject)?"""
    return value.made_in_frame


def is_data_descriptor(found):
    t = type(found)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def is_user_class(cls):
    return isinstance(cls, type) and bool(cls.__flags__ & HEAPTYPE)


def class_source(cls):
    """A Source naming class `cls` itself (guards on what its MRO holds need no path to it)."""
    return fixed_source(cls, cls.__qualname__)


def class_lookup(tx, cls, name, after=None):
    """mro_lookup(cls, name, after), guarded: what the frame does with an instance of a user class depends
    on the class's attributes, which can change between calls (builtin classes cannot). A name the frame
    itself changed on one of the classes is a graph break (the read then runs after the write)."""
    if has_class_edits(tx, cls, name):
        raise class_edit_break(cls, name)
    found = mro_lookup(cls, name, after)
    if cls.__flags__ & HEAPTYPE:
        start = class_source(after) if after is not None else None
        tx.ctx.guards.add("ID_MATCH", ClassLookupSource(class_source(cls), name, start), found)
    return found


def guard_if_sourced(tx, kind, source, expected):
    if source is not None:
        tx.ctx.guards.add(kind, source, expected)


def instance_dict_of(obj):
    try:
        d = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return d if type(d) is dict else None


def has_class_edits(tx, cls, name):
    """Did the frame store or delete `name` on cls or a base class?"""
    attrs = tx.ctx.side_effects.attrs
    return any((id(k), name) in attrs for k in cls.__mro__)


def class_edit_break(cls, name):
    return GraphBreak("attribute", f"reading {cls.__name__}.{name} after the frame changed it on the class")


def raw_store(tx, ov, name, value):
    if ov.source is None:
        raise GraphBreak("store attr", f"setting .{name} on an object framejit cannot reach")
    ov.edited = True
    tx.ctx.side_effects.store_attr(ov.obj, ov.source, name, value, raw=True,
                                   in_dict=not isinstance(mro_lookup(type(ov.obj), name), types.MemberDescriptorType))
