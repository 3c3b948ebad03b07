"""`SomeFunction.apply(...)` of a torch.autograd.Function subclass: proven free of side effects before it
becomes one graph node.

Why this exists: the apply call is one opaque graph node (lookasides/torch_table.py's graph_target) that
runs the real Function at run time -- forward, and the user's own backward -- and gets its output
metadata by running the real apply on fake tensors at translation. That runs the forward's Python once
more at translation, and a backend that retraces the graph (aot_eager) runs it at compile time only: a
print or a global store in forward would then happen at the wrong time, twice, or never. So forward is
first run symbolically (a child translator, under no_grad as apply runs it, with a stand-in ctx whose
save_for_backward, mark_non_differentiable, set_materialize_grads and needs_input_grad behave as the
real ctx's do for forward): if it breaks (print, an unsupported call) or records a side effect (a store
to a global, a cell, an outside object, an input list), the apply call is a graph break and runs as
Python, once, as eagerly. The symbolic run's nodes are rolled back; its guards stay when it passes (what
forward read decides its output metadata); when it fails, the conversion restarts and breaks at the call
(as for a break inside any inlined call), keeping none of them. Functions defined inside torch (checkpoint's) are trusted as they are.
A forward defined with a separate `setup_context` is checked the same way, setup_context included.
"""
import inspect
import types

import torch

from ...errors import GraphBreak
from ..values.base import Const, SeqValue, TensorValue
from ..values.objects.new_objects import NewObject
from . import frame_state

_set_grad_enabled = torch._C._set_grad_enabled
_DEFAULT_SETUP_CONTEXT = torch.autograd.function._SingleLevelFunction.setup_context


class ForwardCtx:
    """What forward may do with its ctx while it is checked (the real ctx is made by apply at run time)."""

    def save_for_backward(self, *tensors):
        pass

    def save_for_forward(self, *tensors):
        pass

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass

    def mark_dirty(self, *tensors):
        raise NotImplementedError("mark_dirty: forward changes its inputs in place")


def check_forward(tx, function_cls, args, kwargs):
    """Raise GraphBreak unless `function_cls.forward` (and setup_context) runs without side effects."""
    if (function_cls.__module__ or "").startswith("torch."):
        return
    forward = inspect.getattr_static(function_cls, "forward", None)
    forward = forward.__func__ if isinstance(forward, staticmethod) else None
    setup = inspect.getattr_static(function_cls, "setup_context", None)
    setup = setup.__func__ if isinstance(setup, staticmethod) else None
    has_setup = setup is not None and setup is not _DEFAULT_SETUP_CONTEXT
    if not isinstance(forward, types.FunctionType) or (has_setup and not isinstance(setup, types.FunctionType)):
        raise GraphBreak("autograd.Function", f"{function_cls.__qualname__}.forward is not a Python staticmethod")
    ctx = NewObject(ForwardCtx)
    grad = torch.is_grad_enabled()
    ctx.attrs["needs_input_grad"] = Const(tuple(
        grad and isinstance(a, TensorValue) and a.fake.requires_grad for a in args))
    graph_mark = tx.ctx.graph.mark()
    effects_before = len(tx.ctx.side_effects.effects)
    state_before = frame_state.snapshot(tx, [*args, *kwargs.values()])
    _set_grad_enabled(False)
    try:
        if has_setup:
            out = tx.inline(forward, None, list(args), dict(kwargs))
            tx.inline(setup, None, [ctx, SeqValue(tuple, list(args)), out], {})
        else:
            tx.inline(forward, None, [ctx, *args], dict(kwargs))
    except GraphBreak as e:
        raise _restarting(GraphBreak("autograd.Function", f"{function_cls.__qualname__}.forward cannot be "
                                     f"checked for side effects ({e.reason}); apply runs as plain Python")) from e
    finally:
        _set_grad_enabled(grad)
    tx.ctx.graph.rollback(graph_mark)
    if len(tx.ctx.side_effects.effects) != effects_before:
        raise _restarting(GraphBreak("autograd.Function", f"{function_cls.__qualname__}.forward has side effects "
                                     f"({tx.ctx.side_effects.effects[effects_before].kind} store); apply runs "
                                     "as plain Python"))
    if frame_state.changed(state_before) is not None:
        raise _restarting(GraphBreak("autograd.Function", f"{function_cls.__qualname__}.forward changes a value of "
                                     "the calling frame; apply runs as plain Python"))


def _restarting(gb):
    """A break found by running forward symbolically: like a break inside any inlined call, the conversion
    restarts and breaks at the call itself, so nothing forward's run read (guards) is kept."""
    gb.inlined = True
    return gb
