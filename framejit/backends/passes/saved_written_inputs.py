"""A graph that writes an input in place and saves that input for backward runs as its fx code.

Why this exists (fuzz seed 561230): eagerly, an op that saves a tensor for backward (`torch.minimum(w, g)`
saves `g`) saves *that tensor*, at its version then; any later in-place write to it (in this graph, in
the next graph after a break, in the caller) makes the backward through that op raise "one of the
variables needed for gradient computation has been modified by an inplace operation". AOT autograd
functionalizes a graph that writes an input: the ops after the write read a new value, the Function
saves that value, and the input is written after the Function. A later write to the input then leaves
the compiled backward running where eager's raises. (An input the graph only reads is saved as itself:
its version counter is checked as eagerly.)

Which graphs: the translator's fake values carry eager's autograd nodes (`grad_fn` with its `_saved_*`
tensors), so an op that saves a tensor on the storage of an input some op writes in place is seen exactly,
in either order (a write after the save makes the saved value unreadable: eager's backward raises then
too). Such a graph runs as eager's ops (`gm.forward`), whose saves and checks are eager's. A graph under
no_grad saves nothing and is compiled as usual.
"""
import torch

from ..same_graphs import storage_key
from .state_regions import _written_storages


def apply(gm, example_inputs, compile_rest):
    """The pass: gm's fx code when it saves an input it writes, else what the rest compiles."""
    if saves_a_written_input(gm):
        return gm.forward
    return compile_rest(gm, example_inputs)


def _value(node):
    return node.meta.get("example_value") if hasattr(node, "meta") else None


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)


def written_input_storages(gm):
    """Storages of the graph's inputs that some op of the graph writes in place."""
    inputs = {storage_key(t) for n in gm.graph.nodes if n.op == "placeholder" for t in _tensors(_value(n))}
    return (_written_storages(gm.graph.nodes) & inputs) - {None}


def saves_a_written_input(gm):
    """Does an op of the graph save for backward a tensor on the storage of an input the graph writes?"""
    written = written_input_storages(gm)
    if not written:
        return False
    seen = set()
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        for t in _tensors(_value(node)):
            try:
                grad_fn = t.grad_fn
            except RuntimeError:        # a no_grad view written in place refuses the read: it saved nothing
                continue
            if grad_fn is None or id(grad_fn) in seen:
                continue
            seen.add(id(grad_fn))
            for name in dir(grad_fn):
                if not name.startswith("_saved_"):
                    continue
                try:
                    saved = getattr(grad_fn, name)
                except RuntimeError as e:       # written after it was saved: eager's backward raises
                    if "modified by an inplace operation" in str(e):
                        return True
                    continue
                except Exception:               # a field this cannot read is not a saved tensor here
                    continue
                if any(storage_key(s) in written for s in _tensors(saved)):
                    return True
    return False
