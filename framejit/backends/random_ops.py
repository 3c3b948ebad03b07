"""Does an fx node of a captured graph (torch-level calls, before AOT autograd) draw random numbers?

Why this exists: a backend pass that runs parts of a graph in another order than the graph's
(passes/state_regions.py, one Function per independent part) must keep the draws from the global
generator in eager's order, or every random number after the first moved one differs. Conservative: an
op whose aten namesake carries torch's `nondeterministic_seeded` tag, a few Python functions that
sample, and any callable that is not torch's own (autograd Functions, framejit's wrappers, user code).
"""
import functools

import torch

_SAMPLING_FUNCTIONS = frozenset({"gumbel_softmax", "fractional_max_pool2d", "fractional_max_pool3d"})


@functools.lru_cache(maxsize=None)
def _aten_name_draws(name):
    if name in _SAMPLING_FUNCTIONS:
        return True
    packet = getattr(torch.ops.aten, name.rstrip("_"), None)      # normal_ as normal
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    return any(torch.Tag.nondeterministic_seeded in getattr(packet, o).tags for o in packet.overloads())


def draws_random(node):
    """True when `node` may draw from a random generator (see the module doc)."""
    if node.op == "call_method":
        return _aten_name_draws(node.target)
    if node.op != "call_function":
        return False
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return torch.Tag.nondeterministic_seeded in target.tags
    if isinstance(getattr(target, "__objclass__", None), type) and issubclass(target.__objclass__, torch._C.TensorBase):
        return _aten_name_draws(target.__name__)     # a Tensor method called as a function
    module = getattr(target, "__module__", None) or ""
    if not (module.startswith("torch") or module in ("_operator", "operator", "builtins", "math")):
        return True
    return _aten_name_draws(getattr(target, "__name__", ""))
