"""The Python protocol of user objects, whether made in the frame or passed in: len(), truth, iteration,
and the arithmetic dunders with their reflected forms.

Why this exists: objects the frame makes (NewObject) answered these through their class's Python
methods, but an object from outside the frame (an ObjectValue of a plain Python class: transformers'
`DynamicCache` handed to every layer, a user's running-average object) broke at `len(cache)`,
`if cache:`, `for layer in cache`, `total + stats`. The same rules serve both: the class's method is
looked up (guarded, objects.lookup) and inlined; `a + b` asks `a.__add__` then `b.__radd__` (the right
operand first when its class is a subclass of the left one's that overrides the reflected method), `+=`
asks `__iadd__` first; a builtin left operand (a number, a tensor) does not know a user class, so its
answer is NotImplemented and the user class's reflected method decides.
"""
import types

from ....errors import GraphBreak
from ..base import Const, IteratorValue, ObjectValue, TensorValue
from .new_objects import BINARY_DUNDERS, MISSING, NewObject, is_plain_instance, lookup
from ..protocol import USER_OBJECTS, python_type_of, truth


def is_user_object(v):
    if isinstance(v, NewObject):
        return True
    return isinstance(v, ObjectValue) and is_plain_instance(v.obj) and \
        type(v.obj) is not types.SimpleNamespace


def user_class(v):
    return python_type_of(v)       # a NewObject: its class; an ObjectValue: its object's type


def _method(tx, v, name, what):
    """The Python function `name` of v's class (guarded lookup); GraphBreak when it is missing or C."""
    fn = lookup(tx, user_class(v), name)
    if isinstance(fn, types.FunctionType):
        return fn
    if fn is MISSING:
        raise GraphBreak("bad call", f"TypeError: {what} of a '{user_class(v).__name__}' object is not supported")
    raise GraphBreak("method", f"{user_class(v).__name__}.{name} is not Python code")


def user_length(tx, v):
    out = tx.inline(_method(tx, v, "__len__", "len()"), None, [v], {})
    if not isinstance(out, Const) or type(out.value) is not int:
        raise GraphBreak("len", f"{user_class(v).__name__}.__len__ returned {out!r}")
    return out.value


def user_truth(tx, v):
    """bool(v): __bool__, else __len__() != 0, else True."""
    for name in ("__bool__", "__len__"):
        if lookup(tx, user_class(v), name) is not MISSING:
            out = tx.inline(_method(tx, v, name, "truth value"), None, [v], {})
            if name == "__bool__" and not (isinstance(out, Const) and type(out.value) is bool):
                raise GraphBreak("truth", f"{user_class(v).__name__}.__bool__ returned {out!r}")
            return truth(tx, out)
    return True


def user_iterate(tx, v):
    """iter(v) through the class's Python __iter__ (a generator method gives a lazily run generator)."""
    out = tx.inline(_method(tx, v, "__iter__", "iter()"), None, [v], {})
    if isinstance(out, IteratorValue) or out.is_lazy_iterator():
        return out
    raise GraphBreak("iterate", f"{user_class(v).__name__}.__iter__ returned {out!r}")


def _not_implemented(v):
    return isinstance(v, Const) and v.value is NotImplemented or isinstance(v, ObjectValue) and v.obj is NotImplemented


def user_binary_op(tx, sym, a, b):
    """`a <sym> b` when either operand is a user object, as Python evaluates it; None when neither is."""
    left_user, right_user = is_user_object(a), is_user_object(b)
    if not (left_user or right_user):
        return None
    inplace = sym.endswith("=")
    name = BINARY_DUNDERS.get(sym[:-1] if inplace else sym)
    if name is None:
        raise GraphBreak("operator", f"{sym} on a user object")
    reflected = "__r" + name[2:]
    if inplace and left_user:
        fn = lookup(tx, user_class(a), "__i" + name[2:])
        if fn is not MISSING:
            if not isinstance(fn, types.FunctionType):
                raise GraphBreak("method", f"{user_class(a).__name__}.__i{name[2:]} is not Python code")
            out = tx.inline(fn, None, [a, b], {})
            if not _not_implemented(out):
                return out
    order = [(a, name, b), (b, reflected, a)]
    if left_user and right_user and user_class(b) is not user_class(a) and \
            issubclass(user_class(b), user_class(a)) and \
            lookup(tx, user_class(b), reflected) is not lookup(tx, user_class(a), reflected):
        order.reverse()
    for receiver, method, other in order:
        if not is_user_object(receiver):
            if isinstance(receiver, TensorValue) and hasattr(user_class(other), "__torch_function__"):
                raise GraphBreak("operator", f"{sym} between a tensor and a {user_class(other).__name__} "
                                 "with __torch_function__")
            if isinstance(receiver, TensorValue) or isinstance(receiver, Const) and \
                    type(receiver.value).__module__ == "builtins":
                continue             # a number, a string, a tensor: NotImplemented for a user class
            raise GraphBreak("operator", f"{sym} between {a!r} and {b!r}")
        fn = lookup(tx, user_class(receiver), method)
        if fn is MISSING:
            continue
        if not isinstance(fn, types.FunctionType):
            raise GraphBreak("method", f"{user_class(receiver).__name__}.{method} is not Python code")
        out = tx.inline(fn, None, [receiver, other], {})
        if not _not_implemented(out):
            return out
    raise GraphBreak("bad call", f"TypeError: unsupported operand type(s) for {sym}")


USER_OBJECTS.update(is_user_object=is_user_object, truth=user_truth, iterate=user_iterate)
