"""Lookasides for standard-library helpers that model code calls on its hot path.

Why this exists: `slice(...)` is a class framejit does not construct generically, and
`inspect.signature(fn)` (transformers' apply_chunking_to_forward counts a callable's parameters on every
forward) is machinery framejit does not inline; on a callable fixed at translation time its answer is a
constant (its `.parameters` a dict of constants).
"""
import inspect
import types

from ..errors import GraphBreak
from .builtins_table import LOOKASIDES
from .values import Const, DictValue, MethodValue, ObjectValue, Value


def _real_callable(v):
    if isinstance(v, ObjectValue):
        return v.obj
    if isinstance(v, MethodValue) and isinstance(v.receiver, ObjectValue):
        real = getattr(v.receiver.obj, v.name)
        if isinstance(real, types.MethodType):
            return real
    raise GraphBreak("call", f"inspect.signature of {v!r}")


def _signature(tx, args, kwargs):
    if len(args) != 1 or kwargs:
        raise GraphBreak("call", "inspect.signature with options")
    try:
        sig = inspect.signature(_real_callable(args[0]))
    except (TypeError, ValueError) as e:
        raise GraphBreak("constant call raised", f"inspect.signature raised {type(e).__name__}: {e}")
    return SignatureValue(sig)


class SignatureValue(Value):
    """An inspect.Signature; `.parameters` reads as a dict of constant Parameters."""
    __slots__ = ("value",)

    def __init__(self, sig):
        super().__init__(None)
        self.value = sig

    def python_type(self):
        return inspect.Signature

    def rebuild(self, rb):
        return rb.ns.bind(self.value)

    def load_attr(self, tx, name):
        if name == "parameters":
            return DictValue({k: Const(p) for k, p in self.value.parameters.items()})
        from .context import wrap_unsourced
        return wrap_unsourced(getattr(self.value, name))


LOOKASIDES[inspect.signature] = _signature


def _slice(tx, args, kwargs):
    from .builtins_table import as_python
    if kwargs or not 1 <= len(args) <= 3:
        raise GraphBreak("bad call", "TypeError: slice expected 1 to 3 arguments")
    return Const(slice(*[as_python(a) for a in args]))


LOOKASIDES[slice] = _slice
