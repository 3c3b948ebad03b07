"""An input no output's gradient reaches is handed to the traced Function detached: no backward visits it.

Why this exists: AOT autograd (aot_eager, inductor) runs a graph as one autograd.Function whose node has
an edge to every input that requires grad, used or not. A backward through any output of that Function
then visits every one of those inputs, and autograd calls the hooks of a visited input even when its
gradient is None (`x2.register_hook(lambda g: g * 0.5)` got None and raised a TypeError, fuzz seed
516478; a leaf's hook that scales the gradient ran where eager never runs it). Eagerly there is no path
from the loss to an input the graph never uses differentiably (it is only read as a placeholder, compared,
detached, or used by an op without a derivative), so its hooks never run.

Which inputs: those requiring grad that no output's autograd history reaches (read from the autograd
graph fake propagation built, as passes/none_grads.py reads it), that the graph does not write in place
(a written input is one more output of the Function), and that no output shares memory with (a view made
under no_grad requires grad as its base does, and only a base that requires grad gives it that). They are
detached in the example inputs the rest of
the pipeline compiles with, and at every call, so the Function has no edge to them. Outputs here are the
graph's own results: the pass runs before dead_tensors, whose extra outputs nobody differentiates.
Not covered: an input some outputs reach, visited by a backward through other outputs of the same Function
(its hooks see None where eager skips them); independent parts of a graph are separate Functions
(passes/state_regions.py), which covers disjoint uses.
"""
import torch

from .none_grads import _input_anchors, _reached_inputs


def apply(gm, example_inputs, compile_rest):
    """The pass: the rest of the pipeline with the unreached inputs detached (see the module doc)."""
    unreached = unreached_inputs(gm)
    if not unreached:
        return compile_rest(gm, example_inputs)
    examples = [e.detach() if i in unreached else e for i, e in enumerate(example_inputs)]
    compiled = compile_rest(gm, examples)

    def run(*args):
        return compiled(*[a.detach() if i in unreached else a for i, a in enumerate(args)])
    return run


def unreached_inputs(gm):
    """Indices of the inputs requiring grad whose gradient no output of `gm` depends on, and which `gm`
    does not write in place (frozenset; empty when that cannot be told)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    fakes = [n.meta.get("example_value") for n in placeholders]
    wanting = {i for i, f in enumerate(fakes) if isinstance(f, torch.Tensor) and f.requires_grad and f._version == 0}
    if not wanting:
        return frozenset()
    try:
        anchors = _input_anchors(placeholders)
        if anchors is None:
            return frozenset()
        reached, out_storages = set(), set()
        output = next(n for n in gm.graph.nodes if n.op == "output")
        for value in _flat(output.args[0]):
            fake = value.meta.get("example_value") if hasattr(value, "meta") else None
            if isinstance(fake, torch.Tensor):
                out_storages.add(_storage(fake))
                if fake.requires_grad:
                    reached |= _reached_inputs(fake, anchors)
    except RuntimeError:            # a view whose base was written after it: its grad_fn cannot be read
        return frozenset()
    # an output on an input's memory (a view made under no_grad) keeps eager's requires_grad only from the
    # input itself
    aliased = {i for i in wanting if _storage(fakes[i]) in out_storages}
    return frozenset(wanting - reached - aliased)


def _storage(fake):
    try:
        return fake.untyped_storage()._cdata
    except Exception:               # (no storage to compare: counted as aliased)
        return None


def _flat(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _flat(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    else:
        yield value
