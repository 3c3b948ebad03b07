"""torch's symbolic-shape helpers called from library code, answered by their documented meaning.

Why this exists: torch.nn, transformers and other libraries written for torch.compile call
`guard_or_true`, `guard_or_false`, `guard_size_oblivious`, `statically_known_true`, `sym_and`, `sym_eq`,
`expect_true`, `is_concrete_int`, `guard_int`, ... from torch.fx.experimental.symbolic_shapes on sizes
and flags. framejit never inlines torch.fx, so each was a graph break.

framejit's values are constants (static sizes) or SymValues (dynamic sizes: the example's SymInt of the
conversion's ShapeEnv plus its graph node). A compiled call must answer what the eager call answers, and
eagerly every size is a plain int: `guard_or_false(n == 0)` is `n == 0`, `statically_known_true(n == 3)`
is `n == 3`, `is_concrete_int(n)` is True. So each helper is answered as on the plain number:

* on constants, bool()/int() or the identity;
* on a SymValue, the predicates (`guard_*`, `guard_size_oblivious`, `expect_true`,
  `statically_known_true/false`) ask the SymBool the way a branch does: the ShapeEnv records the guard
  that keeps the answer, so other sizes get their own entry. A value computed from tensor data (an
  unbacked symbol) is a graph break, as any branch on it is: torch.compile's default answer of
  `guard_or_false` could differ from eager's;
* `is_concrete_int/bool/float` is True for a number of that kind (a size is an int when the code runs);
* `guard_int/float/scalar` is the number itself, guarded (it specializes the size, as int() does);
* `sym_and/sym_or/sym_eq` stay symbolic (the `&`, `|`, `==` of operator_rules.py).

Anything else (a tensor, an object) keeps the old graph break.
"""
import torch.fx.experimental.symbolic_shapes as symbolic_shapes

from ...errors import GraphBreak
from ..dispatch import lookaside
from ..values.base import Const, SeqValue
from ..values.numbers.sym_values import SymValue
from ..values.operator_rules import binary_op, compare_op


def _one(name, args, kwargs, extra=()):
    """The first argument of a call `name(a, ...)`; keyword arguments other than `extra` are refused."""
    if len(args) < 1 or set(kwargs) - set(extra) or len(args) > 1 + len(extra):
        raise GraphBreak("call", f"{name}() with unusual arguments")
    value = args[0]
    if not isinstance(value, (Const, SymValue)):
        raise GraphBreak("call", f"{name}() of {value!r} (not a number or a symbolic size)")
    return value


def _truth(tx, value):
    return bool(value.value) if isinstance(value, Const) else value.truth(tx)


def _guarded_truth(name):
    """guard_bool, guard_or_true/false, guard_size_oblivious, expect_true: the truth, guarded when symbolic."""
    def impl(tx, args, kwargs):
        return Const(_truth(tx, _one(name, args, kwargs, ("skip",))))
    return impl


def _statically_known(name, want):
    """statically_known_true / _false: eagerly, the plain number's truth (guarded when symbolic)."""
    def impl(tx, args, kwargs):
        return Const(_truth(tx, _one(name, args, kwargs)) is want)
    return impl


def _is_concrete(name, kind):
    """is_concrete_int / _bool / _float: eagerly every size is a plain number."""
    def impl(tx, args, kwargs):
        value = args[0] if len(args) == 1 and not kwargs else None
        if isinstance(value, Const):
            return Const(isinstance(value.value, kind) and not (kind is int and isinstance(value.value, bool)))
        if isinstance(value, SymValue):
            return Const(value.python_type() is kind)
        raise GraphBreak("call", f"{name}() of {value!r}")
    return impl


def _guard_number(name, kind):
    """guard_int / guard_float / guard_scalar: the Python number, guarded when symbolic."""
    def impl(tx, args, kwargs):
        value = _one(name, args, kwargs)
        number = value.value if isinstance(value, Const) else value.as_python()
        return Const(kind(number) if kind is not None else number)
    return impl


def _fold_with(name, symbol):
    """sym_and / sym_or: `&` / `|` over the arguments (symbolic ones stay symbolic)."""
    def impl(tx, args, kwargs):
        if kwargs or not args:
            raise GraphBreak("call", f"{name}() with unusual arguments")
        result = args[0]
        for other in args[1:]:
            result = binary_op(tx, symbol, result, other)
        return result
    return impl


def _sym_eq(tx, args, kwargs):
    if kwargs or len(args) != 2:
        raise GraphBreak("call", "sym_eq() with unusual arguments")
    a, b = args
    if isinstance(a, SeqValue) and isinstance(b, SeqValue):       # tuples, lists, torch.Size: item by item
        if len(a.items) != len(b.items):
            return Const(False)
        result = Const(True)
        for x, y in zip(a.items, b.items):
            result = binary_op(tx, "&", result, _sym_eq(tx, [x, y], {}))
        return result
    return compare_op(tx, "==", a, b)


_TABLE = {
    "guard_bool": _guarded_truth("guard_bool"),
    "guard_size_oblivious": _guarded_truth("guard_size_oblivious"),
    "expect_true": _guarded_truth("expect_true"),
    "guard_or_true": _guarded_truth("guard_or_true"),
    "guard_or_false": _guarded_truth("guard_or_false"),
    "statically_known_true": _statically_known("statically_known_true", True),
    "statically_known_false": _statically_known("statically_known_false", False),
    "is_concrete_int": _is_concrete("is_concrete_int", int),
    "is_concrete_bool": _is_concrete("is_concrete_bool", bool),
    "is_concrete_float": _is_concrete("is_concrete_float", float),
    "guard_int": _guard_number("guard_int", int),
    "guard_float": _guard_number("guard_float", float),
    "guard_scalar": _guard_number("guard_scalar", None),
    "sym_and": _fold_with("sym_and", "&"),
    "sym_or": _fold_with("sym_or", "|"),
    "sym_eq": _sym_eq,
}
for _name, _impl in _TABLE.items():
    _fn = getattr(symbolic_shapes, _name, None)
    if _fn is not None:
        lookaside(_fn)(_impl)
