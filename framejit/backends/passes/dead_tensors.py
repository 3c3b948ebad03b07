"""Tensors a graph computes and nothing reads are handed out of it anyway, and dropped after the call.

Why this exists: a compiler is free to drop dead code, and AOT autograd's partitioner and inductor do;
but a dead random op (`torch.rand_like(x)` whose result is unused, a dropout whose output a later
branch ignores) draws numbers from the global generator eagerly, so dropping it changes every random
number drawn after the graph. Returning every dead tensor keeps each op alive; the wrapper then gives
the caller the graph's own results only.

A dead tensor is handed out detached. Eagerly its autograd node dies with it and no backward ever
reaches it; handed out as it is, it would be one more differentiable output of the traced Function, so
the Function would save what its gradient needs and check those tensors' versions in every backward
("modified by an inplace operation" where eager's backward runs: `t4 = t3 * G_T` dead, `G_T[0] = 5.0`
after it, fuzz seed 533128), and the parameters behind it would count as reached (a zero .grad where
eager leaves None). Detached, it keeps its op alive and adds nothing to the backward.
"""
import torch
import torch.fx as fx


def apply(gm, example_inputs, compile_rest):
    """The pass: `gm` compiled with its dead tensors as extra outputs, called for its results only."""
    gm, n_results = with_dead_tensors_out(gm)
    compiled = compile_rest(gm, example_inputs)
    return compiled if n_results is None else _results_only(compiled, n_results)


def with_dead_tensors_out(gm):
    """(gm, None) when every tensor the graph computes is read; else a copy of gm that also returns the
    dead ones after its results, and the number of its results (see `is_dead_tensor`)."""
    dead = [n for n in gm.graph.nodes if is_dead_tensor(n)]
    if not dead:
        return gm, None
    graph, copies = fx.Graph(), {}
    results = graph.graph_copy(gm.graph, copies)
    graph.output(tuple(results) + tuple(handed_out(graph, copies[n]) for n in dead))
    return fx.GraphModule(gm, graph), len(results)


def is_dead_tensor(node):
    """A tensor nothing reads: handed out anyway, so no compiler drops it (a dead random op still draws
    its numbers, as eagerly)."""
    return not node.users and node.op == "call_function" and \
        isinstance(node.meta.get("example_value"), torch.Tensor)


def handed_out(graph, node):
    """What `graph` returns for the dead tensor `node`: the node itself, or a `detach` of it (a node added
    to `graph`) when it requires grad, so no backward is traced for it (see the module doc)."""
    fake = node.meta.get("example_value")
    if not (isinstance(fake, torch.Tensor) and fake.requires_grad):
        return node
    with graph.inserting_after(node):
        detached = graph.call_method("detach", (node,))
    detached.meta = dict(node.meta)
    detached.meta["example_value"] = fake.detach()
    return detached


def _results_only(compiled, n_results):
    def run(*args):
        return compiled(*args)[:n_results]
    return run
