"""object's own attribute protocol and constructors called by name in the frame (`type.__call__(cls, ...)`, `object.__setattr__(self,
k, v)`, `object.__new__(cls)`, `super()`, `tuple.__new__(cls, items)`, `object.__getattribute__`): the
attribute model and the user-object kinds answer them (values/objects/, values/attrs.py).
"""
from ..dispatch import LOOKASIDES
from ..values import attrs
from ..values.objects import class_calls, new_objects

OBJECT_PROTOCOL = {
    object.__setattr__: new_objects.object_setattr_lookaside,
    object.__delattr__: new_objects.object_delattr_lookaside,
    object.__init__: new_objects.object_init_lookaside,
    object.__new__: new_objects.object_new_lookaside,
    super: new_objects.super_lookaside,
    object.__getattribute__: attrs.object_getattribute_lookaside,
    tuple.__new__: class_calls.tuple_new_lookaside,
    type.__call__: class_calls.type_call,           # super().__call__(...) in a metaclass __call__
}
LOOKASIDES.update(OBJECT_PROTOCOL)
