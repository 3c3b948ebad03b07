"""A dynamic Python float under a backend that traces the graph (aot_eager, inductor).

AOT autograd takes no SymFloat graph inputs (its pass that turns them into tensors asks its caller to
restart the capture), so under automatic dynamic a float that changes between calls would convert again
on every new value. Instead the float reaches the graph as a 0-dim float64 tensor (the entry passes
`__fj_float_tensor(lr)`, convert/codegen.py) and the graph's first use reads it back with `.item()`: an
unbacked SymFloat of the conversion's ShapeEnv, so every op sees a Python float of the exact value
(`x * lr` keeps x's dtype, as eagerly: the tensor never meets another tensor).

A Python decision on its value (`if lr > 0.5`, `int(lr)`) cannot be answered by an unbacked symbol:
the conversion starts again with that float static, as before, and the code's ShapeMemory remembers
it static (convert/frame.py, `float_symbols`).
"""
import torch

from ..source import FloatTensorSource
from ..values.base import TensorValue


def add_float_input(graph, number, source):
    """The SymValue of float `number` read from `source`, as `.item()` of a 0-dim tensor input."""
    tensor_source = FloatTensorSource(source)
    with graph.fake_mode:
        fake = torch.empty((), dtype=torch.float64)
    node = graph._placeholder(tensor_source, fake)
    graph.inputs.append((tensor_source, number, node))     # the real value stays the float (guards skip it)
    # the fake mode (which the backend's trace uses again) lets item() make a symbol from here on
    graph.fake_mode.allow_scalar_outputs = True
    value = graph.call_method("item", (TensorValue(node, fake, tensor_source),), {})
    for sym in value.sym.node.expr.free_symbols:
        graph.shapes.float_symbols[sym] = source.name()
    graph.shapes.dynamic_inputs.append((source.name(), {None: str(value.sym)}))
    return value
