"""What the frame does with tensor subclass values besides running torch operations on them.

Why this exists: values/tensors/tensor_subclasses.py traces the operations that go through __torch_function__;
a subclass is also a Python class the frame uses directly: it makes instances (`x.as_subclass(Sub)`,
`torch.Tensor._make_subclass(Sub, t)`, `Sub(t)` through Sub's own `__new__`), calls the methods and
reads the properties and class attributes Sub defines in Python, reads an input's instance attributes,
and iterates over instances (Tensor.__iter__ does not dispatch itself, its `dim()` and `unbind(0)` do).
Each is translated here as eager runs it; what the graph cannot answer as eagerly (the autograd identity
of a subclass input, whose graph stand-in is a plain alias; state written on an instance) is a break.
"""
import inspect
import types

import torch

from ....errors import GraphBreak
from ...source import AttrSource
from ..base import Const, IteratorValue, MethodValue, ObjectValue, SeqValue, TensorValue
from ..protocol import TENSOR_SUBCLASS_ITERATION, wrap_unsourced
from .tensor_subclasses import (NOT_DISPATCHED, any_overloaded, real_input, tagged, torch_function_call,
                                torch_function_off, unsupported_reason, user_attribute)


def _class_of(v):
    obj = v.value if isinstance(v, Const) else getattr(v, "obj", None)
    if not isinstance(obj, type):
        raise GraphBreak("tensor subclass", f"a class was expected, got {v!r}")
    return obj


def as_subclass(tx, t, args, kwargs):
    """x.as_subclass(cls): an alias of x (eagerly AliasBackward) that is an instance of cls."""
    given = [*args, *kwargs.values()]
    if len(given) != 1 or set(kwargs) - {"cls"}:
        raise GraphBreak("bad call", "as_subclass takes one class")
    cls = _class_of(given[0])
    if not issubclass(cls, torch.Tensor):
        raise GraphBreak("bad call", f"TypeError: as_subclass of {cls.__qualname__}, not a Tensor subclass")
    reason = unsupported_reason(cls)
    if reason is not None:
        raise GraphBreak("tensor subclass", reason)
    with torch_function_off(tx.ctx):
        alias = tx.ctx.graph.call_function(torch.ops.aten.alias.default, (t,), {})
    return tagged(alias, None if cls is torch.Tensor else cls)


def make_subclass(tx, args, kwargs):
    """torch.Tensor._make_subclass(cls, data, require_grad=False): a detached alias of data that is a cls."""
    names = ("cls", "data", "require_grad")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    if set(bound) - set(names) or "cls" not in bound or not isinstance(bound.get("data"), TensorValue):
        raise GraphBreak("tensor subclass", "_make_subclass with arguments other than (cls, data, require_grad)")
    cls = _class_of(bound["cls"])
    reason = unsupported_reason(cls)
    if reason is not None:
        raise GraphBreak("tensor subclass", reason)
    grad = bound.get("require_grad", Const(False))
    if not isinstance(grad, Const):
        raise GraphBreak("tensor subclass", "_make_subclass with a require_grad computed in the graph")
    with torch_function_off(tx.ctx):
        out = tx.ctx.graph.call_method("detach", (bound["data"],), {})
        if grad.value:
            out = tx.call_method(out, "requires_grad_", [Const(True)], {})
    return tagged(out, None if cls is torch.Tensor else cls)



# Tensor's methods written in Python that do not dispatch to __torch_function__ themselves (their inner
# calls do): probing them would see the first inner call only
_NO_DISPATCH_OF_THEIR_OWN = frozenset(
    n for n, f in vars(torch.Tensor).items() if isinstance(f, types.FunctionType) and not hasattr(f, "__wrapped__")
    and not any("torch_function" in name for name in f.__code__.co_names))


def subclass_method(tx, t, name, args, kwargs):
    """t.name(...) on a subclass value: a method the subclass defines in Python is inlined; a Tensor
    method goes through __torch_function__. NOT_DISPATCHED: translate it as a plain tensor method."""
    if name == "__iter__" and not args and not kwargs and any_overloaded(tx, [t]):
        return IteratorValue(iterate(tx, t))
    if name in _NO_DISPATCH_OF_THEIR_OWN and any_overloaded(tx, [t]):
        raise GraphBreak("tensor subclass", f"Tensor.{name} on a {t.cls.__qualname__} (torch's Python code, whose "
                         "inner calls dispatch)")
    found = user_attribute(t.cls, name, tx)
    if found is not None:
        _owner, attr = found
        if isinstance(attr, staticmethod):
            return tx.call(ObjectValue(attr.__func__), list(args), kwargs)
        if isinstance(attr, classmethod):
            return tx.inline(attr.__func__, None, [ObjectValue(t.cls), *args], kwargs)
        if isinstance(attr, types.FunctionType):
            return tx.inline(attr, None, [t, *args], kwargs)
        raise GraphBreak("tensor subclass", f"calling {t.cls.__qualname__}.{name}")
    return torch_function_call(tx, [t, *args, *kwargs.values()],
                               lambda real: getattr(real(t), name)(*map(real, args),
                                                                   **{k: real(v) for k, v in kwargs.items()}))


# what the graph's plain alias of a subclass input answers differently from the input itself
_ALIAS_DIFFERS = {"is_leaf", "grad", "grad_fn", "_base", "_is_view", "retain_grad", "register_hook", "backward"}


def subclass_attr(tx, t, name):
    """t.name on a subclass value, or NOT_DISPATCHED (a Tensor attribute with dispatch off)."""
    if name == "__class__":
        return NOT_DISPATCHED
    if name in _ALIAS_DIFFERS and t.source is not None and t.node.op == "placeholder":
        raise GraphBreak("tensor subclass", f".{name} of a {t.cls.__qualname__} input (the graph holds a plain "
                         "alias of it, whose autograd identity differs)")
    found = user_attribute(t.cls, name, tx)
    if found is not None:
        _owner, attr = found
        if isinstance(attr, property):
            if attr.fget is None or not isinstance(attr.fget, types.FunctionType):
                raise GraphBreak("tensor subclass", f"property {t.cls.__qualname__}.{name}")
            return tx.inline(attr.fget, None, [t], {})
        if isinstance(attr, (types.FunctionType, staticmethod, classmethod)):
            return MethodValue(t, name)
        if hasattr(type(attr), "__get__"):
            raise GraphBreak("tensor subclass", f"descriptor {t.cls.__qualname__}.{name}")
    real = real_input(t)
    if real is not None and name in getattr(real, "__dict__", {}):
        return tx.ctx.wrap(real.__dict__[name], AttrSource(t.source, name))
    if found is not None:
        return wrap_unsourced(found[1])
    if not hasattr(torch.Tensor, name):
        raise GraphBreak("tensor subclass", f"attribute {name!r} of a {t.cls.__qualname__} the graph made "
                         "(its instance attributes are not modelled)")
    return torch_function_call(tx, [t], lambda real: getattr(real(t), name))




def iterate(tx, t):
    """The items of `for row in x` on a subclass value, or None with dispatch off. Tensor.__iter__ does not
    dispatch itself (gh-54457): its `self.dim()` and `self.unbind(0)` do, so the rows are the subclass's."""
    if not any_overloaded(tx, [t]):
        return None
    ndim = tx.call_method(t, "dim", [], {})
    if isinstance(ndim, Const) and ndim.value == 0:
        raise GraphBreak("iterate tensor", "TypeError: iteration over a 0-d tensor")
    rows = tx.call_method(t, "unbind", [Const(0)], {})
    if not isinstance(rows, SeqValue):
        raise GraphBreak("tensor subclass", f"{t.cls.__qualname__}'s unbind gave {rows!r} to iterate over")
    return list(rows.items)


TENSOR_SUBCLASS_ITERATION.append(iterate)


def constructible(cls):
    """A tensor subclass whose instances the frame makes with `cls(...)` through a __new__ in Python."""
    if not (isinstance(cls, type) and issubclass(cls, torch.Tensor)) or cls.__module__.startswith("torch."):
        return False
    found = user_attribute(cls, "__new__")
    return found is not None and isinstance(found[1], staticmethod) and \
        isinstance(found[1].__func__, types.FunctionType) and unsupported_reason(cls) is None


def construct(tx, cls, args, kwargs):
    """cls(*args, **kwargs): its __new__ inlined (`torch.Tensor._make_subclass(cls, data)` and the like),
    then its __init__ when it defines one in Python and __new__ gave a cls."""
    new = user_attribute(cls, "__new__")[1].__func__
    made = tx.inline(new, None, [ObjectValue(cls), *args], kwargs)
    if isinstance(made, TensorValue) and made.cls is not None and issubclass(made.cls, cls):
        init = user_attribute(cls, "__init__")
        if init is not None:
            if not isinstance(init[1], types.FunctionType):
                raise GraphBreak("tensor subclass", f"{cls.__qualname__}.__init__ is not Python code")
            tx.inline(init[1], None, [made, *args], kwargs)
    return made
