"""Namedtuple values' own attributes: _fields, _field_defaults, the _replace / _asdict / _make methods
(computed on the items), and methods a NamedTuple subclass defines in Python. A namedtuple value is a
SeqValue of its class; its fields are read by attrs.load_attr, and calling the class is classes.py.
"""
from ....errors import GraphBreak
from ..base import Const, DictValue, ObjectValue, SeqValue, Value
from ..objects.new_objects import HEAPTYPE, class_attribute
from ..protocol import unpack_iterable


def namedtuple_attr(tx, seq, name):
    """Attributes of a namedtuple value other than its fields (None: not handled here)."""
    kind = seq.kind
    if name == "_fields":
        return Const(kind._fields)
    if name == "_field_defaults":
        return DictValue({k: Const(v) for k, v in kind._field_defaults.items()})
    if name in ("_replace", "_asdict", "_make"):
        return NamedTupleMethod(seq, name)
    owner = next((k for k in kind.__mro__ if name in k.__dict__), None)
    if owner is None or not owner.__flags__ & HEAPTYPE:
        return None                          # tuple's own methods (count, index): the container path
    return class_attribute(tx, owner.__dict__[name], seq, False, ObjectValue(kind), name)


class NamedTupleMethod(Value):
    """p._replace / p._asdict / p._make, computed directly on the items."""
    __slots__ = ("seq", "name")

    def __init__(self, seq, name):
        super().__init__(None)
        self.seq = seq
        self.name = name

    def call(self, tx, args, kwargs):
        seq, kind = self.seq, self.seq.kind
        if self.name == "_asdict":
            return DictValue(dict(zip(kind._fields, seq.items)))
        if self.name == "_make":
            items = unpack_iterable(tx, args[0])
            if len(items) != len(kind._fields):
                raise GraphBreak("bad call", f"TypeError: Expected {len(kind._fields)} arguments, got {len(items)}")
            return SeqValue(kind, items)
        unknown = [k for k in kwargs if k not in kind._fields]
        if args or unknown:
            raise GraphBreak("bad call", f"ValueError: Got unexpected field names: {unknown!r}")
        return SeqValue(kind, [kwargs.get(f, v) for f, v in zip(kind._fields, seq.items)])

    def rebuild_parts(self):
        return [self.seq]

    def rebuild(self, rb):
        return f"getattr({rb.expr(self.seq)}, {self.name!r})"
