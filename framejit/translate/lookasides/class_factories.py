"""Class factories called in the frame: `collections.namedtuple(...)` and `typing.NamedTuple(...)`.

Why this exists: code that makes a namedtuple class inside a function (`P = namedtuple("P", "a b")`
then `P(x, y)`) is a graph break at the factory, which is C-free Python that framejit cannot inline
(it execs source text). Made from constants, the class is a pure function of its arguments, so it is
made for real at translation (with the module name the frame would give it) and the frame's
instances are namedtuple SeqValues of it, rebuilt through it when they escape.

What differs from eager: Python makes a new class on every call; a cache entry keeps the one class it
made at translation, so instances from two calls have the same (equal-named) class.
"""
import collections
import typing

from ...errors import GraphBreak
from .builtins_table import LOOKASIDES
from ..values.base import ObjectValue
from ..values.protocol import as_python


def _factory(real):
    def impl(tx, args, kwargs):
        real_args = [as_python(a) for a in args]
        real_kwargs = {k: as_python(v) for k, v in kwargs.items()}
        if real is collections.namedtuple:
            real_kwargs.setdefault("module", tx.f_globals.get("__name__", "__main__"))
        try:
            cls = real(*real_args, **real_kwargs)
        except Exception as e:
            raise GraphBreak("constant call raised", f"{real.__name__}(...) raised {type(e).__name__}: {e}")
        if real is not collections.namedtuple:
            cls.__module__ = tx.f_globals.get("__name__", "__main__")
        return ObjectValue(cls)
    return impl


LOOKASIDES[collections.namedtuple] = _factory(collections.namedtuple)
LOOKASIDES[typing.NamedTuple] = _factory(typing.NamedTuple)
