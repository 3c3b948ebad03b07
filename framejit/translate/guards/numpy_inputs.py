"""numpy objects the frame reads from outside (arguments, globals, attributes), as values with guards.

An ndarray becomes a graph input: `torch.from_numpy(x)` shares its memory, so the graph reads and writes
the array itself, and that tensor's metadata guard (dtype, shape, strides) is the array's guard; its
exact type and writability are guarded too (from_numpy warns on read-only arrays). A numpy scalar is a
constant guarded on its type and value, as Python numbers are.
"""
import numpy as np
import torch

from ..source import fixed_source
from ..values.base import ObjectValue
from ..values.tensors.ndarrays import TORCH_OF_NUMPY, NdarrayValue
from .guard_set import TensorMeta
from .identity import FactSource


def wrap_numpy_input(ctx, obj, source):
    """An ndarray or numpy scalar the frame reads (argument, global, attribute): an ndarray is a graph
    input, `torch.from_numpy(x)` (its memory), guarded on its exact type, dtype, shape, strides and
    writability; a numpy scalar is a constant guarded on its type and value. None: not traced."""
    if isinstance(obj, np.generic):
        ctx.guards.add("CONST_MATCH", source, obj)
        return ObjectValue(obj, source)
    if type(obj) is not np.ndarray or obj.dtype not in TORCH_OF_NUMPY or not obj.flags.writeable:
        return None
    try:
        tensor = torch.from_numpy(obj)
    except (TypeError, ValueError, RuntimeError):
        return None
    ctx.guards.add("TYPE_MATCH", source, np.ndarray)
    ctx.guards.add("CONST_MATCH", FactSource("{0}.flags.writeable", (source,)), True)
    tensor_source = FactSource("{0}({1})", (fixed_source(torch.from_numpy, "torch.from_numpy"), source))
    ctx.guards.add("TENSOR_MATCH", tensor_source, TensorMeta.of(tensor))
    return NdarrayValue(ctx.graph.add_input(tensor, tensor_source), source=source)
