"""Lookasides for standard-library helpers that model code calls on its hot path.

Why this exists: `inspect.signature(fn)` (transformers' apply_chunking_to_forward counts a callable's
parameters on every forward) is C-and-Python machinery framejit does not inline; on a callable that is
fixed at translation time its answer is a constant.
"""
import inspect
import types

from ..errors import GraphBreak
from .builtins_table import LOOKASIDES
from .values import Const, MethodValue, ObjectValue


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
        return Const(inspect.signature(_real_callable(args[0])))
    except (TypeError, ValueError) as e:
        raise GraphBreak("constant call raised", f"inspect.signature raised {type(e).__name__}: {e}")


LOOKASIDES[inspect.signature] = _signature
