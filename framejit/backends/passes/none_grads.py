"""Gradients eager leaves None stay None through a compiled graph.

Why this exists: AOT autograd (aot_eager, inductor) runs a graph as one autograd.Function, which
computes the backward of all its outputs; autograd passes zeros for the outputs a backward did not
reach, so an input only those outputs depend on gets a zero gradient where eager leaves None.
`keep_none_grads` hooks the Function's node of each call: before the backward it sees which outputs
received a gradient, after it turns the gradients of inputs none of them depends on back into None (all
of them when no output received one: a graph feeding another whose backward gave that input None). What
feeds what is read from the autograd graph fake propagation built at conversion time; an input the graph
writes in place counts as one more output (AOT autograd returns its new value).
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
    """`compiled`, or a wrapper that gives None gradients where eager does (see the module doc): for
    graphs with an input that requires grad."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if not any(isinstance(n.meta.get("example_value"), torch.Tensor) and n.meta["example_value"].requires_grad
               for n in placeholders):
        return compiled
    try:
        reached = _reached_by_output(gm, placeholders)
    except RuntimeError:
        # reading a fake's grad_fn raises for a view whose base was written after it was made (autograd
        # refuses to regenerate it): which output feeds which input cannot be read
        reached = None

    def run(*args):
        edges = _expected_edges(args) if reached is not None else None
        outs = compiled(*args)
        node = next((t.grad_fn for t in outs if isinstance(t, torch.Tensor) and t.grad_fn is not None and
                     hasattr(t.grad_fn, "_forward_cls")), None)
        if node is not None:
            inputs = _inputs_by_slot(node, edges) if edges is not None else None
            by_slot = None if inputs is None else \
                {outs[j].output_nr: r for j, r in reached.items() if outs[j].grad_fn is node}
            _hook(node, by_slot, inputs)
        return outs
    run.framejit_wraps = compiled     # what it adds needs an autograd Function's outputs (runtime/warm_start.py)
    return run


def _reached_by_output(gm, placeholders):
    """{output index: the graph inputs its gradient reaches}, or None when every output reaches the same
    inputs or that cannot be told."""
    anchors = _input_anchors(placeholders)
    if anchors is None:
        return None
    output = next(n for n in gm.graph.nodes if n.op == "output")
    reached = {}
    for j, node in enumerate(output.args[0]):
        fake = node.meta.get("example_value") if isinstance(node, fx.Node) else None
        if isinstance(fake, torch.Tensor) and fake.requires_grad:
            reached[j] = _reached_inputs(fake, anchors)
    # an input requiring grad that the graph writes in place is one more output of the Function (AOT
    # autograd hands its new value back, and the input is updated from it): a backward through the other
    # outputs alone gives it zeros, which reach the input's own history (its leaf gets a zero .grad)
    written = [_reached_inputs(fake, anchors) for fake in (n.meta.get("example_value") for n in placeholders)
               if isinstance(fake, torch.Tensor) and fake._version != 0 and fake.requires_grad]
    kinds = list(reached.values()) + written
    every = set().union(*kinds) if kinds else set()
    if not reached or len(kinds) < 2 or all(r == every for r in kinds):
        return None
    return reached


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
    """Hooks on the Function's node: a backward that brings it no gradient at all gives none (as eager's
    ops would: a Function fills in zeros, so a graph fed by this one, whose backward gave its input None,
    put zero gradients into the leaves behind it); with `reached_by_slot`, the inputs none of the outputs
    that received a gradient depends on get None."""
    received = []

    def before(grad_outputs):
        received[:] = [slot for slot, g in enumerate(grad_outputs) if g is not None]

    def after(grad_inputs, _grad_outputs):
        if not received:
            return tuple(None for _ in grad_inputs)
        if reached_by_slot is None or any(slot not in reached_by_slot for slot in received):
            return None                          # a gradient this cannot attribute: keep them all
        needed = set().union(*(reached_by_slot[slot] for slot in received))
        return tuple(g if inputs[slot] in needed else None for slot, g in enumerate(grad_inputs))

    node.register_prehook(before)
    node.register_hook(after)
