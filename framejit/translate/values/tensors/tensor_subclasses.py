"""Tensor subclasses with __torch_function__ (`class Sub(torch.Tensor)`, `x.as_subclass(Sub)`) in a graph.

Why this exists: eagerly, every torch function, Tensor method, operator and Tensor attribute read on an
instance of such a subclass first calls `type(x).__torch_function__(func, types, args, kwargs)`; the
default one (`torch.Tensor.__torch_function__`) runs `func` with subclass dispatch off and turns tensor
results back into the subclass (`as_subclass`). That is Python, so it is translated like any other call:

  value      a TensorValue whose `cls` is the subclass (None: a plain tensor); its node and fake are plain,
             so the graph holds plain tensor ops only. Inputs are graph inputs through a plain alias
             (`__fj_plain_tensor(x)`, `PlainTensorSource`), guarded by `type(x) is Sub`; outputs are
             rebuilt with `as_subclass` after the graph (convert/codegen.py).
  dispatch   where the translator is about to run a tensor operation (a torch callable, a Tensor method,
             an operator, a subscript, an attribute read, len) on arguments holding such values, the
             operation is first run for real on stand-ins (`_StandIn` tensors whose __torch_function__
             records what torch hands it and stops): that gives exactly eager's `func` and argument
             layout (`2 * x` reaches it as `Tensor.mul(x, 2)`, `F.softmax(x, 1)` with its keywords),
             mapped back to the frame's Values by identity. Then each overloaded type's
             __torch_function__ is inlined in torch's order until one does not return NotImplemented.
  default    `torch.Tensor.__torch_function__` (reached through `super()`, or inherited) is a lookaside:
             `func` called with dispatch off (`ctx.torch_function_disabled`, also what
             `torch._C.DisableTorchFunctionSubclass()` switches), tensor results tagged with `cls`.

What the subclass's class holds under each name used (its __torch_function__, methods, attributes) is
guarded. The frame's other uses of a subclass (making instances, its own methods and attributes,
iteration) are values/tensors/tensor_subclass_members.py.

Wrapper subclasses with their own __torch_dispatch__ (quantized / low-precision weights, torchao's
formats, logging tensors) that implement __tensor_flatten__ and switch __torch_function__ off
(`dispatch_wrapper_input`) are another kind: the graph takes the object itself as an input (guarded on
its type and metadata and on each inner tensor's: context.py), with a fake of the subclass built by the
fake mode from fakes of its inner tensors. Its ops are ordinary graph nodes: the subclass's dispatch runs
on the fakes while translating (which gives the outputs' metadata) and on the real object when the graph
runs, or is traced into the graph by backends that desugar subclasses (aot_eager, inductor). One
difference from eager remains: a dispatch with effects outside its tensors (a log) also runs while a
call is being translated (on fakes), as it does under torch.compile's tracing. Making such tensors inside
the frame, reading their inner tensors, or a subclass without __tensor_flatten__ stays a graph break.

Beyond this, a graph break with the reason: a __torch_function__ that is not a classmethod in Python, an
argument of a kind the stand-ins cannot stand for.
"""
import dataclasses
import inspect
import operator
import types
import weakref

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from ....errors import GraphBreak
from ...source import Source, fixed_source
from ..base import Const, DictValue, ObjectValue, SeqValue, TensorValue
from ..protocol import as_python, wrap_unsourced
from ..numbers.sym_values import SymValue

DISABLED = torch._C._disabled_torch_function_impl
DEFAULT_TORCH_FUNCTION = torch.Tensor.__torch_function__.__func__
_TENSOR_DISPATCH = inspect.getattr_static(torch.Tensor, "__torch_dispatch__", None)
NOT_DISPATCHED = object()          # the operation reached no __torch_function__: translate it as usual
_TENSOR_BASES = (torch.Tensor, torch._C.TensorBase, object)


def dispatches(cls):
    """Does an instance of `cls` (a torch.Tensor subclass) call a __torch_function__?"""
    if cls is None or cls is torch.Tensor:
        return False
    return inspect.getattr_static(cls, "__torch_function__", DISABLED) is not DISABLED


def unsupported_reason(cls):
    """Why instances of tensor class `cls` cannot be traced as tagged plain tensors, or None."""
    if inspect.getattr_static(cls, "__torch_dispatch__", _TENSOR_DISPATCH) is not _TENSOR_DISPATCH:
        return f"{cls.__qualname__} defines __torch_dispatch__ (a wrapper subclass)"
    tf = inspect.getattr_static(cls, "__torch_function__", DISABLED)
    if tf is DISABLED:
        return None
    if not (isinstance(tf, classmethod) and isinstance(tf.__func__, types.FunctionType)):
        return f"{cls.__qualname__}.__torch_function__ is not a classmethod written in Python"
    return None


def traceable_input(obj):
    """A tensor input of a subclass that dispatches to Python and that this module can trace."""
    cls = type(obj)
    return cls is not torch.Tensor and cls is not torch.nn.Parameter and dispatches(cls) and \
        unsupported_reason(cls) is None


def dispatch_wrapper_input(obj):
    """A tensor of a user's wrapper subclass that the graph takes as it is: __torch_dispatch__ of its own,
    __tensor_flatten__ (torch's traceable-subclass protocol, which fake tensors and AOTAutograd use), and
    no __torch_function__ (wrapper subclasses switch it off). Its ops are graph nodes on the object; its
    fake is a fake of the subclass (inner fakes), so the subclass's __torch_dispatch__ runs on fakes while
    translating and on the real object when the graph runs -- or is traced into the graph by a backend
    that desugars subclasses (aot_eager, inductor)."""
    cls = type(obj)
    if inspect.getattr_static(cls, "__torch_dispatch__", _TENSOR_DISPATCH) is _TENSOR_DISPATCH or \
            inspect.getattr_static(cls, "__torch_function__", DISABLED) is not DISABLED:
        return False
    return is_traceable_wrapper_subclass(obj)


def untraceable_reason(obj):
    """Why a tensor input of a user's subclass that runs Python on its ops cannot be traced, or None
    (torch's own subclasses, DTensor and the like, stay what they were: objects)."""
    cls = type(obj)
    if cls is torch.Tensor or cls is torch.nn.Parameter or cls.__module__.startswith("torch."):
        return None
    if not dispatches(cls) and inspect.getattr_static(cls, "__torch_dispatch__", _TENSOR_DISPATCH) is _TENSOR_DISPATCH:
        return None
    return unsupported_reason(cls)


# ---- values ---------------------------------------------------------------------------------------

def tagged(value, cls):
    """`value` as an instance of `cls` (as_subclass): a new Value over the same graph node."""
    out = TensorValue(value.node, value.fake)
    out.cls = cls
    return out


def plain_tensor(t):
    """The entry's view of a subclass input for the graph: a plain alias (AliasBackward, so gradients
    reach the input); `as_subclass` does not dispatch to __torch_function__. Anything else as it is."""
    if isinstance(t, torch.Tensor) and type(t) is not torch.Tensor:
        return torch._C.TensorBase.as_subclass(t, torch.Tensor)
    return t


def as_subclass_after_graph(t, cls):
    """What the entry rebuilds a subclass value with: eager's `_convert`."""
    return torch._C.TensorBase.as_subclass(t, cls)


def remember_input(value, obj):
    """The real subclass object behind input `value` (weakly: the graph must not keep inputs alive), for
    reads of its instance attributes."""
    value.node.meta["framejit_subclass_input"] = weakref.ref(obj)


def real_input(value):
    if value.source is None:
        return None
    ref = value.node.meta.get("framejit_subclass_input")
    obj = ref() if ref is not None else None
    return obj if type(obj) is value.cls else None


def _overloaded_values(tx, values):
    """The TensorValues among `values` (nested in tuples, lists, dicts) whose class dispatches."""
    if tx.ctx.torch_function_disabled:
        return []
    out, stack = [], list(reversed(values))
    while stack:
        v = stack.pop()
        if isinstance(v, TensorValue):
            if v.cls is not None and dispatches(v.cls):
                out.append(v)
        elif isinstance(v, SeqValue):
            stack.extend(reversed(v.items))
        elif isinstance(v, DictValue):
            stack.extend(reversed(list(v.items.values())))
    return out


def any_overloaded(tx, values):
    return bool(_overloaded_values(tx, values))


# ---- stand-ins: eager's func and argument layout --------------------------------------------------

class _Captured(Exception):
    def __init__(self, func, args, kwargs):
        super().__init__("captured")
        self.func, self.args, self.kwargs = func, args, kwargs


class _StandIn(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise _Captured(func, args, kwargs)


class _SymInt(int):
    pass


class _SymFloat(float):
    pass


class _StandIns:
    """Real stand-ins for the frame's Values, and back by identity."""

    def __init__(self, tx):
        self.tx = tx
        self.by_id = {}
        self.keep = []

    def real(self, v):
        if isinstance(v, TensorValue):
            r = torch.empty(0)
            if v.cls is not None and dispatches(v.cls):
                r = r.as_subclass(_StandIn)
        elif isinstance(v, Const):
            r = v.value
        elif isinstance(v, SeqValue) and v.kind in (tuple, list):
            r = v.kind(self.real(i) for i in v.items)
        elif isinstance(v, DictValue) and v.kind is dict:
            r = {k: self.real(x) for k, x in v.items.items()}
        elif isinstance(v, ObjectValue):
            r = v.obj
        elif isinstance(v, SymValue) and isinstance(getattr(v.sym.node, "hint", None), (int, float)):
            hint = v.sym.node.hint      # a number of its own (not a cached small int): found again by identity
            r = _SymInt(hint) if isinstance(hint, int) else _SymFloat(hint)
        else:
            raise GraphBreak("tensor subclass", f"a tensor subclass operation with argument {v!r}")
        self.by_id[id(r)] = v
        self.keep.append(r)
        return r

    def value(self, r):
        v = self.by_id.get(id(r))
        if v is not None:
            return v
        if type(r) in (tuple, list):
            return SeqValue(type(r), [self.value(i) for i in r])
        if type(r) is dict:
            return DictValue({k: self.value(x) for k, x in r.items()})
        if isinstance(r, torch.Tensor):
            raise GraphBreak("tensor subclass", "a tensor made before __torch_function__ is called")
        return wrap_unsourced(r)


def torch_function_call(tx, operands, perform):
    """Run `perform(real)` (the operation, with `real` turning an operand Value into its stand-in) when
    an operand is an instance of a dispatching subclass: the __torch_function__ call eager makes, inlined,
    and its result. NOT_DISPATCHED when no operand dispatches (or the operation reaches none)."""
    if not any_overloaded(tx, operands):
        return NOT_DISPATCHED
    stand_ins = _StandIns(tx)
    try:
        perform(stand_ins.real)
    except _Captured as c:
        func, args, kwargs = c.func, c.args, c.kwargs or {}
    except GraphBreak:
        raise
    except Exception as e:
        raise GraphBreak("tensor subclass", f"the operation raised {type(e).__name__}: {e}")
    else:
        return NOT_DISPATCHED
    args_v = SeqValue(tuple, [stand_ins.value(a) for a in args])
    kwargs_v = DictValue({k: stand_ins.value(x) for k, x in kwargs.items()})
    return dispatch(tx, func, args_v, kwargs_v)


def _ordered_types(values):
    """torch's order: first appearance, a subclass before any of its bases already listed."""
    out = []
    for v in values:
        cls = v.cls
        if cls in out:
            continue
        at = next((i for i, known in enumerate(out) if issubclass(cls, known)), len(out))
        out.insert(at, cls)
    return out


def dispatch(tx, func, args_v, kwargs_v):
    """The __torch_function__ calls torch makes for `func(*args, **kwargs)`, translated."""
    classes = _ordered_types(_overloaded_values(tx, [*args_v.items, *kwargs_v.items.values()]))
    types_v = Const(tuple(classes))
    func_v = ObjectValue(func)
    for cls in classes:
        reason = unsupported_reason(cls)
        if reason is not None:
            raise GraphBreak("tensor subclass", reason)
        tf = inspect.getattr_static(cls, "__torch_function__")
        user_attribute(cls, "__torch_function__", tx)         # guarded: the class can change between calls
        args = [ObjectValue(cls), func_v, types_v, args_v, kwargs_v]
        if tf.__func__ is DEFAULT_TORCH_FUNCTION:
            out = default_torch_function(tx, args, {})
        else:
            out = tx.inline(tf.__func__, None, args, {})
        if not (isinstance(out, Const) and out.value is NotImplemented):
            return out
    raise GraphBreak("tensor subclass", f"every __torch_function__ returned NotImplemented for "
                     f"{getattr(func, '__name__', func)} (TypeError eagerly)")


# ---- torch.Tensor.__torch_function__ and the switch it uses --------------------------------------

class torch_function_off:
    """Subclass dispatch off while translating (DisableTorchFunctionSubclass)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        self.ctx.torch_function_disabled += 1

    def __exit__(self, *exc):
        self.ctx.torch_function_disabled -= 1


_NOWRAP = None


def _nowrap_functions():
    global _NOWRAP
    if _NOWRAP is None:
        import torch.overrides
        _NOWRAP = torch.overrides.get_default_nowrap_functions()
    return _NOWRAP


_GETITEM = torch._C.TensorBase.__getitem__
_SETITEM = torch._C.TensorBase.__setitem__


def _bind_default(args, kwargs):
    names = ("cls", "func", "types", "args", "kwargs")
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            raise GraphBreak("bad call", f"TypeError: __torch_function__() got an unexpected argument {k!r}")
        bound[k] = v
    if any(n not in bound for n in names[:3]):
        raise GraphBreak("bad call", "TypeError: __torch_function__() missing required arguments")
    return bound


def _class_of(v):
    obj = v.value if isinstance(v, Const) else getattr(v, "obj", None)
    if not isinstance(obj, type):
        raise GraphBreak("tensor subclass", f"__torch_function__ called with cls {v!r}")
    return obj


def default_torch_function(tx, args, kwargs):
    """torch.Tensor.__torch_function__(cls, func, types, args=(), kwargs=None)."""
    b = _bind_default(args, kwargs)
    cls = _class_of(b["cls"])
    classes = as_python(b["types"])
    if not all(issubclass(cls, t) for t in classes):
        return Const(NotImplemented)
    call_args = _items(tx, b.get("args", Const(())))
    call_kwargs = b.get("kwargs", Const(None))
    call_kwargs = {} if isinstance(call_kwargs, Const) and call_kwargs.value is None else \
        (call_kwargs.items if isinstance(call_kwargs, DictValue) else {k: wrap_unsourced(x) for k, x in
                                                                       as_python(call_kwargs).items()})
    func_v = b["func"]
    func = getattr(func_v, "obj", getattr(func_v, "value", None))
    with torch_function_off(tx.ctx):
        out = _call_func(tx, func, func_v, call_args, dict(call_kwargs))
    if _hashable(func) and func in _nowrap_functions():
        return out
    return convert(out, cls)


def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def _items(tx, v):
    if isinstance(v, SeqValue):
        return list(v.items)
    if isinstance(v, Const) and isinstance(v.value, (tuple, list)):
        return [wrap_unsourced(x) for x in v.value]
    raise GraphBreak("tensor subclass", f"__torch_function__'s args is {v!r}")


def _call_func(tx, func, func_v, args, kwargs):
    if func is _GETITEM and len(args) == 2 and not kwargs:      # the subscript itself, not a method call
        return tx.call(ObjectValue(operator.getitem), args, {})
    if func is _SETITEM and len(args) == 3 and not kwargs:
        tx.call(ObjectValue(operator.setitem), args, {})
        return Const(None)
    if isinstance(func, types.FunctionType) and func.__module__ == "torch._tensor" and args and \
            isinstance(args[0], TensorValue) and hasattr(torch.Tensor, func.__name__):
        # Tensor's methods written in Python (`__pow__`, `__rsub__`, `split`, `__len__` ...: torch's own
        # code, never inlined) by name, on the receiver: with dispatch off they do what the name does
        return tx.call_method(args[0], func.__name__, args[1:], kwargs)
    return tx.call(func_v, args, kwargs)


def convert(v, cls):
    """torch._tensor._convert: tensors not already instances of cls become cls (tuples/lists itemwise)."""
    if isinstance(v, TensorValue):
        return v if issubclass(v.python_type(), cls) else tagged(v, cls)
    if isinstance(v, SeqValue) and (v.kind in (tuple, list) or issubclass(v.kind, tuple)):
        return SeqValue(v.kind, [convert(i, cls) for i in v.items])
    return v



# `Tensor.shape.__get__(x)` & co (the func a property read on a subclass instance hands __torch_function__)
# are calls of a C descriptor's __get__: values/objects/descriptor_calls.py reads the attribute.


# ---- the class's own attributes, guarded -------------------------------------------------------

_HEAPTYPE = 1 << 9
_GETATTR_STATIC = fixed_source(inspect.getattr_static, "inspect.getattr_static")


@dataclasses.dataclass(frozen=True)
class StaticLookupSource(Source):
    """`inspect.getattr_static(cls, attr, None)`: what a tensor subclass's MRO holds under `attr`."""
    cls: Source
    attr: str

    def expr(self):
        return f"{_GETATTR_STATIC.expr()}({self.cls.expr()}, {self.attr!r}, None)"

    def name(self):
        return f"class lookup of {self.attr!r} on {self.cls.name()}"

    def root(self):
        return self.cls.root()


def user_attribute(cls, name, tx=None):
    """(owner, attribute) when `name` is found on a Python subclass of torch.Tensor before torch's own.
    With `tx`, what the class's MRO holds under `name` is guarded (the class can change between calls)."""
    if tx is not None and cls.__flags__ & _HEAPTYPE:
        lookup = StaticLookupSource(fixed_source(cls, cls.__qualname__), name)
        tx.ctx.guards.add("ID_MATCH", lookup, inspect.getattr_static(cls, name, None))
    for owner in cls.__mro__:
        if owner in _TENSOR_BASES or owner is torch.nn.Parameter:
            return None
        if name in owner.__dict__:
            return owner, owner.__dict__[name]
    return None


# ---- entry points: the translator's tensor operations -----------------------------------------

def operator_call(tx, fn, operands):
    """fn(*operands) for a Python operator (operator.mul, operator.getitem, len...) on subclass values."""
    return torch_function_call(tx, list(operands), lambda real: fn(*map(real, operands)))


def callable_call(tx, obj, args, kwargs):
    """A torch callable (function or Tensor method descriptor) on subclass values."""
    if isinstance(obj, types.FunctionType) and not _handles_torch_function(obj):
        return NOT_DISPATCHED     # a Python function without its own dispatch: its inner ops dispatch
    return torch_function_call(tx, [*args, *kwargs.values()],
                               lambda real: obj(*map(real, args), **{k: real(v) for k, v in kwargs.items()}))


def _handles_torch_function(fn):
    names = fn.__code__.co_names
    return "handle_torch_function" in names or "has_torch_function" in names or \
        "has_torch_function_unary" in names or "has_torch_function_variadic" in names
