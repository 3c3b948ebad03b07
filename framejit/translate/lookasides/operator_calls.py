"""The operator module's functions (and functools.reduce) called in the frame: the same rules as the
operators themselves (values/operator_rules.py), the getters as values of their own
(values/functions/operator_callables.py).
"""
import functools
import operator

from ...errors import GraphBreak
from ..dispatch import LOOKASIDES
from ..values.base import Const
from ..values.containers.subscripts import getitem, setitem
from ..values.functions.operator_callables import OperatorCallable
from ..values.numbers.sym_values import SymValue
from ..values.operator_rules import BINARY_SYMBOLS, COMPARE_SYMBOLS, binary_op, compare_op, unary_op
from ..values.protocol import truth, unpack_iterable


def _install_operator_lookasides():
    for fn, sym in BINARY_SYMBOLS.items():
        LOOKASIDES[fn] = (lambda s: lambda tx, args, kwargs: binary_op(tx, s, args[0], args[1]))(sym)
    for fn, sym in COMPARE_SYMBOLS.items():
        LOOKASIDES[fn] = (lambda s: lambda tx, args, kwargs: compare_op(tx, s, args[0], args[1]))(sym)
    for fn, sym in ((operator.neg, "-"), (operator.pos, "+"), (operator.invert, "~"), (operator.not_, "not")):
        LOOKASIDES[fn] = (lambda s: lambda tx, args, kwargs: unary_op(tx, s, args[0]))(sym)
    LOOKASIDES[operator.truth] = lambda tx, args, kwargs: Const(truth(tx, args[0]))
    LOOKASIDES[operator.contains] = lambda tx, args, kwargs: compare_op(tx, "in", args[1], args[0])
    LOOKASIDES[operator.is_] = lambda tx, args, kwargs: compare_op(tx, "is", args[0], args[1])
    LOOKASIDES[operator.is_not] = lambda tx, args, kwargs: compare_op(tx, "is not", args[0], args[1])
    LOOKASIDES[operator.index] = _operator_index


def _operator_index(tx, args, kwargs):
    """operator.index(v) (torch's containers' _get_abs_string_index calls it): an int constant or a symbolic int
    is its own answer; anything else answers from its real value or raises TypeError as Python does."""
    if len(args) != 1 or kwargs:
        raise GraphBreak("bad call", "TypeError: index() takes exactly one argument")
    v = args[0]
    if isinstance(v, SymValue) and v.python_type() is int:
        return v
    if isinstance(v, Const):
        try:
            return Const(operator.index(v.value))
        except TypeError as e:
            raise GraphBreak("bad call", f"TypeError: {e}")
    raise GraphBreak("operator", f"operator.index() of {v!r}")




def _make_getter(factory):
    def impl(tx, args, kwargs):
        if not args:
            raise GraphBreak("bad call", f"TypeError: {factory.__name__} expected 1 argument, got 0")
        return OperatorCallable(factory, args, kwargs)
    return impl


for _factory in (operator.itemgetter, operator.attrgetter, operator.methodcaller):
    LOOKASIDES[_factory] = _make_getter(_factory)


def _getitem(tx, args, kwargs):
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


def _setitem_call(tx, args, kwargs):
    """operator.setitem(obj, key, value), as `obj[key] = value` (a subclass's __torch_function__ calls
    Tensor.__setitem__ that way: values/tensors/tensor_subclasses.py)."""
    if len(args) != 3 or kwargs:
        raise GraphBreak("bad call", "TypeError: setitem expected 3 arguments")
    setitem(tx, *args)
    return Const(None)


LOOKASIDES.setdefault(operator.setitem, _setitem_call)


_install_operator_lookasides()
