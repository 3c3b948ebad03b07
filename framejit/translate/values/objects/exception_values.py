"""Python exceptions raised and caught inside the translated region.

Why this exists: model code often raises and catches Python exceptions on its normal path --
`Mapping.get` is `try: self[key] except KeyError: return default`, `getattr` fallbacks, `raise` in a
validation helper caught by its caller. Treating each raise as a graph break made whole frames run as
plain Python. Here a Python exception becomes a value (ExceptionValue) that travels the way CPython's
does: the translator looks up the raising instruction in the frame's exception table, cuts the stack
to the handler's depth, pushes the exception and continues at the handler (except clauses, finally
bodies and with-block exits are then translated like any other code). If the frame has no handler
the exception propagates to the calling frame's instruction, and so on up to the root frame, where an
uncaught exception is a graph break (the call then runs as plain Python and raises for real).

Only exceptions whose type is certain become values: `raise` statements, failing asserts, and graph
breaks that stand for a Python error at that exact point (a missing dict key, an exhausted iterator,
a TypeError from binding arguments...; their kind says so and their reason starts with the builtin
exception's name). Everything else -- unsupported constructs, data-dependent branches, ops failing on
fake tensors -- stays a graph break and is never seen by a user's except clause.
"""
import ast
import builtins
import re

from ....errors import GraphBreak
from ..base import Const, ObjectValue, SeqValue, Value

# GraphBreak kinds that stand for a Python exception raised at that instruction; the value is the
# exception type when the kind fixes it, else None (read from the reason's leading "TypeName:").
PYTHON_ERROR_KINDS = {"key error": KeyError, "StopIteration": StopIteration, "unbound local": UnboundLocalError,
                      "name error": NameError, "index error": None, "attribute error": None, "value error": None,
                      "bad call": None, "constant op raised": None, "constant call raised": None, "raise": None}
_LEADING_NAME = re.compile(r"^([A-Za-z_]\w*)(?::|\(|$)")
_RAISED_NAME = re.compile(r" raised ([A-Za-z_]\w*)(?::|\(|$)")


class ExceptionValue(Value):
    """A Python exception: its class, and its constructor arguments when known (None: unknown)."""
    __slots__ = ("exc_type", "args", "cause")

    def __init__(self, exc_type, args=None):
        super().__init__(None)
        self.exc_type = exc_type
        self.args = args
        self.cause = None

    def python_type(self):
        return self.exc_type

    def real(self):
        """An equal real exception object, when it can be made without running user code."""
        if self.args is None or not all(isinstance(a, Const) for a in self.args) or not builtin_protocol(self.exc_type):
            raise GraphBreak("exception", f"the {self.exc_type.__name__} raised here is only known by its type")
        return self.exc_type(*[a.value for a in self.args])

    def as_python(self):
        """The real exception, for formatting (f"{e}", "%s" % e) and calls on constants."""
        return self.real()

    def load_attr(self, tx, name):
        if name == "args" and self.args is not None:
            return SeqValue(tuple, self.args)
        if name == "__class__":
            return ObjectValue(self.exc_type)
        raise GraphBreak("exception", f"attribute {name!r} of a {self.exc_type.__name__} raised in the frame")

    def rebuild(self, rb):
        self.real()                    # only exceptions made from constants by builtin constructors
        return f"{rb.ns.bind(self.exc_type)}({''.join(rb.expr(a) + ', ' for a in self.args)})"

    def rebuild_parts(self):
        return list(self.args or ())

    def __repr__(self):
        return f"ExceptionValue({self.exc_type.__name__})"


class RaisedException(GraphBreak):
    """A Python exception travelling through the translator (a GraphBreak if nothing catches it)."""

    def __init__(self, value):
        super().__init__("raise", f"the function raises {value.exc_type.__name__} here; it runs as plain Python")
        self.value = value


def builtin_protocol(cls):
    """True if constructing, printing and comparing instances of cls runs no Python code of the user."""
    for name in ("__new__", "__init__", "__str__", "__repr__"):
        owner = next((c for c in cls.__mro__ if name in c.__dict__), object)
        if owner.__module__ != "builtins":
            return False
    return True


def _builtin_exception(name):
    cls = getattr(builtins, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def exception_of(gb):
    """The ExceptionValue a GraphBreak stands for, or None if it is not a Python exception."""
    if isinstance(gb, RaisedException):
        return gb.value
    if gb.kind not in PYTHON_ERROR_KINDS:
        return None
    cls = PYTHON_ERROR_KINDS[gb.kind]
    if cls is None:
        reason = gb.reason or ""
        cls = next((_builtin_exception(m.group(1)) for m in (_LEADING_NAME.match(reason), _RAISED_NAME.search(reason))
                    if m and _builtin_exception(m.group(1))), None)   # "int(...) raised ValueError: ..."
        if cls is None and gb.kind == "value error":
            cls = ValueError
        if cls is None:
            return None
    return ExceptionValue(cls, _real_arguments(gb, cls))


_PLAIN_ARGUMENT_TYPES = (str, int, float, bool, bytes, type(None))


def _real_arguments(gb, cls):
    """The arguments of the real exception behind gb, as constants: framejit raises its GraphBreak
    while handling the exception a call on known values raised (so it is gb.__context__), and words
    its reason "...TypeName: message". None when that exception is not the one gb stands for or its
    arguments are not plain values."""
    real = gb.__cause__ or gb.__context__
    if type(real) is not cls or f"{cls.__name__}: {real}" not in (gb.reason or ""):
        return _key_of(gb) if cls is KeyError else None
    if not all(type(a) in _PLAIN_ARGUMENT_TYPES for a in real.args):
        return None
    return [Const(a) for a in real.args]


def _key_of(gb):
    """A missing key of a lookup on known values: its reason is "KeyError: <repr of the key>", which is
    the key itself when the repr reads back as an equal plain value of the same type."""
    text = (gb.reason or "").removeprefix("KeyError: ")
    try:
        key = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if type(key) not in _PLAIN_ARGUMENT_TYPES or repr(key) != text:
        return None
    return [Const(key)]


def raise_in_frame(tx, inst, gb):
    """If `gb` is a Python exception and `inst` has a handler in this frame: unwind the stack as CPython
    does, push the exception and return the handler's first instruction. Else None (it propagates)."""
    exn = inst.exn
    if exn is None:
        return None
    exc = exception_of(gb)
    if exc is None:
        return None
    del tx.stack[exn.depth:]
    if exn.lasti:
        tx.push(Const(inst.offset if inst.offset is not None else -1))
    tx.push(exc)
    tx.kw_names = None
    return exn.target


def instantiate(tx, cls, args, kwargs):
    """`SomeError(...)`: an ExceptionValue for exception classes that run no user code when built."""
    if kwargs or not builtin_protocol(cls):
        raise GraphBreak("construct", f"constructing {cls.__qualname__} runs Python code of its own")
    return ExceptionValue(cls, list(args))
