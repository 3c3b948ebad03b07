"""Has the graph traced so far an op that draws from the default generator?

Two users. The backends' region pass (backends/passes/state_regions.py) runs the independent parts of a
graph one after another and must keep the draws from the global generator in eager's order. And work that
translation does for real on the program's behalf (a lazy module's first
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
    packet = getattr(torch.ops.aten, name.rstrip("_"), None)        # normal_ as normal
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    return any(torch.Tag.nondeterministic_seeded in getattr(packet, o).tags for o in packet.overloads())


def node_may_draw(node):
    """True when fx node `node` may draw from a random generator (see the module doc)."""
    if node.op == "call_method":
        return _name_draws(node.target)
    if node.op != "call_function":
        return False
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return torch.Tag.nondeterministic_seeded in target.tags
    if isinstance(target, torch._ops.OpOverloadPacket):
        return _name_draws(target.__name__)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return True
    owner = getattr(target, "__objclass__", None)
    if isinstance(owner, type) and issubclass(owner, torch._C.TensorBase):
        return _name_draws(target.__name__)                        # a Tensor method called as a function
    module = getattr(target, "__module__", None) or ""
    if not (module.startswith("torch") or module in ("_operator", "operator", "builtins", "math")):
        return True                                                 # framejit's wrappers, user callables
    return _name_draws(getattr(target, "__name__", ""))


def graph_may_draw(builder):
    """Does any op of `builder`'s graph so far draw (or might it)?"""
    return any(node_may_draw(n) for n in builder.graph.nodes)
