"""A function bound to a symbolic receiver: `obj.method` read on an object the frame reaches, before it
is called (calling it passes the receiver first; a Python function is inlined).
"""
import types

from ....errors import GraphBreak
from ..base import Const, ObjectValue, Value


class BoundMethod(Value):
    """`func` bound to `receiver` (a Value): calling it passes the receiver first."""
    __slots__ = ("func", "receiver")

    def __init__(self, func, receiver):
        super().__init__(None)
        self.func = func
        self.receiver = receiver

    def python_type(self):
        return types.MethodType if isinstance(self.func, types.FunctionType) else types.BuiltinMethodType

    def __repr__(self):
        return f"BoundMethod({getattr(self.func, '__qualname__', self.func)})"

    def call(self, tx, args, kwargs):
        if isinstance(self.func, types.FunctionType):
            return tx.inline(self.func, None, [self.receiver, *args], kwargs or {})
        return tx.call(ObjectValue(self.func), [self.receiver, *args], kwargs or {})

    def load_attr(self, tx, name):
        if name == "__self__":
            return self.receiver
        if name == "__func__":
            return ObjectValue(self.func)
        if name in ("__name__", "__qualname__", "__doc__", "__module__"):
            return Const(getattr(self.func, name))
        raise GraphBreak("attribute", f"attribute {name!r} of a bound method")

    def rebuild_parts(self):
        return [self.receiver]

    def rebuild(self, rb):
        return f"{rb.ns.bind(self.func)}.__get__({rb.expr(self.receiver)})"
