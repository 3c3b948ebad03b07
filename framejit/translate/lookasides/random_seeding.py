"""`torch.manual_seed(n)`, `torch.seed()`, `torch.set_rng_state(state)` inside the frame: a node in the graph.

Why this exists: reseeding inside a forward (a data-dependent dropout replay, a test re-seeding between two
draws) made a graph break at every seed call (lookasides/state_calls.py: such setters run as Python). The
seed changes no state the translation depends on, only the numbers random ops draw at run time, so it
can be a node at its place in the graph: the random ops before it draw from the old stream, those after it
from the new one, and the global generator is left as eagerly. The eager backend runs the node in its fx
code; the tracing backends (aot_eager, inductor) run it between regions, as a switch
(backends/passes/state_regions.py), so no trace bakes it in and their regions draw from the global
generator in order (inductor with fallback_random).

Only the common shape is modelled: a constant int seed, and the call's result unused (the next
instruction pops it): `torch.seed()`'s result is a number known at run time only, and manual_seed's is
the generator object. Anything else stays the graph break it was.
"""
import torch

from ..values.base import Const, TensorValue
from ..values.managers.state_managers import next_opname

SEEDING = {torch.random.manual_seed: "manual_seed", torch.random.seed: "seed",
           torch.random.set_rng_state: "set_rng_state"}


def unwrapped_seeding(fn):
    """The torch.random function `fn` is (or wraps: torch's compiler frontend rebinds them), or None."""
    for _ in range(3):
        try:
            if fn in SEEDING:
                return fn
        except TypeError:
            return None
        fn = getattr(fn, "__wrapped__", None)
        if fn is None:
            return None
    return None


def seeding_call(tx, fn, args, kwargs):
    """The Value of a seeding call made a graph node, or None when it stays a graph break."""
    target = unwrapped_seeding(fn)
    if target is None or kwargs or next_opname(tx) != "POP_TOP":
        return None
    kind = SEEDING[target]
    if kind == "manual_seed":
        if len(args) != 1 or not isinstance(args[0], Const) or type(args[0].value) is not int:
            return None
        node_args = (args[0].value,)
    elif kind == "seed":
        if args:
            return None
        node_args = ()
    else:
        if len(args) != 1 or not isinstance(args[0], TensorValue):
            return None
        fake = args[0].fake
        if fake.dtype is not torch.uint8 or fake.device.type != "cpu" or fake.dim() != 1:
            return None
        node_args = (args[0].node,)
    builder = tx.ctx.graph
    node = builder.graph.create_node("call_function", target, node_args, {})
    node.meta["example_value"] = None
    builder.created.append(node)
    return Const(None)          # popped right away (checked above): what it stands for is never read
