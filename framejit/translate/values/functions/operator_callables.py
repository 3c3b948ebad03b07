"""operator.itemgetter / attrgetter / methodcaller made in the frame, functools.reduce, operator.getitem.

The getters are small callables users pass as sort keys or map functions; they are kept symbolic
(OperatorCallable) so calling them applies subscription, attribute access or a method call to symbolic
values, and they rebuild as the real operator object when they escape the frame.
"""
import functools
import operator

from ....errors import GraphBreak
from ...dispatch import LOOKASIDES
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

    def children(self):
        return self.args + list(self.kwargs.values())

    def rebuild(self, rb):
        parts = [rb.expr(a) for a in self.args] + [f"{k}={rb.expr(v)}" for k, v in self.kwargs.items()]
        return f"{rb.ns.bind(self.factory)}({', '.join(parts)})"


def _make_getter(factory):
    def impl(tx, args, kwargs):
        if not args:
            raise GraphBreak("bad call", f"TypeError: {factory.__name__} expected 1 argument, got 0")
        return OperatorCallable(factory, args, kwargs)
    return impl


for _factory in (operator.itemgetter, operator.attrgetter, operator.methodcaller):
    LOOKASIDES[_factory] = _make_getter(_factory)


def _getitem(tx, args, kwargs):
    from ..containers.subscripts import getitem
    return getitem(tx, args[0], args[1])


def _reduce(tx, args, kwargs):
    fn, iterable = args[0], args[1]
    items = unpack_iterable(tx, iterable)
    if len(args) > 2:
        acc = args[2]
    elif items:
        acc, items = items[0], items[1:]
    else:
        raise GraphBreak("constant op raised", "TypeError: reduce() of empty iterable with no initial value")
    for item in items:
        acc = tx.call(fn, [acc, item], {})
    return acc


LOOKASIDES[operator.getitem] = _getitem
LOOKASIDES[functools.reduce] = _reduce
