"""Instance attributes of a dict-kind argument (a user dict subclass, OrderedDict, Counter): `d.name`,
`d.__dict__[...]`, hasattr, `d.name = v`, a property setter writing `self.__dict__`.

Why this exists: values/dicts/dict_kinds.py models such an argument as a DictValue only while its instance
__dict__ is empty (guarded at entry). What the frame then stores there goes through the attribute model
of values/objects/attribute_model.py on the real object (side effects replayed after the graph, later reads in the
frame see them), and `d.__dict__` is that model's view, as for any plain object.
"""
from ....errors import GraphBreak
from ..base import ObjectValue
from .dict_kinds import real_object
from ..objects.attribute_sources import ABSENT, mro_lookup
from ..objects.lookup_steps import DELETED, class_lookup, is_data_descriptor
from ..objects.instance_dict_views import instance_dict_value


def instance_attr(tx, d, name):
    """`d.name` / `d.__dict__` for a dict-kind argument's own attributes (its __dict__ was empty at entry,
    guarded): the frame's stores, the attribute model's view of its __dict__, or None (not one of them)."""
    real = real_object(tx, d)
    if real is None:
        return None
    if name == "__dict__":
        return instance_dict_value(tx, ObjectValue(real, d.source))
    pending = tx.ctx.side_effects.pending_attr(real, name)
    if pending is DELETED:
        raise GraphBreak("attribute error", f"AttributeError: '{d.kind.__name__}' object has no attribute {name!r}")
    return pending


def store_instance_attr(tx, d, name, value):
    """`d.name = value` on a dict-kind argument that can hold instance attributes: a property's setter runs
    (inlined), a plain name is an attribute store replayed after the graph. False: not such a store."""
    real = real_object(tx, d)
    if real is None or d.source is None:
        return False
    cls = type(real)
    if mro_lookup(cls, "__setattr__") is not object.__setattr__:
        return False                       # a class's own __setattr__: code to run
    found = class_lookup(tx, cls, name)
    if isinstance(found, property) and found.fset is not None:
        tx.inline(found.fset, None, [d, value], {})
        return True
    if found is not ABSENT and is_data_descriptor(found):
        return False
    tx.ctx.side_effects.store_attr(real, d.source, name, value, raw=True, in_dict=True)
    return True


def has_instance_attr(tx, d, name):
    """hasattr(d, name) for a dict-kind argument the frame stored attributes into, or None."""
    real = real_object(tx, d)
    pending = tx.ctx.side_effects.pending_attr(real, name) if real is not None else None
    return None if pending is None else pending is not DELETED
