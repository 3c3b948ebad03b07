"""A graph (or region) whose eager ops save no tensor for backward runs as its fx code: eager's own ops.

Why this exists: AOT autograd (aot_eager, inductor) runs a graph as one autograd.Function, and torch
refuses a second backward through any Function whose saved values were freed by a first one: its
backward reads `ctx.saved_tensors`, and that read raises "Trying to backward through the graph a second
time" once a backward without `retain_graph` has gone through it, even when the list it reads is empty.
Eager's per-op nodes refuse only where an op saved a tensor. `t1 = torch.lerp(w, e, 0.25)` (a scalar
weight: LerpBackward saves nothing) live across a break, then `(w * t1.sign()).sum().backward()`, then
`autograd.grad` through `t1 @ t1`: eager's second backward runs, the compiled one raised (fuzz seed
710248). The same held for a whole graph `x * 2 + y` whose result is differentiated twice.

Which graphs: grad on, some value requiring grad (else no Function is made), no in-place write (the fake
run below must not change the example values other passes read), only torch ops, and eager's ops save
no tensor: the graph's fx code is run once on its example values (fakes; real inputs are faked first)
under a `saved_tensors_hooks` whose pack hook stops the run at the first tensor an op saves (its
placeholders' example values: the conversion's fakes, not faked again). Such a
graph has nothing to fuse worth a Function either: its ops are pointwise or shape ops with constant
derivatives. Not covered: a graph that saves something, differentiated twice along a path eager's
nodes saved nothing on (that needs eager's per-op nodes; state_regions' independent parts and stages
cover part of it).
"""
import builtins
import math
import operator

import torch
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from ..in_place import written_values

# modules whose functions a graph may call here without running user code on the fakes
_OWN_MODULES = ("torch", "operator", "math", "builtins", "_operator")


def apply(gm, example_inputs, compile_rest):
    """The pass: `gm`'s own fx code when its eager ops save nothing for backward, else the rest."""
    if saves_nothing(gm, example_inputs):
        return gm.forward
    return compile_rest(gm, example_inputs)


class _Saved(Exception):
    """Raised by the pack hook at the first tensor an op saves for backward."""


def _pack(_tensor):
    raise _Saved


def _unpack(value):
    return value


def saves_nothing(gm, example_inputs):
    """Would a Function made of `gm` hold history (grad on, something requiring grad) while eager's ops of
    `gm` save no tensor for backward? False when that cannot be told."""
    nodes = list(gm.graph.nodes)
    if not torch.is_grad_enabled() or not any(_requires_grad(n) for n in nodes):
        return False
    if any(not _runs_torch_only(n) or written_values(n) or _unbacked(n) for n in nodes):
        return False
    try:
        mode, fakes = _as_fakes(_placeholder_fakes(gm) or example_inputs)
        if mode is None:
            return False
        env = mode.shape_env
        with mode, (env.suppress_guards() if env is not None else _nothing()), \
                torch.autograd.graph.saved_tensors_hooks(_pack, _unpack):
            gm.forward(*fakes)
    except _Saved:
        return False
    except Exception:            # (inputs it cannot fake, a fake run it cannot make: left to the compiler)
        return False
    return True


def _runs_torch_only(node):
    """Is `node` a placeholder, output, attribute read, tensor method or a torch/operator function?"""
    if node.op in ("placeholder", "output", "get_attr", "call_method"):
        return True
    if node.op != "call_function":
        return False
    target = node.target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return True
    if isinstance(target, torch._ops.HigherOrderOperator):
        return False
    module = getattr(target, "__module__", None) or ""
    owner = getattr(target, "__objclass__", None)
    if isinstance(owner, type) and issubclass(owner, torch._C.TensorBase):
        return True
    return module.split(".")[0] in _OWN_MODULES or target in vars(builtins).values() or \
        target in vars(operator).values() or target in vars(math).values()


def _requires_grad(node):
    fake = node.meta.get("example_value")
    return any(isinstance(f, torch.Tensor) and f.requires_grad
               for f in (fake if isinstance(fake, (tuple, list)) else [fake]))


def _unbacked(node):
    """Does `node`'s example value hold a data-dependent size or number (a rerun would make new ones)?"""
    fake = node.meta.get("example_value")
    for f in (fake if isinstance(fake, (tuple, list)) else [fake]):
        if isinstance(f, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)) and free_unbacked_symbols(f):
            return True
    return False


def _placeholder_fakes(gm):
    """The conversion's fakes of `gm`'s inputs (its placeholders' example values), or None when one is
    missing (faking real example inputs again costs more than the run: 25 parameters, ~150 ms)."""
    fakes = [n.meta.get("example_value") for n in gm.graph.nodes if n.op == "placeholder"]
    return fakes if all(f is not None for f in fakes) else None


def _as_fakes(example_inputs):
    """(fake mode, inputs as fakes of it): the conversion's own fakes as they are, real tensors faked
    in a fresh mode; (None, None) when the inputs mix fakes of a mode with real tensors."""
    mode = detect_fake_mode(example_inputs)
    tensors = [e for e in example_inputs if isinstance(e, torch.Tensor)]
    if mode is not None:
        if any(not isinstance(t, torch._subclasses.FakeTensor) for t in tensors):
            return None, None
        return mode, list(example_inputs)
    mode = FakeTensorMode()
    return mode, [mode.from_tensor(e) if isinstance(e, torch.Tensor) else e for e in example_inputs]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
