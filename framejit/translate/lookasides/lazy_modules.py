"""Lazy modules (nn.LazyLinear & co) before their first call, and their uninitialized parameters.

Why this exists: a lazy module's first call runs a forward pre-hook (`_infer_parameters`) that
materializes its parameters from the input's shape (UninitializedParameter -> Parameter, drawn from the
global RNG by `reset_parameters`), removes itself and usually changes the module's class (LazyLinear ->
Linear). An uninitialized parameter has no shape to fake, so translation does what eager does at that
point: it runs the hook for real on stand-in inputs of the call's shapes and dtypes (only their shapes
are read), then starts the conversion again (`LazyModuleMaterialized`), which finds an ordinary module.
The parameters and the RNG come out as eagerly: translation runs before the graph, so the hook's draws
happen before any draw of the frame's graph, which is eager's order only when no op traced before the
call draws (framejit/random_draws.py). The conversion machinery puts global state back after translating
(observe/conversion.py); the hook's RNG change is the program's own, so it runs through
`ctx.program_effect`, which keeps it.

Otherwise (a random op traced before the call, a symbolic size, a module made in the frame, other
forward pre-hooks, a callee that broke earlier in the frame) calling such a module is a graph break as
before, guarded on the class of each uninitialized parameter: the call runs as Python and initializes
it, and the next call compiles the initialized module. Reading an uninitialized parameter or buffer
anywhere else is a break too (context.py's wrap).
"""
import torch
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedTensorMixin

from ...errors import GraphBreak
from ...random_draws import graph_may_draw
from ..source import AttrSource
from ..values.base import Const, TensorValue


class LazyModuleMaterialized(GraphBreak):
    """A lazy module was initialized during translation: convert/frame.py starts the conversion again."""

    def __init__(self, name):
        super().__init__("lazy module", f"{name} materialized its parameters at its first call")


def is_uninitialized(tensor):
    return isinstance(tensor, UninitializedTensorMixin)


def uninitialized_break(what):
    return GraphBreak("lazy module", f"{what} is an uninitialized parameter or buffer of a lazy module (its first "
                      "call materializes it): the call runs as Python")


def check_lazy_module(tx, module_value, args=(), kwargs=None):
    """When the module called is a lazy module not initialized yet: initialize it as its first call would
    and restart the conversion (LazyModuleMaterialized), or raise a graph break, guarded."""
    module = module_value.obj
    if not isinstance(module, LazyModuleMixin) or not module.has_uninitialized_params():
        return
    real, why_not = _real_arguments(tx, module_value, args, kwargs or {})
    if real is not None:
        tx.ctx.program_effect(lambda: module._infer_parameters(module, *real))
        raise LazyModuleMaterialized(type(module).__name__)
    if module_value.source is not None:
        for name, tensor in [*module._parameters.items(), *module._buffers.items()]:
            if is_uninitialized(tensor):
                tx.ctx.guards.add("TYPE_MATCH", AttrSource(module_value.source, name), type(tensor))
    raise GraphBreak("lazy module", f"{type(module).__name__}'s first call materializes its parameters and "
                     f"is not initialized at translation ({why_not}): the call runs as Python")


def _real_arguments(tx, module_value, args, kwargs):
    """((args, kwargs) to run the initializing hook on now, None), or (None, why it must run in program
    order instead)."""
    module = module_value.obj
    hook = getattr(module, "_initialize_hook", None)
    if module_value.source is None:
        return None, "a module made in the frame"
    if hook is None or list(module._forward_pre_hooks) != [hook.id] or _global_pre_hooks():
        return None, "forward pre-hooks besides its own"
    if tx.ctx.break_at:
        return None, "a call before it runs as Python"
    if graph_may_draw(tx.ctx.graph):
        return None, "a random op before it, which eager runs first"
    try:
        return ([_stand_in(a) for a in args], {k: _stand_in(v) for k, v in kwargs.items()}), None
    except _NoStandIn:
        return None, "an argument that is not a tensor of static shape or a constant"


class _NoStandIn(Exception):
    pass


def _stand_in(v):
    """A real value with what the hook reads of an argument (a tensor's shape, dtype and device)."""
    if isinstance(v, Const):
        return v.value
    if isinstance(v, TensorValue):
        fake = v.fake
        if any(not isinstance(n, int) for n in fake.shape):
            raise _NoStandIn()
        return torch.zeros(tuple(fake.shape), dtype=fake.dtype, device=fake.device)
    raise _NoStandIn()


def _global_pre_hooks():
    from torch.nn.modules import module as nn_module
    return bool(nn_module._global_forward_pre_hooks)
