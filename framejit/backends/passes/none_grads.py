"""Gradients eager leaves None stay None through a compiled graph.

Why this exists: AOT autograd (aot_eager, inductor) runs a graph as one autograd.Function, which
computes the backward of all its outputs; autograd passes zeros for the outputs a backward did not
reach, so an input only those outputs depend on gets a zero gradient where eager leaves None.
`keep_none_grads` hooks the Function's node when some input does not feed every output: before the
backward it sees which outputs received a gradient, after it turns the gradients of inputs none of
them depends on back into None. What feeds what is read from the autograd graph fake propagation
built at conversion time.
"""
import torch
import torch.fx as fx


def apply(gm, example_inputs, compile_rest):
    """The pass: the rest of the pipeline on `gm`, wrapped to keep eager's None gradients."""
    return keep_none_grads(gm, compile_rest(gm, example_inputs))


def _input_anchors(placeholders):
    """Autograd node -> graph input index: where a backward reaches each input that requires grad (a
    leaf's AccumulateGrad, a non-leaf's grad_fn); None when some input cannot be told (a non-leaf the
    graph updated in place, whose grad_fn before the update the translator did not record). An input
    the graph writes in place is anchored where it stood on entry (the builder's "grad_fn_at_entry")."""
    anchors = {}
    for i, node in enumerate(placeholders):
        fake = node.meta.get("example_value")
        if not isinstance(fake, torch.Tensor):
            continue
        requires_grad, grad_fn = fake.requires_grad, fake.grad_fn
        if fake._version != 0 and grad_fn is not None:
            if "grad_fn_at_entry" not in node.meta:
                return None
            requires_grad, grad_fn = node.meta["grad_fn_at_entry"]
        if not requires_grad:
            continue
        if grad_fn is None:
            anchors[("leaf", id(fake))] = i
        else:
            anchors[("node", id(grad_fn))] = i
    return anchors


def _reached_inputs(fake, anchors):
    """Indices of the graph inputs whose gradient depends on output `fake` (its autograd graph, as
    fake propagation built it)."""
    reached = set()
    if fake.grad_fn is None:
        i = anchors.get(("leaf", id(fake)))
        return {i} if i is not None else reached
    seen, stack = set(), [fake.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        i = anchors.get(("node", id(node)))
        if i is None and getattr(node, "variable", None) is not None:
            i = anchors.get(("leaf", id(node.variable)))
        if i is not None:
            reached.add(i)
            continue
        stack.extend(next_node for next_node, _ in node.next_functions)
    return reached


def keep_none_grads(gm, compiled):
    """`compiled`, or a wrapper that gives None gradients where eager does (see the module doc); the
    wrapper only for graphs where some input requiring grad does not feed every differentiable output."""
    try:
        return _keep_none_grads(gm, compiled)
    except RuntimeError:
        # reading a fake's grad_fn raises for a view whose base was written after it was made (autograd
        # refuses to regenerate it): the graph's autograd history cannot be read, so nothing is changed
        return compiled


def _keep_none_grads(gm, compiled):
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    anchors = _input_anchors(placeholders)
    if anchors is None:
        return compiled
    output = next(n for n in gm.graph.nodes if n.op == "output")
    reached = {}
    for j, node in enumerate(output.args[0]):
        fake = node.meta.get("example_value") if isinstance(node, fx.Node) else None
        if isinstance(fake, torch.Tensor) and fake.requires_grad:
            reached[j] = _reached_inputs(fake, anchors)
    every = set().union(*reached.values()) if reached else set()
    if len(reached) < 2 or all(r == every for r in reached.values()):
        return compiled

    def run(*args):
        edges = _expected_edges(args)
        outs = compiled(*args)
        node = next((t.grad_fn for t in outs if isinstance(t, torch.Tensor) and t.grad_fn is not None and
                     hasattr(t.grad_fn, "_forward_cls")), None)
        if node is not None:
            inputs = _inputs_by_slot(node, edges)
            if inputs is not None:
                _hook(node, {outs[j].output_nr: r for j, r in reached.items() if outs[j].grad_fn is node}, inputs)
        return outs
    return run


def _expected_edges(args):
    """(graph input index, the autograd node a backward reaches it by: its grad_fn, the tensor itself for
    a leaf, None when it needs no grad) for each tensor argument, read before the call (the graph may
    write an input in place, which changes its grad_fn)."""
    return [(i, None if not a.requires_grad else a if a.grad_fn is None else a.grad_fn)
            for i, a in enumerate(args) if isinstance(a, torch.Tensor)]


def _inputs_by_slot(node, edges):
    """The graph input index behind each of the Function's inputs (`node.next_functions`, one per tensor
    argument: a symbolic size or a number passed to the graph has none), or None when they do not line
    up one for one (AOT autograd deduplicated an input, lifted one, or merged aliases into a base)."""
    next_functions = node.next_functions
    if len(edges) != len(next_functions):
        return None
    for (_, expected), (edge, _) in zip(edges, next_functions):
        if expected is None:
            if edge is not None:
                return None
        elif isinstance(expected, torch.Tensor):
            if getattr(edge, "variable", None) is not expected:
                return None
        elif edge is not expected:
            return None
    return [i for i, _ in edges]


def _hook(node, reached_by_slot, inputs):
    received = []

    def before(grad_outputs):
        received[:] = [slot for slot, g in enumerate(grad_outputs) if g is not None]

    def after(grad_inputs, _grad_outputs):
        if any(slot not in reached_by_slot for slot in received):
            return None                          # a gradient this cannot attribute: keep them all
        needed = set().union(*(reached_by_slot[slot] for slot in received)) if received else set()
        return tuple(g if inputs[slot] in needed else None for slot, g in enumerate(grad_inputs))

    node.register_prehook(before)
    node.register_hook(after)
