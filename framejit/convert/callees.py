"""Calls that break the graph because the callee breaks: run the callee through a compiled wrapper.

When a Python function called by the frame contains a graph break, the translator stops at the call
in the caller (convert/frame.py). The call itself then runs at run time, from the break function; instead of
the plain callee it gets `CompiledCallee(callee)`, which rebuilds as `wrappers(callee)`: the callee's
compiled wrapper (made once per function object, with the caller's options). So one unsupported line
deep in a helper costs the helper one graph break, not the whole helper its graphs.
"""
import functools
import types
import weakref

import torch
from torch.nn.modules import module as _module_impl

from .identity_keys import WeakIdentityMap
from ..translate.calls import NEVER_INLINE_PREFIXES
from ..translate.lookasides.modules import is_fsdp_managed
from ..dynamo_reads import is_compiler_disabled
from ..translate.values.functions.compiled_callees import CompiledCallee  # noqa: F401  (convert/frame.py imports it from here)


class CalleeWrappers:
    """callable -> what to call instead: a compiled wrapper for Python functions and bound methods of
    Python functions, the callable itself for anything else. Cached per function object (weakly); for a
    closure without defaults (a helper defined in the caller, made anew on every call; a decorator's
    wrapper), one wrapper per code object and globals taking the closure first (api: `closure_arg`),
    bound to the callee's cells: a closure made per call neither builds a wrapper per call nor stays in
    this cache after it dies."""

    def __init__(self, wrap):
        self._wrap = wrap
        self._cache = weakref.WeakKeyDictionary()
        self._by_code = WeakIdentityMap()      # code -> {id(globals): wrapper taking the closure first}

    def _wrapped(self, fn):
        if fn.__closure__ is not None and fn.__defaults__ is None and fn.__kwdefaults__ is None:
            per_globals = self._by_code.setdefault(fn.__code__, {})
            w = per_globals.get(id(fn.__globals__))
            if w is None:        # (the wrapper holds the globals: the id stays theirs while it is here)
                template = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, None,
                                              tuple(types.CellType() for _ in fn.__closure__))
                template.__qualname__ = fn.__qualname__
                w = per_globals[id(fn.__globals__)] = self._wrap(template, closure_arg=True)
            return functools.partial(w, fn.__closure__)
        try:
            w = self._cache.get(fn)
        except TypeError:
            return fn
        if w is None:
            w = self._cache[fn] = self._wrap(fn)
        return w

    def __call__(self, callee):
        if _never_inlined(getattr(callee, "__func__", callee)):
            return callee            # torch's own code (autograd.Function.apply, checkpoint...): nothing to gain
        if type(callee) is types.FunctionType and is_compiler_disabled(callee):
            return callee            # torch.compiler.disable: the whole call runs as plain Python
        if type(callee) is types.FunctionType and not getattr(callee, "_framejit_disabled", False) \
                and getattr(callee, "_framejit_fn", None) is None:
            return self._wrapped(callee)
        if type(callee) is types.MethodType and type(callee.__func__) is types.FunctionType:
            return types.MethodType(self._wrapped(callee.__func__), callee.__self__)
        if isinstance(callee, torch.nn.Module) and is_fsdp_managed(callee) and "forward" not in callee.__dict__ \
                and type(type(callee).forward) is types.FunctionType:
            # FSDP keys its state by the module object and runs its hooks around forward: the module's forward
            # is compiled in place (as framejit.compile(m, inplace=True) does), its hooks stay plain Python
            compiled = self._wrapped(type(callee).forward)
            if getattr(compiled, "_framejit_state", None) is not None:
                compiled._framejit_inplace = True
                callee.forward = types.MethodType(compiled, callee)
            return callee
        if isinstance(callee, torch.nn.Module) and not _has_hooks(callee) and "forward" not in callee.__dict__ \
                and type(type(callee).forward) is types.FunctionType and type(callee).__call__ is _MODULE_CALL:
            # a module without hooks: calling it is calling its forward
            return types.MethodType(self._wrapped(type(callee).forward), callee)
        return callee


_MODULE_CALL = torch.nn.Module.__call__


def _never_inlined(fn):
    """A function of a module the translator never inlines (translate/calls.py's NEVER_INLINE_PREFIXES):
    its compiled wrapper would break at once, and run its code as a copy made for resuming."""
    if hasattr(fn, "__framejit_watch__"):    # the module watch's own wrappers (translate/calls.py)
        return True
    module = getattr(fn, "__module__", None) if type(fn) is types.FunctionType else None
    return bool(module) and module.startswith(NEVER_INLINE_PREFIXES) and not module.startswith("torch.nn")


def _has_hooks(m):
    return bool(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks
                or _module_impl._global_forward_hooks or _module_impl._global_forward_pre_hooks
                or _module_impl._global_backward_hooks or _module_impl._global_backward_pre_hooks)


def callee_position(inst, stack):
    """Index in `stack` of the callable a CALL / CALL_FUNCTION_EX is about to call, or None."""
    if inst.opname == "CALL":
        i = len(stack) - inst.arg - 1           # the translator keeps [NULL, callable, args...]
    elif inst.opname == "CALL_FUNCTION_EX":
        i = len(stack) - 2 - (inst.arg & 1)
    else:
        return None
    return i if 0 <= i < len(stack) else None
