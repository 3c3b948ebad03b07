"""Inputs whose sizes or strides the graph changes in place end with eager's sizes and strides.

Why this exists (fuzz seed 665566): AOT autograd functionalizes an input's in-place metadata change
(`m.t_()`) and a later in-place write (`m.masked_fill_(mask, 0)`) into one updated value, and after the call
sets the input's sizes and strides to *that value's* (`as_strided_`) before copying it in. Eagerly, only
the metadata op changes the input's strides; a write never does. But the functional op may lay its result
out otherwise than its input (masked_fill returns a contiguous tensor for a transposed one, mul keeps the
transposition), so the input ended (4, 1) where eager's is (1, 4): the same values, other strides, and
its storage's memory written in the other order (what another view of the storage reads).

So each input a metadata op changes (METADATA_OPS, called on the input itself or on what such an op
returned: the op returns its receiver) is watched: before the call a view with its metadata is taken, after
the call the graph's metadata ops are replayed on that view, which then has eager's sizes, strides and
offset; an input the compiled call left otherwise is set to them and its values copied back in, so its
memory holds them as eager's in-place ops wrote them. A graph whose metadata ops take arguments computed in
the graph (symbolic sizes), or change an input that requires grad (whose `as_strided_` autograd would
record), runs as its fx code: eager's ops.
"""
import torch
import torch.fx as fx

METADATA_OPS = frozenset({"t_", "transpose_", "swapdims_", "swapaxes_", "squeeze_", "unsqueeze_", "as_strided_"})


def apply(gm, example_inputs, compile_rest):
    """The pass: what the rest compiles, with the inputs a metadata op changes put back to eager's metadata."""
    plan = metadata_changes(gm)
    if plan is None or any(getattr(example_inputs[i], "requires_grad", False) for i in plan):
        return gm.forward
    compiled = compile_rest(gm, example_inputs)
    if not plan:
        return compiled
    return keeping_eager_metadata(compiled, plan)


def metadata_changes(gm):
    """{input position: [(op name, its constant args, kwargs), ...] in graph order}; None when an argument is
    computed in the graph (then only the fx code knows the metadata the input ends with)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    root = {node: i for i, node in enumerate(placeholders)}
    plan = {}
    for node in gm.graph.nodes:
        name = _metadata_op(node)
        if name is None or not node.args or node.args[0] not in root:
            continue
        args, kwargs = node.args[1:], dict(node.kwargs)
        if _holds_node((args, kwargs)):
            return None
        position = root[node.args[0]]
        plan.setdefault(position, []).append((name, args, kwargs))
        root[node] = position              # the op returns its receiver: a later op on its result changes the input
    return plan


def _metadata_op(node):
    if node.op == "call_method" and node.target in METADATA_OPS:
        return node.target
    if node.op == "call_function":
        name = getattr(node.target, "__name__", None)
        if name in METADATA_OPS and getattr(torch.Tensor, name, None) is node.target:
            return name
    return None


def _holds_node(args):
    found = []
    fx.node.map_arg(args, lambda a: found.append(a))
    return bool(found)


def keeping_eager_metadata(compiled, plan):
    """`compiled`, after which every input of `plan` has the metadata eager's ops give it (module doc)."""
    watched = sorted(plan.items())

    def run(*inputs):
        views = [(inputs[i], inputs[i].as_strided(inputs[i].size(), inputs[i].stride(), inputs[i].storage_offset()),
                  ops) for i, ops in watched]
        outputs = compiled(*inputs)
        for x, view, ops in views:
            for name, args, kwargs in ops:
                getattr(view, name)(*args, **kwargs)
            if x.size() != view.size() or x.stride() != view.stride() or x.storage_offset() != view.storage_offset():
                with torch.no_grad():
                    values = x.clone()
                    x.as_strided_(view.size(), view.stride(), view.storage_offset())
                    x.copy_(values)
        return outputs
    run.framejit_wraps = compiled
    return run
