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
no tensor: the graph's fx code is run once on its example values (fakes; real inputs are faked first; its
placeholders' example values are the conversion's fakes, not faked again) by an fx Interpreter that notes
each node saving a tensor (`saving_nodes`: the pack hook of a `saved_tensors_hooks`, and the `_saved_*`
values of the node's result, since `x * 2.0` saves the number wrapped as a tensor without the hook; the
same run serves the split below). Such a
graph has nothing to fuse worth a Function either: its ops are pointwise or shape ops with constant
derivatives.

A graph that saves something, with an output whose own eager ops (every op between it and the graph's
inputs that requires grad) save nothing, is split (`split_free_outputs`, fuzz seed 696236: `t5 =
(x.view(...) + 0.5).roll(1, -1)` returned beside a loss whose backward runs in the frame, then the
caller's backward through t5 again). The rest of the pipeline compiles the graph without those outputs,
plus the values that do not require grad their ops read; the outputs are then made by their own ops run
eagerly on the inputs and those values, so a second backward through them meets eager's nodes, which
saved nothing, as eagerly.
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
    """The pass: `gm`'s own fx code when its eager ops save nothing for backward; the rest on `gm` without
    its outputs whose own ops save nothing, and those ops run eagerly after it; else the rest."""
    found = saving_nodes(gm, example_inputs)
    if found is not None and not found[0]:     # no op saved through the hook: eager's ops, as they are
        return gm.forward
    split = split_free_outputs(gm, found[1]) if found is not None else None
    if split is None:
        return compile_rest(gm, example_inputs)
    main, tail, plan = split
    return with_free_outputs(compile_rest(main, example_inputs), tail, plan)


def _unpack(value):
    return value


def saving_nodes(gm, example_inputs):
    """(nodes whose eager ops save a tensor through the pack hook, nodes that save one at all) of `gm` (one run
    of its fx code on fakes; the second set adds ops that save a Python number wrapped as a tensor, which the
    hook does not see: a graph of only those still runs as its fx code, eager's own nodes), when a
    Function made of `gm` would hold history (grad on, something requiring grad) and the run can be made
    (only torch ops; no in-place write: the run must not change the example values other passes read; no
    data-dependent size); else None."""
    nodes = list(gm.graph.nodes)
    if not torch.is_grad_enabled() or not any(_requires_grad(n) for n in nodes):
        return None
    if any(not _runs_torch_only(n) or written_values(n) or _unbacked(n) for n in nodes):
        return None
    try:
        mode, fakes = _as_fakes(_placeholder_fakes(gm) or example_inputs)
        if mode is None:
            return None
        recorder = _SavingNodes(gm)
        env = mode.shape_env
        with mode, (env.suppress_guards() if env is not None else _nothing()), \
                torch.autograd.graph.saved_tensors_hooks(recorder.pack, _unpack):
            recorder.run(*fakes)
        return recorder.hooked, recorder.saving
    except Exception:            # (inputs it cannot fake, a fake run it cannot make: left to the compiler)
        return None


class _SavingNodes(torch.fx.Interpreter):
    """Runs a graph on fakes and notes each node whose op saves a tensor for backward: one the pack hook sees,
    or one its result's node holds among its `_saved_*` values (a Python number the op wrapped as a tensor,
    `x * 2.0`'s, is saved without the hook)."""

    def __init__(self, gm):
        super().__init__(gm)
        self.current, self.hooked, self.saving = None, set(), set()

    def run_node(self, n):
        self.current = n
        result = super().run_node(n)
        for value in result if isinstance(result, (tuple, list)) else (result,):
            node = getattr(value, "grad_fn", None) if isinstance(value, torch.Tensor) else None
            if node is not None and any(isinstance(getattr(node, name, None), torch.Tensor)
                                        for name in dir(node) if name.startswith("_saved_")):
                self.saving.add(n)
        return result

    def pack(self, tensor):
        self.hooked.add(self.current)
        self.saving.add(self.current)
        return tensor


def split_free_outputs(gm, saving):
    """(main graph, tail graph, plan) when `gm`, whose nodes in `saving` save tensors for backward
    (`saving_nodes`), has outputs whose own ops save nothing (module doc), else None.
    main returns gm's other outputs, then the values without grad the tail reads; the tail takes the inputs
    it reads, then those values, and returns the free outputs; plan = (positions of main's outputs, positions
    of the tail's, how many main outputs are gm's, the input positions the tail reads)."""
    nodes = list(gm.graph.nodes)
    output = nodes[-1]
    results = output.args[0] if output.op == "output" else None
    if not isinstance(results, (tuple, list)) or any(not isinstance(r, torch.fx.Node) for r in results) or \
            any(n.op == "get_attr" for n in nodes):
        return None
    grad_nodes = {n for n in nodes if n.op != "placeholder" and _requires_grad(n)}
    candidates = [r for r in results if r in grad_nodes]
    if not candidates:
        return None
    free, tail_nodes = [], set()
    for result in candidates:
        ops = _grad_ancestors(result, grad_nodes)
        if not ops & saving:
            free.append(result)
            tail_nodes |= ops
    if not free:
        return None
    placeholders = [n for n in nodes if n.op == "placeholder"]
    read = [a for n in nodes if n in tail_nodes for a in n.all_input_nodes if a not in tail_nodes]
    read_inputs = [p for p in placeholders if p in read]
    boundary = list(dict.fromkeys(a for a in read if a.op != "placeholder"))
    main_positions = [i for i, r in enumerate(results) if r not in free]
    tail_positions = [i for i, r in enumerate(results) if r in free]
    main = _graph_module(gm, placeholders, [results[i] for i in main_positions] + boundary, None, drop=tail_nodes)
    tail = _graph_module(gm, read_inputs + boundary, [results[i] for i in tail_positions], tail_nodes)
    plan = (main_positions, tail_positions, len(main_positions), [placeholders.index(p) for p in read_inputs])
    return main, tail, plan


def _grad_ancestors(result, grad_nodes):
    """`result` and every node requiring grad it is computed from through nodes requiring grad."""
    seen, todo = set(), [result]
    while todo:
        node = todo.pop()
        if node in seen or node not in grad_nodes:
            continue
        seen.add(node)
        todo.extend(node.all_input_nodes)
    return seen


def _graph_module(gm, inputs, outputs, keep, drop=frozenset()):
    """A GraphModule of `gm`'s nodes with `inputs` as placeholders (in order) and `outputs`; only the nodes
    in `keep` are copied besides (None: every node but gm's placeholders and output), and the copies of
    nodes in `drop` that nothing uses any more are left out (no other node: a dead random op still draws)."""
    graph, env = torch.fx.Graph(), {}
    for node in inputs:
        env[node] = graph.placeholder(node.name)
        env[node].meta = dict(node.meta)
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output") or node in env or (keep is not None and node not in keep):
            continue
        env[node] = graph.node_copy(node, lambda a: env[a])
    graph.output(tuple(env[o] for o in outputs))
    for original in reversed(list(gm.graph.nodes)):
        copy = env.get(original)
        if original in drop and copy is not None and not copy.users:
            graph.erase_node(copy)
    return torch.fx.GraphModule(gm, graph)


def with_free_outputs(compiled, tail, plan):
    """`compiled` (the main graph), then the tail's ops eagerly, the outputs back in the graph's order."""
    main_positions, tail_positions, main_count, read_positions = plan
    count = len(main_positions) + len(tail_positions)

    def run(*inputs):
        outs = compiled(*inputs)
        free = tail(*[inputs[i] for i in read_positions], *outs[main_count:])
        results = [None] * count
        for i, value in zip(main_positions, outs):
            results[i] = value
        for i, value in zip(tail_positions, free):
            results[i] = value
        return results if isinstance(outs, list) else tuple(results)
    run.framejit_wraps = compiled
    return run


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
