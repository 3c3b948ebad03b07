"""In-place updates of graph inputs taken out of the traced Function when AOT autograd refuses them.

Why this exists: in-place updates of inputs by values that require grad (`buf.add_(w * 2)`,
`x.copy_(y)`): AOT autograd's joint trace runs the backward at compile time, so a saved tensor that the
update modifies raises then ("one of the variables needed for gradient computation has been modified by
an inplace operation"), where eager raises only if that backward runs. When the first compilation
fails, the graph is functionalized (`mutations_outside`): it returns the inputs' new values, and they
are copied into the inputs after the graph, outside the traced Function, as eager's own in-place op
would: a backward that needs the old value then raises at backward time, as eagerly. When even that
fails with one of autograd's own in-place checks, the graph runs as its fx code (eager's ops, whose
checks fire exactly when eager's do).
"""
import torch
import torch.fx as fx

from .state_regions import is_switch

# Autograd's checks of in-place writes to saved values and to views: the joint trace runs the backward
# at compile time, so it raises them where eager raises only when (if ever) that backward runs, or never
# (eager's check depends on which views exist and require grad when the write happens). A graph that
# fails so is run as its own fx code: eager's ops, whose checks then fire exactly when eager's do.
EAGER_TIME_AUTOGRAD_ERRORS = ("modified by an inplace operation", "is a view and its base or another view of its base "
                              "has been modified inplace", "A view was created in no_grad mode")


def apply(gm, example_inputs, compile_rest):
    """The pass: the rest of the pipeline on `gm`; when that raises, on `gm` with its updates of inputs
    taken out (`mutations_outside`); when that raises one of EAGER_TIME_AUTOGRAD_ERRORS, gm's fx code."""
    try:
        return compile_rest(gm, example_inputs)
    except Exception as first_error:
        try:
            return mutations_outside(gm, example_inputs, lambda graph: compile_rest(graph, example_inputs),
                                     first_error)
        except RuntimeError as e:
            if not any(words in str(e) for words in EAGER_TIME_AUTOGRAD_ERRORS):
                raise
            return gm.forward


def mutations_outside(gm, example_inputs, compile_graph, first_error):
    """The graph compiled with its in-place updates of inputs taken out: it returns their new values,
    copied into the inputs after each call. Raises `first_error` when the graph updates no input, or
    updates one in a way this cannot reproduce (metadata changes, outputs that alias an updated input,
    grad-mode or autocast blocks in the graph).

    The graph reads an updated input through a clone, so the Function saves values the copy does not
    touch, and the backward of the outputs that do not need an overwritten value runs. Eager's backward
    of an output that needs one raises; so does this one's (`_poisoned_outputs`, checked before the
    Function's backward)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functionalize
    if any(n.op == "call_function" and is_switch(n.target) for n in gm.graph.nodes):
        raise first_error                        # the retrace below would not keep grad-mode/autocast blocks
    try:
        functional = make_fx(functionalize(gm, remove="mutations"), tracing_mode="fake")(*example_inputs)
    except Exception:
        raise first_error
    graph = functional.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    output = next(n for n in graph.nodes if n.op == "output")
    updates = [n for n in graph.nodes if n.target is torch.ops.aten.copy_.default and n.args[0] in placeholders]
    other_writes = [n for n in graph.nodes if n.op == "call_function" and n not in updates and
                    isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable]
    if not updates or other_writes or len({n.args[0] for n in updates}) != len(updates):
        raise first_error
    updated = [placeholders.index(n.args[0]) for n in updates]
    aliases = _aliases_of_updated_inputs(gm, updated)
    if aliases is None:
        raise first_error
    _differentiable_copies(graph)
    results = list(output.args[0])
    values = [n.args[1] for n in updates]
    for n in updates:
        graph.erase_node(n)
    output.args = (tuple(results) + tuple(values),)
    for i in updated:
        _read_through_clone(graph, placeholders[i])
    functional.recompile()
    compiled = compile_graph(functional)
    n_results = len(results)
    poisoned = _poisoned_outputs(gm)

    def run(*args):
        outs = compiled(*args)
        if poisoned:
            _raise_in_backward(outs, poisoned)
        for i, new in zip(updated, outs[n_results:]):
            args[i].copy_(new)
        outs = outs[:n_results]
        if aliases:
            outs = list(outs)
            for j, (i, size, stride, offset) in aliases.items():
                outs[j] = args[i] if size is None else args[i].as_strided(size, stride, offset)
        return outs
    return run


def _read_through_clone(graph, placeholder):
    last = [n for n in graph.nodes if n.op == "placeholder"][-1]
    with graph.inserting_after(last):
        clone = graph.call_function(torch.ops.aten.clone.default, (placeholder,))
    placeholder.replace_all_uses_with(clone, delete_user_cb=lambda user: user is not clone)


def _poisoned_outputs(gm):
    """Output index -> the error eager's backward of that output raises: it needs a saved value that a
    later in-place update overwrote (read from the autograd graph fake propagation built)."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    poisoned = {}
    for j, node in enumerate(output.args[0]):
        fake = node.meta.get("example_value") if isinstance(node, fx.Node) else None
        if isinstance(fake, torch.Tensor) and fake.grad_fn is not None:
            error = _first_stale_saved_value(fake.grad_fn)
            if error is not None:
                poisoned[j] = error
    return poisoned


def _first_stale_saved_value(grad_fn):
    seen, stack = set(), [grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if name.startswith("_saved_"):
                try:
                    getattr(node, name)
                except RuntimeError as e:
                    if "modified by an inplace operation" in str(e):
                        return str(e)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return None


def _raise_in_backward(outs, poisoned):
    node = next((t.grad_fn for t in outs if isinstance(t, torch.Tensor) and hasattr(t.grad_fn, "_forward_cls")),
                None)
    if node is None:
        return
    messages = {outs[j].output_nr: message for j, message in poisoned.items()
                if isinstance(outs[j], torch.Tensor) and outs[j].grad_fn is node}

    def before(grad_outputs):
        for slot, g in enumerate(grad_outputs):
            if g is not None and slot in messages:
                raise RuntimeError(messages[slot])

    node.register_prehook(before)


def _differentiable_copies(graph):
    """Functionalization writes `a.copy_(b)` as aten.copy(a, b), which autograd cannot differentiate:
    as `b` broadcast to a's shape in a's dtype instead (the same values, a fresh tensor)."""
    aten = torch.ops.aten
    for node in list(graph.nodes):
        if node.target is not aten.copy.default:
            continue
        like = node.args[0].meta["val"]
        with graph.inserting_before(node):
            expanded = graph.call_function(aten.expand.default, (node.args[1], list(like.shape)))
            converted = graph.call_function(aten._to_copy.default, (expanded,),
                                            {"dtype": like.dtype, "device": like.device})
        node.replace_all_uses_with(converted)
        graph.erase_node(node)


def _aliases_of_updated_inputs(gm, updated):
    """Outputs of `gm` that share memory with an input it updates: {output index: (input index, size,
    stride, storage offset)} (size None: the input itself), to be made again from the updated input
    after the call (the graph's own would be views of its clone). None when one cannot be: it requires
    grad (its grad_fn would differ) or its layout is not known."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    fakes = {i: placeholders[i].meta.get("example_value") for i in updated}
    if any(not isinstance(f, torch.Tensor) for f in fakes.values()):
        return None
    storages = {f.untyped_storage()._cdata: (i, f) for i, f in fakes.items()}
    output = next(n for n in gm.graph.nodes if n.op == "output")
    aliases = {}
    for j, node in enumerate(output.args[0]):
        fake = node.meta.get("example_value") if isinstance(node, fx.Node) else None
        if not isinstance(fake, torch.Tensor):
            return None
        hit = storages.get(fake.untyped_storage()._cdata)
        if hit is None:
            continue
        i, base = hit
        if fake.requires_grad or fake.dtype != base.dtype:
            return None
        same = fake is base
        aliases[j] = (i, None, None, None) if same else (i, tuple(fake.shape), fake.stride(), fake.storage_offset())
    return aliases
