"""Views from a multi-output view op (unbind, split, chunk, tensor iteration) handed out of a compiled
graph are made again after it, by the op itself, so they are the views eager has.

Why this exists: AOT autograd runs a graph as one autograd.Function, and every output of it that is a
view is marked as "the output of a function that returns multiple views". Autograd then refuses what
it refuses for unbind's outputs -- but in its own words, naming CompiledFunction ("Output 0 of
CompiledFunction is a view and its base ... has been modified inplace"), and only for views of the
graph's inputs: a split of a value the graph computed, written later, raises eagerly ("Output 0 of
Split ...") and not at all compiled. The outputs' grad_fn cannot even be read once the base is
written, so a resume function receiving them could not be converted.

`views_outside(gm)` takes such outputs out of the graph: the op's operands (a graph input, or a
computed tensor the graph then also returns) are handed out instead, and after each call the op runs
for real on them, in the caller's grad mode, once per op (its outputs are siblings as eager's are). The
views then have eager's autograd node, creation kind and errors. Not when the graph writes in place
into an operand's storage (a remade view would be made after the write eager's view saw happen).
"""
import operator

import torch
import torch.fx as fx

from ..in_place import written_values


def apply(gm, example_inputs, compile_rest):
    """The pass: `gm` compiled with its multi-output views taken out and made again after each call."""
    gm, remake = views_outside(gm)
    compiled = compile_rest(gm, example_inputs)
    return compiled if remake is None else remake(compiled)


def views_outside(gm):
    """(gm, None) when no output needs remaking; else (a copy of gm returning the kept outputs then the
    operands of the remade ops, remake) where `remake(compiled)` wraps the compiled copy into a
    callable with gm's own outputs."""
    graph = gm.graph
    output = next(n for n in graph.nodes if n.op == "output")
    results = list(output.args[0])
    remade = {}                       # output index -> (op node, item index)
    for j, node in enumerate(results):
        op = _multi_view_source(node)
        if op is not None:
            remade[j] = (op, node.args[1])
    if not remade:
        return gm, None
    ops = list(dict.fromkeys(op for op, _ in remade.values()))
    operands = []
    for op in ops:
        for used in op.all_input_nodes:
            if used not in operands:
                operands.append(used)
    if any(not isinstance(n.meta.get("example_value"), torch.Tensor) for n in operands):
        return gm, None               # a symbolic size among the operands: leave the graph as it is
    written = _written_storages(graph)
    if written is None or any(_storage(n.meta["example_value"]) in written for n in operands):
        return gm, None               # remade after the graph, they would not see the write eager's saw
    kept = [n for j, n in enumerate(results) if j not in remade]

    new_graph, copies = fx.Graph(), {}
    new_graph.graph_copy(graph, copies)
    new_graph.output(tuple(copies[n] if isinstance(n, fx.Node) else n for n in kept) +
                     tuple(copies[n] for n in operands))
    for op in ops:                    # the remade views' getitems, and the op when nothing else reads it
        for item in [copies[u] for u in op.users]:
            if not item.users:
                new_graph.erase_node(item)
        if not copies[op].users:
            new_graph.erase_node(copies[op])
    new_gm = fx.GraphModule(gm, new_graph)
    n_kept, n_results = len(kept), len(results)
    plan = [(op.op, op.target, op.args, op.kwargs) for op in ops]
    where = [(ops.index(remade[j][0]), remade[j][1]) if j in remade else (None, None) for j in range(n_results)]

    def remake(compiled):
        def run(*args):
            outs = compiled(*args)
            env = dict(zip(operands, outs[n_kept:]))
            made = [_call(kind, target, fx.node.map_arg(op_args, env.__getitem__),
                          fx.node.map_arg(op_kwargs, env.__getitem__))
                    for kind, target, op_args, op_kwargs in plan]
            kept_outs = iter(outs[:n_kept])
            return [made[k][i] if k is not None else next(kept_outs) for k, i in where]
        return run
    return new_gm, remake


def _call(kind, target, args, kwargs):
    if kind == "call_method":
        return getattr(args[0], target)(*args[1:], **kwargs)
    return target(*args, **kwargs)


def _multi_view_source(node):
    """The op node whose item `node` is, when that op returned several views needing grad."""
    if not (isinstance(node, fx.Node) and node.op == "call_function" and node.target is operator.getitem):
        return None
    op = node.args[0]
    if not isinstance(op, fx.Node) or op.op not in ("call_function", "call_method") or \
            not isinstance(node.args[1], int):
        return None
    items = op.meta.get("example_value")
    if not isinstance(items, (tuple, list)) or not items:
        return None
    if all(isinstance(t, torch.Tensor) and t.requires_grad and t._is_view() for t in items):
        return op
    return None


def _storage(fake):
    return fake.untyped_storage()._cdata


def _written_storages(graph):
    """The (fake) storages the graph writes in place; None when a write's target is not known."""
    written = set()
    for node in graph.nodes:
        for target in written_values(node):
            fake = target.meta.get("example_value") if isinstance(target, fx.Node) else None
            if not isinstance(fake, torch.Tensor):
                return None
            written.add(_storage(fake))
    return written
