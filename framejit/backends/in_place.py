"""Which values an fx node writes in place: the one reading the backends share.

Why this exists: several backend passes must know whether a graph writes memory (passes/state_regions.py keeps
a writing region whole, passes/multi_output_views.py keeps views inside the Function when their operand's
storage is written, passes/overlapping_writes.py refuses writes into self-overlapping tensors). A write is an
`out=` argument, a torch op with a mutable schema, a method or function named with a trailing
underscore (`add_`, `torch.relu_`), `setitem`, Python's augmented assignments (`x += y`) and
`inplace=True`; what it writes is its `out=` tensors, else its first argument.
"""
import operator

import torch

# Python's augmented assignments on tensors write in place (`x += y` is operator.iadd)
AUGMENTED = frozenset({operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                       operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
                       operator.ilshift, operator.irshift, operator.imatmul})


def written_values(node):
    """The graph values `node` writes in place (its `out=` tensors, or its first argument); () for none."""
    if node.op not in ("call_function", "call_method"):
        return ()
    out = node.kwargs.get("out")
    if out is not None:
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        in_place = target._schema.is_mutable
    else:
        name = target if isinstance(target, str) else getattr(target, "__name__", "")
        in_place = (name.endswith("_") and not name.startswith("__")) or name in ("setitem", "__setitem__") or \
            target in AUGMENTED or node.kwargs.get("inplace") is True
    return node.args[:1] if in_place and node.args else ()


def writes_in_place(node):
    return bool(written_values(node))
