"""Python operators on symbolic values: BINARY_OP, COMPARE_OP, IS_OP, CONTAINS_OP, UNARY_*.

One table maps each operator symbol to its `operator` function. Constants fold by calling it; any
tensor operand makes a graph node with the operator function as target (so the graph reads like the
source); lists, tuples and dicts follow Python's own rules symbolically.
"""
import dis
import operator
import types

import torch

from ...errors import GraphBreak
from ..dispatch import LOOKASIDES
from .tensors import ndarrays, tensor_subclasses
from .base import GENERIC, Const, DictValue, ObjectValue, SeqValue, SetValue, TensorValue
from .dicts.identity_hashed_keys import has_identity_keys, hashes_by_identity
from .protocol import CONST_TYPES, as_python, dict_key, truth, unpack_iterable
from .objects.user_dunders import is_user_object, user_binary_op
from .numbers.sym_values import SymValue

_NUMBER_TYPES = (int, float, bool)


def _specializable(a, b):
    """A symbolic number meets an operand that is neither a number nor a tensor: its value is needed."""
    return (isinstance(a, SymValue) or isinstance(b, SymValue)) and not any(isinstance(x, TensorValue) for x in (a, b))


def _specialized(a, b):
    return tuple(Const(x.as_python()) if isinstance(x, SymValue) else x for x in (a, b))


def _symbolic_operands(a, b):
    """Is this an operation on a symbolic number (values/numbers/sym_values.py) and plain numbers?"""
    return (isinstance(a, SymValue) or isinstance(b, SymValue)) and all(
        isinstance(x, SymValue) or isinstance(x, Const) and type(x.value) in _NUMBER_TYPES for x in (a, b))

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
          "<<": operator.lshift, ">>": operator.rshift, "&": operator.and_, "|": operator.or_,
          "^": operator.xor}
INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
           "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "@=": operator.imatmul,
           "<<=": operator.ilshift, ">>=": operator.irshift, "&=": operator.iand, "|=": operator.ior,
           "^=": operator.ixor}
COMPARE = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
           ">=": operator.ge}
UNARY = {"-": operator.neg, "+": operator.pos, "~": operator.invert}

# BINARY_OP's argument indexes this list of (name, symbol) in 3.11+
NB_SYMBOLS = [sym for _, sym in dis._nb_ops]

BINARY_SYMBOLS = {fn: sym for sym, fn in {**BINARY, **INPLACE}.items()}
COMPARE_SYMBOLS = {fn: sym for sym, fn in COMPARE.items()}


def _fold(fn, a, b):
    try:
        return Const(fn(a.value, b.value))
    except Exception as e:
        raise GraphBreak("constant op raised", f"{fn.__name__} on constants raised {type(e).__name__}: {e}")


def binary_op(tx, sym, a, b):
    fn = BINARY.get(sym) or INPLACE[sym]
    if isinstance(a, Const) and isinstance(b, Const):
        return _fold(fn, a, b)
    if ndarrays.numpy_involved(a, b):        # numpy arrays and scalars: numpy's rules (values/tensors/ndarrays.py)
        return ndarrays.BRIDGE.binary(tx, sym, a, b)
    out = user_binary_op(tx, sym, a, b)         # a user object's dunders (values/objects/user_dunders.py)
    if out is not None:
        return out
    if sym == "%" and isinstance(a, Const) and isinstance(a.value, str) and isinstance(b, (SeqValue, DictValue)):
        return _fold(fn, a, Const(as_python(b)))           # "%s and %s" % (x, y) of constants
    if _symbolic_operands(a, b) and sym not in ("@", "@="):
        if sym in INPLACE:
            fn = BINARY[sym[:-1]]            # numbers have no in-place operators
        return tx.ctx.graph.call_function(fn, (a, b), {})
    if _specializable(a, b):                 # `[x] * n`, "%d" % n: Python needs the number (guarded)
        return binary_op(tx, sym, *_specialized(a, b))
    if isinstance(a, TensorValue) or isinstance(b, TensorValue):
        if not all(isinstance(x, (TensorValue, Const, SymValue)) for x in (a, b)):
            raise GraphBreak("operator", f"{sym} between a tensor and {a if not isinstance(a, TensorValue) else b!r}")
        out = tensor_subclasses.operator_call(tx, fn, (a, b))      # a subclass's __torch_function__
        if out is not tensor_subclasses.NOT_DISPATCHED:
            return out
        if sym in INPLACE and not isinstance(a, TensorValue):
            fn = BINARY[sym[:-1]]            # `n += tensor` on a number: no __iadd__, so it is n + tensor
        out = tx.ctx.graph.call_function(fn, (a, b), {})
        if sym in INPLACE and isinstance(a, TensorValue):
            return a
        return out
    if isinstance(a, SeqValue):
        return _seq_binary(tx, sym, a, b)
    if isinstance(a, Const) and isinstance(b, SeqValue) and sym in ("*", "+"):
        if sym == "*":
            return _seq_binary(tx, sym, b, a)
    if isinstance(a, Const) and isinstance(b, SeqValue) and sym in ("+", "+=") and \
            type(a.value) in (tuple, list, torch.Size):
        # (1, 2) + tuple_of_values: the constant side as a sequence of constants (Size + tuple is a Size)
        kind = type(a.value)
        if b.kind is not kind and not (torch.Size in (kind, b.kind) and {kind, b.kind} <= {tuple, torch.Size}):
            raise GraphBreak("bad call", f"TypeError: can only concatenate {kind.__name__} (not "
                             f"\"{b.kind.__name__}\") to {kind.__name__}")
        out_kind = torch.Size if torch.Size in (kind, b.kind) else kind
        return SeqValue(out_kind, [Const(i) for i in a.value] + b.items)
    if isinstance(a, DictValue) and a.kind is not dict:       # Counter arithmetic (values/dicts/dict_kinds.py)
        from .dicts.dict_kinds import binary_op as dict_kind_binary
        out = dict_kind_binary(tx, sym, a, b)
        if out is not None:
            return out
    if isinstance(a, DictValue) and isinstance(b, DictValue) and sym in ("|", "|="):
        if sym == "|=":
            a.items.update(b.items)
            tx.ctx.side_effects.mutate_container(a)
            return a
        return DictValue({**a.items, **b.items})
    if isinstance(a, SetValue) and isinstance(b, SetValue) or _is_set_operands(a, b):
        return _set_binary(fn, a, b)
    return a.binary_op(tx, sym, b)


def _is_set_operands(a, b):
    """A set built in the frame with a constant (frozen)set, either way round."""
    return any(isinstance(x, SetValue) and isinstance(y, Const) and isinstance(y.value, (set, frozenset))
               for x, y in ((a, b), (b, a)))


def _set_binary(fn, a, b):
    if any(hashes_by_identity(i) for x in (a, b) if isinstance(x, SetValue) for i in x.items):
        return _identity_set_binary(fn, a, b)
    out = fn(as_python(a), as_python(b))
    if isinstance(out, frozenset):
        return Const(out)
    if isinstance(out, set):
        return SetValue([Const(x) for x in out])
    return Const(out)


def _identity_set_binary(fn, a, b):
    """|, &, -, ^ (and comparisons) of sets holding tensors: members by identity key (their order in the
    result is a real set's once it is rebuilt; iterating it in the frame is a break, values/protocol.py)."""
    values = {}
    keys = []
    for x in (a, b):
        if isinstance(x, SetValue):
            for i in x.items:
                values.setdefault(dict_key(i), i)
            keys.append({dict_key(i) for i in x.items})
        else:
            keys.append(set(x.value))
    out = fn(keys[0], keys[1])
    if isinstance(out, (set, frozenset)):
        return SetValue([values[k] if k in values else Const(k) for k in out])
    return Const(out)


def _seq_binary(tx, sym, a, b):
    if sym in ("+", "+="):
        if isinstance(b, SeqValue) and (b.kind is a.kind or sym == "+=" and a.kind is list):
            if sym == "+=" and a.kind is list:
                a.items.extend(b.items)
                tx.ctx.side_effects.mutate_container(a)
                return a
            return SeqValue(a.kind if a.kind in (tuple, list) else tuple, a.items + b.items)
        if isinstance(b, Const) and isinstance(b.value, (tuple, list)):
            return _seq_binary(tx, sym, a, SeqValue(type(b.value), [Const(x) for x in b.value]))
        if sym == "+=" and a.kind is list:
            a.items.extend(unpack_iterable(tx, b))
            tx.ctx.side_effects.mutate_container(a)
            return a
    if sym in ("*", "*=") and isinstance(b, Const) and isinstance(b.value, int):
        if sym == "*=" and a.kind is list:
            a.items[:] = a.items * b.value
            tx.ctx.side_effects.mutate_container(a)
            return a
        return SeqValue(a.kind if a.kind in (tuple, list) else tuple, a.items * b.value)
    if sym in ("==", "!="):
        pass
    raise GraphBreak("operator", f"{sym} on a {a.kind.__name__} and {b!r}")


def compare_op(tx, sym, a, b):
    if sym in ("is", "is not"):
        same = _same_object(a, b)
        return Const(same if sym == "is" else not same)
    if sym in ("in", "not in"):
        found = _contains(tx, b, a)
        return found if isinstance(found, TensorValue) else Const(found if sym == "in" else not found)
    out = a.rich_compare(tx, sym, a, b)
    if out is GENERIC:
        out = b.rich_compare(tx, sym, a, b)
    if out is not GENERIC:
        return out
    if is_user_object(a) or is_user_object(b):
        from .objects.new_objects import rich_compare
        return rich_compare(tx, sym, a, b)
    fn = COMPARE[sym]
    if isinstance(a, Const) and isinstance(b, Const):
        return _fold(fn, a, b)
    if sym in ("==", "!=") and isinstance(a, DictValue) and isinstance(b, DictValue) and \
            a.kind is dict and b.kind is dict and (has_identity_keys(a.items) or has_identity_keys(b.items)):
        same = _dicts_equal(tx, a, b)
        return Const(same if sym == "==" else not same)
    keys = _keys_compare(fn, a, b)              # d.keys() == other.keys() / a set: set comparisons
    if keys is not None:
        return keys
    if ndarrays.numpy_involved(a, b):
        return ndarrays.BRIDGE.binary(tx, sym, a, b)
    if _symbolic_operands(a, b):
        return tx.ctx.graph.call_function(fn, (a, b), {})
    if isinstance(a, TensorValue) or isinstance(b, TensorValue):
        if not all(isinstance(x, (TensorValue, Const, SymValue)) for x in (a, b)):
            if sym in ("==", "!=") and (isinstance(a, Const) and a.value is None or isinstance(b, Const) and b.value is None):
                return Const(sym == "!=")
            raise GraphBreak("operator", f"comparison {sym} of a tensor with {a!r} / {b!r}")
        out = tensor_subclasses.operator_call(tx, fn, (a, b))
        if out is not tensor_subclasses.NOT_DISPATCHED:
            return out
        return tx.ctx.graph.call_function(fn, (a, b), {})
    try:
        return Const(fn(as_python(a), as_python(b)))
    except GraphBreak:
        if sym in ("==", "!=") and type(a) is not type(b):
            return Const(sym == "!=")
        raise
    except Exception as e:
        raise GraphBreak("constant op raised", f"comparison raised {type(e).__name__}: {e}")


def _set_like_keys(v):
    """The keys as a Python set when v is a dict's keys view or a set of constants, else None."""
    from .containers.subscripts import DictViewValue
    if isinstance(v, DictViewValue) and v.kind == "keys":
        return set(v.dict_value.items)
    if isinstance(v, SetValue) and all(isinstance(i, Const) for i in v.items):
        return {i.value for i in v.items}
    if isinstance(v, Const) and isinstance(v.value, (set, frozenset, type({}.keys()))):
        return set(v.value)
    return None


def _keys_compare(fn, a, b):
    """A comparison where one side is a keys view and the other set-like: the views compare as sets
    (their keys are constants in the frame's model), else None."""
    from .containers.subscripts import DictViewValue
    if not any(isinstance(v, DictViewValue) and v.kind == "keys" for v in (a, b)):
        return None
    left, right = _set_like_keys(a), _set_like_keys(b)
    if left is None or right is None:
        return None
    return Const(fn(left, right))


def _dicts_equal(tx, a, b):
    """dict == dict as CPython compares them: the lengths, then each key of a looked up in b (identity
    keys by identity) and the two values compared with == unless they are one object."""
    if len(a.items) != len(b.items):
        return False
    for key, value in a.items.items():
        if key not in b.items:
            return False
        other = b.items[key]
        if _same_object(value, other):
            continue
        if not truth(tx, compare_op(tx, "==", value, other)):
            return False
    return True


def _same_object(a, b):
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return a.value is b.value
    if isinstance(a, ObjectValue) and isinstance(b, ObjectValue):
        return a.obj is b.obj
    if isinstance(a, Const) and isinstance(b, ObjectValue) or isinstance(a, ObjectValue) and isinstance(b, Const):
        x = a.value if isinstance(a, Const) else a.obj
        y = b.value if isinstance(b, Const) else b.obj
        return x is y
    if a.source is not None and a.source == b.source:
        return True
    return False


def _contains(tx, container, item):
    out = container.contains(tx, item)
    if out is not GENERIC:
        return out
    if isinstance(container, SetValue) and (hashes_by_identity(item) or
                                            any(hashes_by_identity(i) for i in container.items)):
        key = dict_key(item)          # a set looks a tensor up by its hash, id(t): never by value
        return any(dict_key(i) == key for i in container.items)
    if isinstance(container, (SeqValue, SetValue)):
        if isinstance(item, TensorValue):
            if any(i is item for i in container.items):
                return True
            raise GraphBreak("data-dependent", "`tensor in list` compares tensor values")
        for i in container.items:
            if isinstance(i, TensorValue):
                raise GraphBreak("data-dependent", "`x in list of tensors` compares tensor values")
            r = compare_op(tx, "==", i, item)
            if truth(tx, r):          # a symbolic number's comparison is decided and guarded here
                return True
        return False
    if isinstance(container, DictValue):
        return dict_key(item) in container.items
    if isinstance(container, Const):
        try:
            return as_python(item) in container.value
        except GraphBreak:
            raise
        except Exception as e:
            raise GraphBreak("constant op raised", f"`in` raised {type(e).__name__}: {e}")
    if isinstance(container, TensorValue):
        return tx.ctx.graph.call_method("__contains__", (container, item), {})
    if isinstance(container, ObjectValue) and type(container.obj) is dict and container.source is not None:
        return truth(tx, LOOKASIDES[dict.__contains__](tx, [container, item], {}))   # keys no DictValue holds
    if isinstance(container, ObjectValue) and type(container.obj) is types.MappingProxyType and \
            container.source is not None and isinstance(item, Const) and type(item.value) in (str, int):
        # `"k" in SomeClass.__dict__`: the class's own dict, answered now and guarded by its answer
        from ..source import MembershipSource
        found = item.value in container.obj
        tx.ctx.guards.add("CONST_MATCH", MembershipSource(container.source, item.value), found)
        return found
    if isinstance(container, ObjectValue) and type(container.obj) is frozenset and isinstance(item, Const) and \
            all(type(x) in CONST_TYPES for x in container.obj):
        return item.value in container.obj       # immutable, of constants: fixed by what fixed the object
    if isinstance(container, ObjectValue):     # an object whose class defines __contains__ in Python
        method = getattr(type(container.obj), "__contains__", None)
        if isinstance(method, types.FunctionType):
            return truth(tx, tx.call(ObjectValue(method), [container, item], {}))
    raise GraphBreak("operator", f"`in` on {container!r}")


def unary_op(tx, sym, a):
    if sym == "not":
        if isinstance(a, TensorValue):
            raise GraphBreak("data-dependent branch", "`not tensor` needs the tensor's value")
        return Const(not truth(tx, a))
    fn = UNARY[sym]
    if ndarrays.numpy_involved(a):
        return ndarrays.BRIDGE.unary(tx, sym, a)
    if isinstance(a, Const):
        try:
            return Const(fn(a.value))
        except Exception as e:
            raise GraphBreak("constant op raised", f"unary {sym} raised {type(e).__name__}: {e}")
    if isinstance(a, TensorValue):
        out = tensor_subclasses.operator_call(tx, fn, (a,))
        if out is not tensor_subclasses.NOT_DISPATCHED:
            return out
    if isinstance(a, (TensorValue, SymValue)):
        return tx.ctx.graph.call_function(fn, (a,), {})
    raise GraphBreak("operator", f"unary {sym} on {a!r}")
