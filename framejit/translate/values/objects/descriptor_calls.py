"""`descriptor.__get__(obj)` called by hand on a C-level attribute descriptor (`torch.Tensor.shape.__get__(x)`,
a slot's member descriptor): the same value as reading the attribute through the object.

Why this exists: code that works with descriptors directly (a lookup table of tensor properties, a
library reading a slot past a subclass override) called a method-wrapper framejit could not put in a
graph. When the descriptor is the one the object's class resolves for its name (checked statically, on
the class), calling its __get__ is `obj.<name>` and goes through the translator's attribute read, guards
included; `__get__(None, owner)` is the descriptor itself. Anything else stays a break.
"""
import inspect
import types

from ....errors import GraphBreak
from ..base import Const, ObjectValue
from ..protocol import python_type_of

_C_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


def is_descriptor_get(obj):
    """Is obj the bound `__get__` of a C-level getset or member descriptor?"""
    return type(obj).__name__ == "method-wrapper" and getattr(obj, "__name__", None) == "__get__" and \
        isinstance(getattr(obj, "__self__", None), _C_DESCRIPTORS)


def call_descriptor_get(tx, obj, args, kwargs):
    from ..attrs import get_attribute
    desc = obj.__self__
    if kwargs or not 1 <= len(args) <= 2:
        raise GraphBreak("bad call", "TypeError: __get__ expected 1 or 2 arguments")
    instance = args[0]
    if isinstance(instance, Const) and instance.value is None:
        return ObjectValue(desc)
    cls = python_type_of(instance)
    if not isinstance(cls, type) or not issubclass(cls, desc.__objclass__):
        raise GraphBreak("call", f"{desc.__objclass__.__name__}.{desc.__name__}.__get__ of a {getattr(cls, '__name__', cls)}")
    try:
        resolved = inspect.getattr_static(cls, desc.__name__)
    except AttributeError:
        resolved = None
    if resolved is not desc:
        raise GraphBreak("call", f"{desc.__name__}.__get__ on a {cls.__name__} whose class overrides {desc.__name__}")
    return get_attribute(tx, instance, desc.__name__)
