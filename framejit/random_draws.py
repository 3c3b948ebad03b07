"""Has the graph traced so far an op that draws from the default generator?

Why this exists: work that translation does for real on the program's behalf (a lazy module's first
call initializing its parameters, translate/lookasides/lazy_modules.py) draws random numbers now, at
translation, where eager draws them in program order. That is the same order only while no op traced
before it draws: those run later, inside the graph. Conservative: an op whose aten namesake carries
torch's `nondeterministic_seeded` tag, a few Python functions that sample, and any callable that is
not a torch op (autograd Functions, subgraphs of cond/checkpoint, framejit's own wrappers).
"""
import functools

import torch

_SAMPLING_FUNCTIONS = {"gumbel_softmax", "fractional_max_pool2d", "fractional_max_pool3d"}


@functools.lru_cache(maxsize=None)
def _name_draws(name):
    if name in _SAMPLING_FUNCTIONS:
        return True
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        return False
    return any(torch.Tag.nondeterministic_seeded in getattr(packet, o).tags for o in packet.overloads())


def node_may_draw(node):
    if node.op == "call_method":
        return _name_draws(node.target)
    if node.op != "call_function":
        return False
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return torch.Tag.nondeterministic_seeded in target.tags
    if isinstance(target, torch._ops.OpOverloadPacket):
        return _name_draws(target.__name__)
    module = getattr(target, "__module__", None) or ""
    if module.startswith("framejit") or isinstance(target, torch._ops.HigherOrderOperator):
        return True
    return _name_draws(getattr(target, "__name__", ""))


def graph_may_draw(builder):
    """Does any op of `builder`'s graph so far draw (or might it)?"""
    return any(node_may_draw(n) for n in builder.graph.nodes)
