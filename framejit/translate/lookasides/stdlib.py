"""Lookasides for standard-library helpers that model code calls on its hot path.

Why this exists: `slice(...)` is a class framejit does not construct generically, and
`inspect.signature(fn)` (transformers' apply_chunking_to_forward counts a callable's parameters on every
forward) is machinery framejit does not inline; on a callable fixed at translation time its answer is a
constant (its `.parameters` a dict of constants). `warnings.warn(...)` and transformers'
`logger.warning_once(...)` on the hot path show their message on the first call only, so they are issued
at translation time (where the filters make that exact) instead of breaking the graph.
"""
import collections
import functools
import inspect
import logging
import types
import warnings

from ...errors import GraphBreak
from .builtins_table import LOOKASIDES
from ..values.base import Const, DictValue, MethodValue, ObjectValue, Value
from ..values.containers import deques
from ..values.functions import function_values
from ..values.protocol import wrap_unsourced
from ..values.objects.attribute_model import BoundMethod

_ANY_RECEIVER = object()


def _real_callable(v):
    if isinstance(v, ObjectValue):
        return v.obj
    if isinstance(v, BoundMethod) and isinstance(v.func, types.FunctionType):
        # `inspect.signature(self.processor.__call__)` (diffusers' Attention): the function is fixed by
        # the receiver's guarded type; a method's signature is its function's without the first parameter,
        # whatever the receiver is
        return types.MethodType(v.func, _ANY_RECEIVER)
    if isinstance(v, MethodValue) and isinstance(v.receiver, ObjectValue):
        real = getattr(v.receiver.obj, v.name)
        if isinstance(real, types.MethodType):
            return real
    raise GraphBreak("call", f"inspect.signature of {v!r}")


def _signature(tx, args, kwargs):
    if len(args) != 1 or kwargs:
        raise GraphBreak("call", "inspect.signature with options")
    try:
        sig = inspect.signature(_real_callable(args[0]))
    except (TypeError, ValueError) as e:
        raise GraphBreak("constant call raised", f"inspect.signature raised {type(e).__name__}: {e}")
    return SignatureValue(sig)


class SignatureValue(Value):
    """An inspect.Signature; `.parameters` reads as a dict of constant Parameters."""
    __slots__ = ("value",)

    def __init__(self, sig):
        super().__init__(None)
        self.value = sig

    def python_type(self):
        return inspect.Signature

    def rebuild_parts(self):
        return []

    def rebuild(self, rb):
        return rb.ns.bind(self.value)

    def load_attr(self, tx, name):
        if name == "parameters":
            return DictValue({k: Const(p) for k, p in self.value.parameters.items()})
        return wrap_unsourced(getattr(self.value, name))


LOOKASIDES[inspect.signature] = _signature


def _slice(tx, args, kwargs):
    from .builtins_table import as_python
    if kwargs or not 1 <= len(args) <= 3:
        raise GraphBreak("bad call", "TypeError: slice expected 1 to 3 arguments")
    return Const(slice(*[as_python(a) for a in args]))


LOOKASIDES[slice] = _slice


# ---- warnings: emitted at translation time, where that is what the eager run would show ------------

def _warning_action(text, category, module, lineno):
    """The action the warnings filters pick for this warning (the matching logic of warnings.py)."""
    for action, msg, cat, mod, ln in warnings.filters:
        if (msg is None or msg.match(text)) and issubclass(category, cat) and \
                (mod is None or mod.match(module)) and (ln == 0 or lineno == ln):
            return action
    return warnings.defaultaction


def _warn(tx, args, kwargs):
    """warnings.warn(message, category, stacklevel): under the filters' once-per-location actions
    ("default", "module", "once", "ignore") the eager program shows the warning on its first call only,
    so it is issued now, once, from the location the eager call would name (file, line, module and that
    module's registry). Under "always" or "error" every call must warn or raise: a graph break."""
    from .builtins_table import as_python
    names = ("message", "category", "stacklevel", "source", "skip_file_prefixes")
    given = dict(zip(names, args))
    given.update(kwargs)
    message = as_python(given.get("message", Const(None)))
    category = as_python(given.get("category", Const(None)))
    stacklevel = as_python(given.get("stacklevel", Const(1)))
    if isinstance(message, Warning):
        category, text = type(message), str(message)
    elif isinstance(message, str):
        category, text = category or UserWarning, message
    else:
        raise GraphBreak("warning", f"warnings.warn with a message of type {type(message).__name__}")
    if not (isinstance(category, type) and issubclass(category, Warning)) or not isinstance(stacklevel, int):
        raise GraphBreak("warning", "warnings.warn with a non-constant category or stacklevel")
    frame = tx
    for _ in range(max(stacklevel, 1) - 1):
        frame = frame.parent
        if frame is None:
            raise GraphBreak("warning", "warnings.warn names a frame outside the compiled function")
    f_globals = frame.f_globals
    module = f_globals.get("__name__", "<string>")
    lineno = frame.line_of(frame.inst)
    action = _warning_action(text, category, module, lineno)
    if action in ("always", "error", "all"):
        raise GraphBreak("warning", f"warnings.warn under the {action!r} filter runs as plain Python")
    registry = f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, category, frame.code.co_filename, lineno, module, registry, f_globals)
    return Const(None)


LOOKASIDES[warnings.warn] = _warn


def _call_once_logger(fn):
    """transformers' Logger.warning_once / info_once: an lru_cache'd call, once per process per message;
    made now (at translation), which is when the eager program's first call would make it."""
    def impl(tx, args, kwargs):
        from .builtins_table import as_python
        real_args = [as_python(a) for a in args]
        if not isinstance(real_args[0], logging.Logger):
            raise GraphBreak("call", f"{fn.__qualname__} on a {type(real_args[0]).__name__}")
        fn(*real_args, **{k: as_python(v) for k, v in kwargs.items()})
        return Const(None)
    return impl


ONCE_LOGGER_METHODS = {("transformers.utils.logging", "warning_once"), ("transformers.utils.logging", "info_once")}


def method_lookaside(method):
    """The stand-in for calling bound method `method`, or None: its function's lookaside, or a
    library's once-per-message Logger method (recognised by the function it wraps, since libraries
    attach them to logging.Logger after framejit is imported)."""
    fn = method.__func__
    try:
        impl = LOOKASIDES.get(fn)
    except TypeError:
        return None
    if impl is not None:
        return impl
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None and (getattr(wrapped, "__module__", None), getattr(wrapped, "__qualname__", None)) \
            in ONCE_LOGGER_METHODS and hasattr(fn, "cache_info"):
        impl = LOOKASIDES[fn] = _call_once_logger(fn)
        return impl
    return None


# the standard library's constructors of value kinds: a deque, a partial, a wrapper's metadata copied
LOOKASIDES[collections.deque] = deques.deque_lookaside
LOOKASIDES[functools.partial] = function_values.partial_lookaside
LOOKASIDES[functools.update_wrapper] = function_values.update_wrapper_lookaside
