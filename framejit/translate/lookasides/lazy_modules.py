"""Lazy modules (nn.LazyLinear & co) before their first call, and their uninitialized parameters.

Why this exists: a lazy module's first call runs a forward pre-hook that materializes its parameters
(UninitializedParameter -> Parameter, changing their class and usually the module's: LazyLinear ->
Linear) and removes itself. That is a change of the module tree only Python can make, and an
uninitialized parameter has no shape to fake. So calling a lazy module that still has uninitialized
parameters is a graph break (the call runs as Python and initializes it), guarded on the class of each
uninitialized parameter: once they are materialized the guard fails and the next call compiles the
initialized module into the graph. Reading an uninitialized parameter or buffer anywhere else is a
break too (context.py's wrap).
"""
import torch
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedTensorMixin

from ...errors import GraphBreak
from ..source import AttrSource


def is_uninitialized(tensor):
    return isinstance(tensor, UninitializedTensorMixin)


def uninitialized_break(what):
    return GraphBreak("lazy module", f"{what} is an uninitialized parameter or buffer of a lazy module (its first "
                      "call materializes it): the call runs as Python")


def check_lazy_module(tx, module_value):
    """Raise a graph break, guarded, when the module called is a lazy module not initialized yet."""
    module = module_value.obj
    if not isinstance(module, LazyModuleMixin) or not module.has_uninitialized_params():
        return
    if module_value.source is not None:
        for name, tensor in [*module._parameters.items(), *module._buffers.items()]:
            if is_uninitialized(tensor):
                tx.ctx.guards.add("TYPE_MATCH", AttrSource(module_value.source, name), type(tensor))
    raise uninitialized_break(f"{type(module).__name__}'s parameter")
