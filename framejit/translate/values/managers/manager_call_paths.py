"""Calls of torch's manager machinery met while translating: a @contextlib.contextmanager function, a
function decorated with @torch.no_grad() & co, and the `clone()` those decorators call.

Why a module of its own: these are call paths (calls.py's code-object checks, lookasides/manager_calls.py's
clone lookaside) that produce the managers of state_managers.py; the managers themselves stay there.
"""
import inspect
import types

import torch

from ....errors import GraphBreak
from ..base import Const, ObjectValue
from .state_managers import MANAGER_FACTORIES, GeneratorManager, GradModeManager, InferenceModeManager


def manager_clone(tx, fn, fn_source, args, kwargs):
    """`owner.clone()` of a torch grad-mode manager object: the `ctx_factory` that @torch.no_grad() & co
    call in their wrapper, reached when that wrapper is a frame of its own (the function it decorates
    broke). It is the manager the owner's constructor makes, with the owner's mode (guarded)."""
    owner_value = args[0] if len(args) == 1 and not kwargs else None
    owner = getattr(owner_value, "obj", None)
    kind = type(owner)
    if kind not in CLONED_KINDS or getattr(owner_value, "edited", False) or \
            getattr(kind.clone, "__code__", None) is not fn.__code__:
        raise GraphBreak("call", f"call to {fn.__qualname__} (module {fn.__module__}) is not inlined")
    if kind in (torch.no_grad, torch.enable_grad):
        return MANAGER_FACTORIES[kind](tx, [], {})
    if owner_value.source is not None:
        from ...source import AttrSource
        tx.ctx.wrap(owner.mode, AttrSource(owner_value.source, "mode"))
    return MANAGER_FACTORIES[kind](tx, [Const(owner.mode)], {})


CLONED_KINDS = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.inference_mode)


def contextmanager_call(tx, fn, fn_source, args, kwargs):
    """Call of a @contextlib.contextmanager function: its generator, wrapped as a manager."""
    from ...source import AttrSource
    wrapped = fn.__wrapped__
    source = AttrSource(fn_source, "__wrapped__") if fn_source is not None else None
    if source is not None:
        tx.ctx.wrap(wrapped, source)      # guards the wrapped function's identity
    if not wrapped.__code__.co_flags & inspect.CO_GENERATOR:
        raise GraphBreak("call", f"{wrapped.__qualname__} is not a generator function")
    gen = tx.inline(wrapped, source, args, kwargs)
    return GeneratorManager(gen)


def torch_decorated_call(tx, fn, fn_source, args, kwargs):
    """Call of a function decorated with @torch.no_grad() & co: enter, inline the function, exit."""
    from ...source import AttrSource, ItemSource
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    factory, func = cells["ctx_factory"].cell_contents, cells["func"].cell_contents
    owner = getattr(factory, "__self__", None)
    if not (isinstance(factory, types.MethodType) and factory.__name__ == "clone") or \
            type(owner) not in (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.inference_mode):
        raise GraphBreak("call", f"call to {fn.__qualname__} decorated with an unsupported context manager")
    if isinstance(func, types.FunctionType) and func.__code__.co_flags & 0x20:
        raise GraphBreak("generator", f"{func.__qualname__} is a generator decorated with a context manager")
    if type(owner) is torch.inference_mode:
        manager = InferenceModeManager(owner.mode)
    else:
        manager = GradModeManager(owner.mode if type(owner) is torch.set_grad_enabled else
                                  type(owner) is torch.enable_grad, type(owner))
    func_source = None
    if fn_source is not None:
        i = fn.__code__.co_freevars.index("func")
        func_source = AttrSource(ItemSource(AttrSource(fn_source, "__closure__"), i), "cell_contents")
        tx.ctx.wrap(func, func_source)
        if type(owner) is torch.set_grad_enabled or type(owner) is torch.inference_mode:
            mode_source = AttrSource(AttrSource(ItemSource(AttrSource(fn_source, "__closure__"),
                                                           fn.__code__.co_freevars.index("ctx_factory")),
                                                "cell_contents"), "__self__")
            tx.ctx.wrap(owner.mode, AttrSource(mode_source, "mode"))
    manager.enter(tx)
    func_value = tx.ctx.wrap(func, func_source) if func_source is not None else ObjectValue(func)
    result = tx.call(func_value, args, kwargs)
    manager.exit(tx)
    return result
