"""`op(..., out=t)` rewritten as `t.copy_(op(...))` when the result has t's shape, before AOT autograd.

Why this exists (fuzz seed 503050, aot_eager): eagerly an op given an `out=` tensor of the right shape
writes into that tensor's memory as it is laid out (a transposed `t` stays transposed). AOT autograd's
functionalization of an `out=` op into a value made inside the graph returns the op's own result in its
place, laid out as the op lays it out, so the graph handed back `t` with other strides. `copy_` is
functionalized into a copy that keeps its destination's layout, which is what `out=` does when nothing is
resized. An `out=` whose shape differs (torch resizes it: `torch.sin(x, out=torch.empty(0))`), a tuple of
`out=` tensors, or a node without example values or the out tensor's shape before the op (node.meta's
`out_shape_before`, the translator's: the out tensor's fake is resized in place, so its example value has the
result's shape afterwards; comparing with it rewrote resized ones, whose copy_ then failed) is left as it is.
"""
import torch


def apply(gm, example_inputs, compile_rest):
    if _rewrite(gm.graph):
        gm.recompile()
    return compile_rest(gm, example_inputs)


def _rewrite(graph):
    changed = False
    for node in list(graph.nodes):
        out = node.kwargs.get("out") if node.op in ("call_function", "call_method") else None
        if not isinstance(out, torch.fx.Node):
            continue
        # the `out=` tensor's shape before the op (the translator's: its fake is resized in place, so
        # after the op it always has the result's shape)
        fake, shape_before = node.meta.get("example_value"), node.meta.get("out_shape_before")
        if not isinstance(fake, torch.Tensor) or shape_before is None or tuple(fake.shape) != tuple(shape_before):
            continue
        kwargs = {k: v for k, v in node.kwargs.items() if k != "out"}
        with graph.inserting_before(node):
            result = graph.create_node(node.op, node.target, node.args, kwargs)
            result.meta = {k: v for k, v in node.meta.items() if k != "example_value"}
            copied = graph.call_method("copy_", (out, result))
            copied.meta = dict(node.meta)
        node.replace_all_uses_with(copied)
        graph.erase_node(node)
        changed = True
    return changed
