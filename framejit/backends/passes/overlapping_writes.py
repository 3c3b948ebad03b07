"""In-place writes into a tensor whose elements share memory: such a graph runs as eager's own ops.

Why this exists: AOT autograd (aot_eager, inductor) functionalizes a graph before it traces it. An
in-place write into a view becomes a new value for the view, written back into the base through the
view's inverse. That is exact when every element of the view has memory of its own; it is wrong when
several elements share one location, as in `b.expand(4, 4)` (stride 0), `b.as_strided((3, 2), (0, 1))`
or `b.unfold(0, 2, 1)`: the inverse of an expand sums its rows, so `G.expand(4, 4).zero_()` left
`G - 4 * G` where eager's kernel writes zeros into G itself (fuzzer seed 709265), and a fill_ left
`G + 4 * (v - G)`. Eager allows some of these writes (fill_, zero_, masked_fill_, setitem of a number)
and refuses others ("more than one element of the written-to tensor refers to a single memory
location"); running the graph as its fx code does exactly what eager does in both cases.

`writes_overlapping_memory(gm)` tells, from the example values the conversion recorded, whether some
in-place write of `gm` targets such a tensor. It never adds a guard: with symbolic sizes, a layout it
cannot prove free of overlap counts as overlapping (the graph then only loses AOT compilation).
"""
import torch
from torch.fx.experimental.symbolic_shapes import optimization_hint, statically_known_true

from ..in_place import written_values


def apply(gm, example_inputs, compile_rest):
    """The pass: `gm`'s own fx code when it writes into self-overlapping memory, else the rest."""
    if writes_overlapping_memory(gm):
        return gm.forward
    return compile_rest(gm, example_inputs)


def writes_overlapping_memory(gm):
    """Does some in-place write of `gm` target a tensor whose elements may share memory?"""
    for node in gm.graph.nodes:
        for target in written_values(node):
            value = target.meta.get("example_value") if hasattr(target, "meta") else None
            if isinstance(value, torch.Tensor) and _may_overlap(value):
                return True
    return False


def _may_overlap(t):
    sizes, strides = tuple(t.shape), t.stride()
    if all(type(v) is int for v in sizes + strides):
        return torch._debug_has_internal_overlap(t) != 0     # 0: no overlap; 1: overlap; 2: too hard to tell
    # symbolic: the dims that can hold more than one element, innermost first (by their strides' hints);
    # no overlap when each one's stride provably steps over all the elements of the dims inside it
    dims = [(stride, size) for size, stride in zip(sizes, strides) if not statically_known_true(size <= 1)]
    dims.sort(key=lambda d: optimization_hint(d[0], fallback=0))
    span = 1
    for stride, size in dims:
        if not statically_known_true(stride >= span):
            return True
        span = stride * size
    return False
