"""`torch.manual_seed(n)`, `torch.seed()`, `torch.set_rng_state(state)` inside the frame: a node in the graph.

Why this exists: reseeding inside a forward (a data-dependent dropout replay, a test re-seeding between two
draws) made a graph break at every seed call (lookasides/state_calls.py: such setters run as Python). The
seed changes no state the translation depends on, only the numbers random ops draw at run time, so it
can be a node at its place in the graph: the random ops before it draw from the old stream, those after it
from the new one, and the global generator is left as eagerly. The eager backend runs the node in its fx
code; the tracing backends (aot_eager, inductor) run it between regions, as a switch
(backends/passes/state_regions.py), so no trace bakes it in and their regions draw from the global
generator in order (inductor with fallback_random).

What the calls return is modelled too, so a frame that uses it keeps its graph (as torch.compile's does):
  - `torch.manual_seed(<int>)` returns the default generator itself (`gen is torch.default_generator`);
  - `torch.initial_seed()` after a `manual_seed(<int>)` node of this graph, with no other seeding node after
    it, is that seed (mod 2**64, as the generator stores it), a constant; anywhere else it reads the
    generator at run time, a graph break (torch.compile breaks there too);
  - `torch.seed()` whose result is used returns a number drawn at run time: a DrawnSeedValue, the seed
    node's own output. It may be returned or stored (a graph output), and any other use of it is a graph
    break (torch.compile bakes the number drawn at compile time into the graph instead: every call then
    returned the same number, which differs from the seed the generator holds).
A seed argument that is not a constant int, or set_rng_state with a result used, stays the graph break
it was.
"""
import torch

from ...errors import GraphBreak
from ..dispatch import lookaside
from ..values.base import Const, ObjectValue, TensorValue
from ..values.managers.state_managers import next_opname
from ..values.numbers.drawn_seeds import DrawnSeedValue

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
    if target is None or kwargs:
        return None
    kind = SEEDING[target]
    result_used = next_opname(tx) != "POP_TOP"
    if result_used and kind == "set_rng_state":
        return None
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
    if not result_used:
        return Const(None)      # popped right away: what it stands for is never read
    if kind == "manual_seed":
        return ObjectValue(torch.default_generator)     # manual_seed returns the generator it seeded
    return DrawnSeedValue(node)


_MANUAL_SEED_RANGE = range(-2 ** 63, 2 ** 64)


def _seed_set_in_graph(builder):
    """The seed the last seeding node of this graph set, when it is a constant manual_seed; else None."""
    for node in reversed(builder.created):
        if node.op == "call_function" and node.target in SEEDING:
            if node.target is torch.random.manual_seed and node.args[0] in _MANUAL_SEED_RANGE:
                return node.args[0] % 2 ** 64
            return None
    return None


@lookaside(torch.random.initial_seed)
def _initial_seed(tx, args, kwargs):
    if args or kwargs:
        raise GraphBreak("random seed", "torch.initial_seed() with arguments")
    seed = _seed_set_in_graph(tx.ctx.graph)
    if seed is None:
        raise GraphBreak("random seed", "torch.initial_seed() reads the generator's seed at run time "
                         "(no torch.manual_seed(<int>) before it in this graph)")
    return Const(seed)
