"""Dict keys and set members that hash by identity: tensors, and objects the frame made of a class that
keeps object's __hash__ and __eq__.

Why this exists: a DictValue keys its items by the real Python key (a constant) and a SetValue holds
constants, so `{a: 1}` with a tensor `a` (an optimizer's `{param: state}`, a set of seen tensors) had no
key to use. torch.Tensor.__hash__ is `id(self)`: two live tensors never hash alike, so a lookup finds a
tensor key exactly when it is the same object, and never calls Tensor.__eq__ (which would compare
values). In the translator one real object is one Value (inputs are wrapped once per object, an op that
hands back its input gives that input's Value, graph.builder), so the Value's identity stands for the
object's: `IdentityKey(value)` is a real hashable key that is equal only to a key of the same Value.

`protocol.dict_key(v)` is the key any dict/set operation uses for a Value; `key_value(k)` gives back the
Value a key stands for (iteration, `popitem`, rebuilding the dict after the graph: an object from
outside the frame is keyed by its real identity, and rebuilt from its Source, never baked in).
"""
import torch

from ..base import Const, IdentityKey, ObjectValue, TensorValue   # noqa: F401  (IdentityKey: its home is base.py)


def _identity_class(cls):
    return cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__


def hashes_by_identity(v):
    """Does the object v stands for hash and compare by identity (so its identity decides)?"""
    if isinstance(v, TensorValue):
        return v.python_type().__hash__ is torch.Tensor.__hash__
    if v.made_in_frame:                     # a user object made in the frame (NewObject)
        return _identity_class(v.cls)
    if isinstance(v, ObjectValue):        # a module, a plain user object, a function from outside
        return _identity_class(type(v.obj))
    return False


def identity_key(v):
    """The IdentityKey of a Value for which hashes_by_identity(v) holds."""
    return IdentityKey(v, v.obj if isinstance(v, ObjectValue) else v)


def key_value(key):
    """The Value a key of a DictValue (or a dedupe key) stands for."""
    return key.value if type(key) is IdentityKey else Const(key)


def has_identity_keys(d):
    return any(type(k) is IdentityKey for k in d)


def has_tensor_keys(d):
    """Keys that are graph tensors (a graph argument or a traced body would need them as values)."""
    return any(type(k) is IdentityKey and isinstance(k.value, TensorValue) for k in d)
