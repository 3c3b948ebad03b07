"""Calling a class: constructing a value.

Namedtuples and torch.return_types become SeqValues of that kind; other classes are not constructed
symbolically yet (a graph break with the class name).
"""
from ..errors import GraphBreak
from .builtins_table import as_python
from .context import is_namedtuple_class, is_structseq_class
from .values import Const, SeqValue


def construct(tx, cls_value, cls, args, kwargs):
    if is_namedtuple_class(cls):
        fields = cls._fields
        values = list(args)
        defaults = getattr(cls, "_field_defaults", {})
        for f in fields[len(values):]:
            if f in kwargs:
                values.append(kwargs[f])
            elif f in defaults:
                values.append(Const(defaults[f]))
            else:
                raise GraphBreak("bad call", f"TypeError: {cls.__name__}() missing argument {f!r}")
        return SeqValue(cls, values)
    if is_structseq_class(cls):
        from .builtins_table import unpack_iterable
        return SeqValue(cls, unpack_iterable(tx, args[0]))
    raise GraphBreak("construct", f"constructing {cls.__qualname__} objects is not supported in a graph")
