"""operator.itemgetter / attrgetter / methodcaller made in the frame, functools.reduce, operator.getitem.

The getters are small callables users pass as sort keys or map functions; they are kept symbolic
(OperatorCallable) so calling them applies subscription, attribute access or a method call to symbolic
values, and they rebuild as the real operator object when they escape the frame.
"""
import operator

from ....errors import GraphBreak
from ..attrs import get_attribute
from ..base import SeqValue, Value
from ..protocol import as_python, unpack_iterable


class OperatorCallable(Value):
    __slots__ = ("factory", "args", "kwargs")

    def __init__(self, factory, args, kwargs):
        super().__init__(None)
        self.factory = factory        # operator.itemgetter / attrgetter / methodcaller
        self.args = list(args)
        self.kwargs = dict(kwargs)

    def python_type(self):
        return self.factory

    def call(self, tx, args, kwargs):
        from ..containers.subscripts import getitem
        if len(args) != 1 or kwargs:
            raise GraphBreak("bad call", f"TypeError: {self.factory.__name__} expects one argument")
        (obj,) = args
        if self.factory is operator.methodcaller:
            name = as_python(self.args[0])
            return tx.call_method(obj, name, self.args[1:], self.kwargs)
        if self.factory is operator.itemgetter:
            values = [getitem(tx, obj, key) for key in self.args]
        else:
            values = []
            for dotted in self.args:
                v = obj
                for part in as_python(dotted).split("."):
                    v = get_attribute(tx, v, part)
                values.append(v)
        return values[0] if len(values) == 1 else SeqValue(tuple, values)

    def rebuild_parts(self):
        return self.args + list(self.kwargs.values())

    def rebuild(self, rb):
        parts = [rb.expr(a) for a in self.args] + [f"{k}={rb.expr(v)}" for k, v in self.kwargs.items()]
        return f"{rb.ns.bind(self.factory)}({', '.join(parts)})"
