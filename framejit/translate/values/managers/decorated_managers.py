"""`torch.no_grad()(fn)` / `@torch.enable_grad()` / `torch.autocast(...)(fn)` / `torch.inference_mode()(fn)`
applied inside the frame: a torch manager used as a decorator of a nested function.

torch's managers are decorators too: calling the manager object with a function returns a wrapper that
runs the function inside a fresh copy of the block. A wrapper made while the frame runs is a
ManagerDecorated value: calling it enters a fresh manager of the same kind (`manager.fresh()`), inlines
the function and exits (the same steps as a call of a function decorated outside the frame,
manager_call_paths.py's torch_decorated_call, or the `with <autocast object>:` of torch's autocast wrapper);
where it escapes the frame it is rebuilt by decorating the function for real. Only managers whose
constructors change no state (not set_grad_enabled) and plain Python functions that are not generators;
anything else stays a graph break.
"""
import inspect

import torch

from ....errors import GraphBreak
from ..base import ObjectValue, Value
from ..functions.function_values import FunctionValue

DECORATING_FACTORIES = (torch.no_grad, torch.enable_grad)


def decorate(tx, manager, args, kwargs):
    """manager(fn) for a torch manager Value that has not been entered: the decorated function's Value."""
    if getattr(manager, "factory", torch.no_grad) not in DECORATING_FACTORIES or manager.entered or kwargs or \
            len(args) != 1:
        raise GraphBreak("call", f"calling {manager!r} is not supported")
    (fn,) = args
    code = fn.code if isinstance(fn, FunctionValue) else getattr(getattr(fn, "obj", None), "__code__", None)
    if not isinstance(fn, (FunctionValue, ObjectValue)) or code is None:
        raise GraphBreak("call", f"{manager!r} decorating {fn!r}: only Python functions are modelled")
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise GraphBreak("generator", f"{manager!r} decorating a generator or coroutine function")
    return ManagerDecorated(manager, fn)


class ManagerDecorated(Value):
    """The wrapper `torch.no_grad()(fn)` (autocast, inference_mode...) returns, made in the frame."""
    __slots__ = ("manager", "fn")

    def __init__(self, manager, fn):
        super().__init__(None)
        self.manager = manager            # never entered itself: each call enters manager.fresh()
        self.fn = fn

    def python_type(self):
        return type(lambda: None)

    def call(self, tx, args, kwargs):
        manager = self.manager.fresh()
        manager.enter(tx)
        result = tx.call(self.fn, args, kwargs)
        manager.exit(tx)
        return result

    def rebuild_parts(self):
        return [self.fn]

    def rebuild(self, rb):
        return f"{self.manager.rebuild(rb)}({rb.expr(self.fn)})"

    def __repr__(self):
        return f"ManagerDecorated({self.manager!r}, {self.fn!r})"
