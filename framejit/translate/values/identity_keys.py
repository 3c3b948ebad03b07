"""Dict keys and set members that hash by identity: tensors, and objects the frame made of a class that
keeps object's __hash__ and __eq__.

Why this exists: a DictValue keys its items by the real Python key (a constant) and a SetValue holds
constants, so `{a: 1}` with a tensor `a` (an optimizer's `{param: state}`, a set of seen tensors) had no
key to use. torch.Tensor.__hash__ is `id(self)`: two live tensors never hash alike, so a lookup finds a
tensor key exactly when it is the same object, and never calls Tensor.__eq__ (which would compare
values). In the translator one real object is one Value (inputs are wrapped once per object, an op that
hands back its input gives that input's Value, graph.builder), so the Value's identity stands for the
object's: `IdentityKey(value)` is a real hashable key that is equal only to a key of the same Value.

`dict_key(v)` is the key any dict/set operation uses for a Value; `key_value(k)` gives back the Value a
key stands for (iteration, `popitem`, rebuilding the dict after the graph).
"""
import torch

from .base import Const, TensorValue


class IdentityKey:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return id(self.value)

    def __eq__(self, other):
        return isinstance(other, IdentityKey) and other.value is self.value

    def __repr__(self):
        return f"<identity key {self.value!r}>"


def hashes_by_identity(v):
    """Does the object v stands for hash and compare by identity (so v's own identity decides)?"""
    if isinstance(v, TensorValue):
        cls = v.python_type()
        return cls.__hash__ is torch.Tensor.__hash__
    if getattr(v, "made_in_frame", False) and hasattr(v, "cls"):     # a user object made in the frame
        return v.cls.__hash__ is object.__hash__ and v.cls.__eq__ is object.__eq__
    return False


def dict_key(v):
    """The real key a dict or set of the frame files v under."""
    if hashes_by_identity(v):
        return IdentityKey(v)
    from .protocol import as_python       # protocol imports this module (as_python of such a dict)
    return as_python(v)


def key_value(key):
    """The Value a key of a DictValue (or a dedupe key) stands for."""
    return key.value if type(key) is IdentityKey else Const(key)


def has_identity_keys(d):
    return any(type(k) is IdentityKey for k in d)
