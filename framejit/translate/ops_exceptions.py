"""Handlers: raise, assert, with-blocks and exception handling.

CPython 3.11 has no setup instructions for try blocks: the normal path of try/except/else/finally
just runs through (NOPs, the duplicated finally body, jumps), and handlers are reached only through
the exception table. The translator never raises a Python exception symbolically, so it never follows
those edges: the handler-only instructions (PUSH_EXC_INFO, CHECK_EXC_MATCH, WITH_EXCEPT_START,
POP_EXCEPT, RERAISE...) are unreachable and a break if ever met. A GraphBreak is framejit's own
exception and travels straight out of the translator, never into a user's except clause.

Anything that raises inside the translated region (`raise`, a failing `assert`, an op that fails on
fake tensors) is a graph break; the converter then runs the frame as plain Python, which raises (and
catches) exactly what the eager call does. A passing `assert` on Python values or shapes never reaches
LOAD_ASSERTION_ERROR, so it costs nothing.

BEFORE_WITH enters a context manager (see ctx_managers.py for the torch state managers); Python
managers have their __enter__ and __exit__ inlined.
"""
import inspect
import types

from ..errors import GraphBreak
from .calls import call_method
from .ctx_managers import ExitValue, ManagerValue, manager_for_object
from .dispatch import handler
from .values import MethodValue, ObjectValue


@handler("RAISE_VARARGS", "RERAISE", "LOAD_ASSERTION_ERROR")
def raise_(tx, inst):
    raise GraphBreak("raise", "the function raises an exception here; it runs as plain Python")


@handler("PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "CHECK_EG_MATCH", "WITH_EXCEPT_START",
         "PREP_RERAISE_STAR")
def exception_path(tx, inst):
    raise GraphBreak("raise", f"{inst.opname} belongs to an exception handler, which framejit does not enter")


@handler("BEFORE_WITH")
def before_with(tx, inst):
    mgr = tx.peek()
    if isinstance(mgr, ObjectValue):
        mgr = manager_for_object(tx, mgr) or mgr
    if isinstance(mgr, ManagerValue):
        result = mgr.enter(tx)
        exit_fn = ExitValue(mgr)
    elif isinstance(mgr, ObjectValue):
        cls = type(mgr.obj)
        for name in ("__enter__", "__exit__"):
            try:
                static = inspect.getattr_static(cls, name)
            except AttributeError:
                raise GraphBreak("raise", f"TypeError: {cls.__qualname__!r} object does not support the "
                                 "context manager protocol")
            if not isinstance(static, types.FunctionType):
                raise GraphBreak("with", f"{cls.__qualname__}.{name} is not Python code framejit can inline")
        exit_fn = MethodValue(mgr, "__exit__")
        result = call_method(tx, mgr, "__enter__", [], {})
    else:
        raise GraphBreak("with", f"with-block over {mgr!r} is not supported")
    tx.pop()
    tx.push(exit_fn)
    tx.push(result)
