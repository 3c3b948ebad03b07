"""AOT autograd (the aot_eager backend) held to eager semantics where it differs from eager.

Why this exists: torch's AOT autograd traces forward and backward ahead of time as one joint graph and
runs them as one autograd.Function. Three consequences differ from running the ops eagerly:

* Random numbers. The default partitioner puts into the backward every forward op computable from the
  backward's inputs, and dead random ops survive there (dead-code elimination keeps impure ops): the
  backward then draws from the global generator, which eager's backward never does, and every later
  random number differs. `partition` drops them; a random op the backward would use (a recomputed
  random number, never eager's value) is refused, and the frame runs eagerly.
* In-place updates of inputs by values that require grad (`buf.add_(w * 2)`, `x.copy_(y)`). The joint
  trace runs the backward at compile time, so a saved tensor that the update modifies raises then
  ("one of the variables needed for gradient computation has been modified by an inplace operation"),
  where eager raises only if that backward runs. When the first compilation fails, the graph is
  functionalized (`mutations_outside`): it returns the inputs' new values, and they are copied into
  the inputs after the graph, outside the traced Function, as eager's own in-place op would: a backward
  that needs the old value then raises at backward time, as eagerly.
* Gradients of inputs no reached output depends on. One Function computes the backward of all outputs;
  autograd passes zeros for the outputs backward did not reach, so an input only those outputs depend on
  gets a zero gradient where eager leaves None. `keep_none_grads` hooks the Function's node when some
  input does not feed every output: before the backward it sees which outputs received a gradient, after
  it turns the gradients of inputs none of them depends on back into None.
"""
import torch
import torch.fx as fx

from .grad_regions import autocast_now, compile_by_regions, needs_regions, with_dead_tensors_out
from .multi_output_views import views_outside
from .overlapping_writes import writes_overlapping_memory

# The graph nodes that switch grad mode, inference mode or autocast (backends/ imports nothing of translate/:
# tests/backends/test_aot.py checks this is translate/lookasides/ctx_managers.STATE_NODE_TARGETS).
STATE_SWITCHES = frozenset({torch._C._set_grad_enabled, torch.autograd.grad_mode._enter_inference_mode,
                            torch.autograd.grad_mode._exit_inference_mode, torch.amp.autocast_mode._enter_autocast,
                            torch.amp.autocast_mode._exit_autocast})


# Autograd's checks of in-place writes to saved values and to views: the joint trace runs the backward
# at compile time, so it raises them where eager raises only when (if ever) that backward runs, or never
# (eager's check depends on which views exist and require grad when the write happens). A graph that
# fails so is run as its own fx code: eager's ops, whose checks then fire exactly when eager's do.
EAGER_TIME_AUTOGRAD_ERRORS = ("modified by an inplace operation", "is a view and its base or another view of its base "
                              "has been modified inplace", "A view was created in no_grad mode")


def aot_eager(gm, example_inputs):
    grad, autocast = torch.is_grad_enabled(), autocast_now()
    if needs_regions(gm, grad, autocast):
        # grad off or autocast on somewhere, or parts with separate autograd histories (backends/grad_regions.py)
        return compile_by_regions(gm, grad, _compile_aot, autocast)
    return _compile_aot(gm, example_inputs)


def _compile_aot(gm, example_inputs):
    from functorch.compile import make_boxed_compiler
    from torch._functorch.aot_autograd import aot_module_simplified

    def nop(g, _inputs):
        return g.forward

    def compile_graph(graph):
        return aot_module_simplified(graph, example_inputs, fw_compiler=make_boxed_compiler(nop),
                                     bw_compiler=make_boxed_compiler(nop), partition_fn=partition)

    if writes_overlapping_memory(gm):
        return gm.forward                 # functionalization would write it back wrong (backends/overlapping_writes.py)
    gm, remake = views_outside(gm)          # unbind/split outputs made again by the op itself, after it
    gm, n_results = with_dead_tensors_out(gm)
    try:
        compiled = compile_graph(gm)
    except Exception as first_error:
        try:
            compiled = mutations_outside(gm, example_inputs, compile_graph, first_error)
        except RuntimeError as e:
            if not any(words in str(e) for words in EAGER_TIME_AUTOGRAD_ERRORS):
                raise
            compiled = gm.forward         # see EAGER_TIME_AUTOGRAD_ERRORS
    compiled = keep_none_grads(gm, compiled)
    if n_results is not None:
        compiled = _results_only(compiled, n_results)
    return compiled if remake is None else remake(compiled)


def _results_only(compiled, n_results):
    def run(*args):
        return compiled(*args)[:n_results]
    return run


# ---- random numbers ----------------------------------------------------------------------------

def _is_random(node):
    target = node.target
    return node.op == "call_function" and isinstance(target, torch._ops.OpOverload) and \
        torch.Tag.nondeterministic_seeded in target.tags


def partition(joint_module, joint_inputs, **kwargs):
    """torch's default partition, with the backward drawing no random numbers (see the module doc)."""
    from torch._functorch.partitioners import default_partition
    fw_module, bw_module = default_partition(joint_module, joint_inputs, **kwargs)
    dropped = False
    for node in reversed(list(bw_module.graph.nodes)):     # users before producers: a dead chain goes at once
        if node.op != "call_function":
            continue
        if _is_random(node):
            if node.users:
                raise RuntimeError(f"the backward graph recomputes random op {node.target}: its numbers would "
                                   "differ from the forward's")
            bw_module.graph.erase_node(node)
            dropped = True
        elif dropped and not node.users and not node.is_impure():
            bw_module.graph.erase_node(node)       # fed only a dropped random op (dropout of a dropout)
    if dropped:
        bw_module.recompile()
    return fw_module, bw_module


# ---- in-place updates of inputs ----------------------------------------------------------------

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
    if any(n.op == "call_function" and n.target in STATE_SWITCHES for n in gm.graph.nodes):
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


# ---- gradients eager leaves None ----------------------------------------------------------------

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

