"""A training graph (grad on, inputs that require grad) stored as a pair of AOTInductor libraries.

Why this exists (issue 24): inference graphs are stored as one AOTInductor library (inductor_aoti.py) and a
later process loads it without importing inductor; a training graph had none, so GPT-2's training step
started again still imported inductor's compile machinery and AOT autograd and loaded inductor's caches
(warm first call 3.98 s, torch.compile's 12.79 s: 0.31, the goal is 0.10).

Build (`build_and_store`; in the background child of aoti_background.py, or at conversion with
FRAMEJIT_CACHE_AOTI=1):
 1. AOT autograd partitions the graph into a forward and a backward graph (inductor's decompositions and
    its min-cut partitioner, as the JIT path); the backward is compiled lazily, so a backward is run once.
 2. The forward graph's outputs are the graph's outputs, then the tensors saved for the backward; the
    backward graph's inputs are those saved tensors (matched by name: a layout that does not match is
    refused), then one gradient per output that requires grad. Each graph is compiled with AOTInductor
    (the backward without its None outputs, whose positions the plan keeps).
 3. The pair, run by training_runtime.py's Function, is checked against the graph run eagerly under
    autograd on copies of the inputs: outputs (shape, dtype, strides, requires_grad, values within
    inductor's tolerance) and the gradient of every input that requires grad for fixed random output
    gradients, and the forward's random draws (torch's own kernels under inductor's fallback_random, as the
    JIT path: the library must leave the generator where eager does, with eager's values). Refused (a "no"
    entry: the JIT path, here and in later processes): input mutation, outputs that share memory with inputs
    or each other, non-tensor outputs, random ops in the backward, saved sizes, autocast, anything the check
    finds different.

The entry (persist/, backend "inductor-aoti-train", key = inductor_aoti.aoti_key's: the graph key, which
holds grad mode, autocast and each input's requires_grad, with the machine and inductor's settings) is the
two .so's bytes one after the other; its JSON metadata has the forward's length and the plan.
"""
import copy
import functools
import logging
import os

import torch

from . import inductor_aoti
from .aot import _is_random
from .compile_behind import compiling
from .training_runtime import LibraryPair, runner

log = logging.getLogger(__name__)
BACKEND = "inductor-aoti-train"


def training_candidate(example_inputs):
    """A graph this module can take: grad on, CPU autocast off, every input a plain dense CPU tensor, some
    requiring grad (the caller has checked the sizes are static)."""
    if not example_inputs or not torch.is_grad_enabled() or torch.is_autocast_enabled("cpu"):
        return False
    return all(inductor_aoti.plain_dense(x) and x.device.type == "cpu" for x in example_inputs) and \
        any(x.requires_grad for x in example_inputs)


def enabled():
    """Training library pairs are on wherever libraries are (inductor_aoti.mode()), unless
    FRAMEJIT_CACHE_AOTI_TRAINING=0 keeps training graphs on the JIT path (a test of that path does)."""
    return os.environ.get("FRAMEJIT_CACHE_AOTI_TRAINING", "1").strip().lower() not in ("0", "false", "no", "off")


def training_key(gm, example_inputs, options):
    return inductor_aoti.aoti_key(gm, example_inputs, options, backend=BACKEND)


def load_stored(store, key, gm):
    """(callable or None, found), as inductor_aoti.load_stored."""
    entry = inductor_aoti.stored_entry(store, key)
    if entry is None or entry == "no":
        return None, entry == "no"
    meta, payload = entry
    try:
        cut = meta["forward_bytes"]
        return _loaded(payload[:cut], payload[cut:], meta["plan"], gm), True
    except Exception as e:                  # a library this torch cannot load: compile again
        log.debug("framejit cache: training library %s did not load: %s", key, e)
        return None, False


def _loaded(fw_bytes, bw_bytes, plan, gm):
    return runner(LibraryPair(inductor_aoti._load_library(fw_bytes), inductor_aoti._load_library(bw_bytes), plan,
                              constants(gm)))


def constants(gm):
    """The tensors the graph module holds (parameters, then buffers), which AOT autograd lifts into the
    forward's first inputs: the runtime passes this process's (the key holds their values)."""
    return [*dict(gm.named_parameters(remove_duplicate=False)).values(),
            *dict(gm.named_buffers(remove_duplicate=False)).values()]


def build_and_store(store, key, gm, example_inputs, options):
    """Partition, compile, check and store `gm`'s library pair (a "no" entry when refused); the runtime
    callable, or None."""
    rng = torch.get_rng_state()             # building and checking draw: the caller's numbers stay its own
    run = None
    try:
        made, why = build(gm, example_inputs, functools.partial(_compile, options=options), inductor_aoti._load_library,
                          options)
        if made is not None:
            fw_bytes, bw_bytes, plan = made
            run = _loaded(fw_bytes, bw_bytes, plan, gm)
            why = behaves_like_eager(gm, run, example_inputs)
    except Exception as e:                  # whatever partitioning or compiling raised: the JIT path
        made, why = None, f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        torch.set_rng_state(rng)
    meta = {"backend": BACKEND, "graph": inductor_aoti._summary(gm)}
    payload = None
    if why is None:
        payload = fw_bytes + bw_bytes
        meta.update(forward_bytes=len(fw_bytes), plan=plan)
    return run if inductor_aoti.store_outcome(store, key, payload, meta, why) else None


def _copies(example_inputs):
    return [x.detach().clone().requires_grad_(x.requires_grad) for x in example_inputs]


def partition(gm, example_inputs, options=None):
    """(forward graph, backward graph) as AOT autograd partitions `gm` for inductor, under inductor's
    `options` (with fallback_random, random ops stay torch's own kernels, which draw eager's numbers;
    without it inductor's decompositions draw others)."""
    from functorch.compile import make_boxed_compiler, min_cut_rematerialization_partition
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._inductor import config
    from torch._inductor.decomposition import select_decomp_table
    graphs = {}

    def capture(name):
        def compiler(graph, _inputs):
            graphs[name] = graph
            return graph.forward
        return make_boxed_compiler(compiler)

    with compiling(), config.patch(options or {}):     # no other compile runs under these patches
        compiled = aot_module_simplified(copy.deepcopy(gm), _copies(example_inputs), fw_compiler=capture("forward"),
                                         bw_compiler=capture("backward"), decompositions=select_decomp_table(),
                                         partition_fn=functools.partial(min_cut_rematerialization_partition,
                                                                        compiler="inductor"))
        outs = [o for o in compiled(*_copies(example_inputs)) if isinstance(o, torch.Tensor) and o.requires_grad]
        if outs:
            torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
    return graphs.get("forward"), graphs.get("backward")


def _outputs(graph):
    out = next(n for n in graph.graph.nodes if n.op == "output").args[0]
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _compile(graph, inputs, options):
    return inductor_aoti._compile_library(graph, inputs, options)


def build(gm, example_inputs, compile_graph, load, options=None):
    """((forward artifact, backward artifact, plan), None) or (None, why not). `compile_graph(graph,
    inputs)` gives (artifact, None) or (None, why not), `load(artifact)` the callable (AOTInductor's .so
    bytes and its runner; a test can run the fx graphs themselves)."""
    consts = constants(gm)
    if any(c.requires_grad for c in consts):
        return None, "a parameter held by the graph module requires grad"
    eager_gm, eager_inputs = copy.deepcopy(gm), _copies(example_inputs)
    eager_consts = constants(eager_gm)
    versions = [x._version for x in (*eager_consts, *eager_inputs)]
    rng = torch.get_rng_state()
    expected = eager_gm(*eager_inputs)
    torch.set_rng_state(rng)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    why = _eager_refusal([*eager_consts, *eager_inputs], versions, expected)
    if why is not None:
        return None, why
    fw, bw = partition(gm, example_inputs, options)
    if fw is None or bw is None:
        return None, "AOT autograd made no backward graph"
    if any(_is_random(n) for n in bw.graph.nodes):   # the forward's draws are checked against eager's
        return None, "the backward draws random numbers"
    n_user, fw_outs = len(expected), _outputs(fw)
    saved_nodes = fw_outs[n_user:]
    bw_inputs = [n for n in bw.graph.nodes if n.op == "placeholder"]
    tangent_nodes = [n for n in bw_inputs if n.name.startswith("tangents_")]
    saved_inputs = [n for n in bw_inputs if not n.name.startswith("tangents_")]
    if bw_inputs != saved_inputs + tangent_nodes or [n.name for n in saved_inputs] != [getattr(n, "name", None) for n in saved_nodes]:
        return None, "the backward's inputs are not the forward's saved tensors, then gradients"
    if not all(isinstance(n, torch.fx.Node) and isinstance(n.meta.get("val"), torch.Tensor) for n in saved_nodes):
        return None, "the forward saves something other than tensors"
    differentiable = [i for i, e in enumerate(expected) if e.requires_grad]
    if len(tangent_nodes) != len(differentiable):
        return None, f"{len(tangent_nodes)} output gradients for {len(differentiable)} outputs that require grad"
    tangents = []
    for i, node in zip(differentiable, tangent_nodes):
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or tuple(val.shape) != tuple(expected[i].shape):
            return None, "an output gradient does not match its output"
        tangents.append([i, list(val.shape), list(val.stride())])
    bw_outs, n_const = _outputs(bw), len(consts)
    if len(bw_outs) != n_const + len(example_inputs):
        return None, f"the backward returns {len(bw_outs)} gradients for {n_const} + {len(example_inputs)} inputs"
    if any(n is not None for n in bw_outs[:n_const]):
        return None, "the backward returns a gradient for a constant of the graph module"
    grads = [i for i, n in enumerate(bw_outs[n_const:]) if n is not None]
    if not grads or any(not isinstance(bw_outs[n_const + i], torch.fx.Node) for i in grads):
        return None, "the backward returns no gradient, or a constant"
    inputs = [x.detach() for x in (*consts, *example_inputs)]
    fw_bytes, why = compile_graph(fw, inputs)
    if fw_bytes is None:
        return None, "forward: " + why
    outs = load(fw_bytes)(*inputs)
    storages = {x.untyped_storage().data_ptr(): i for i, x in enumerate(inputs)}
    saved, saved_values = [], []
    for j in range(n_user, len(outs)):
        i = storages.get(outs[j].untyped_storage().data_ptr())
        saved.append(["out", j] if i is None else ["view", i, j])
        saved_values.append(outs[j] if i is None else
                            inputs[i].detach().as_strided(outs[j].shape, outs[j].stride(), outs[j].storage_offset()))
    gen = torch.Generator().manual_seed(0)
    tangent_values = [torch.empty_strided(size, stride, dtype=expected[i].dtype).copy_(
        torch.randn(size, generator=gen, dtype=expected[i].dtype)) for i, size, stride in tangents]
    bw_graph = copy.deepcopy(bw)
    out_node = next(n for n in bw_graph.graph.nodes if n.op == "output")
    out_node.args = (tuple(a for a in _outputs(bw_graph) if a is not None),)
    bw_graph.recompile()
    bw_bytes, why = compile_graph(bw_graph, saved_values + tangent_values)
    if bw_bytes is None:
        return None, "backward: " + why
    plan = {"n_inputs": len(example_inputs), "n_constants": n_const, "n_user": n_user, "donates": _donates(fw, bw, n_user), "saved": saved, "tangents": tangents,
            "grads": grads, "non_diff": [i for i, e in enumerate(expected) if not e.requires_grad]}
    return (fw_bytes, bw_bytes, plan), None


def _donates(fw, bw, n_user):
    """Does AOT autograd give this backward donated buffers: a saved tensor whose memory is no forward input,
    graph output or gradient's? Then its runtime refuses a backward that keeps the graph (retain_graph or
    create_graph: "non-empty donated buffers"), and the pair does the same (training_runtime.py)."""
    from torch.multiprocessing.reductions import StorageWeakRef

    def storages(nodes):
        return {StorageWeakRef(v.untyped_storage()) for n in nodes
                if isinstance(n, torch.fx.Node) and isinstance(v := n.meta.get("val"), torch.Tensor)}
    fw_outs = _outputs(fw)
    seen = storages([n for n in fw.graph.nodes if n.op == "placeholder"]) | storages(fw_outs[:n_user]) | \
        storages(_outputs(bw))
    return any(storages([n]) - seen for n in fw_outs[n_user:])


def _eager_refusal(eager_inputs, versions, expected):
    """Why the simple runtime cannot model what the graph did eagerly, or None."""
    if [x._version for x in eager_inputs] != versions:
        return "the graph writes an input in place"
    if not all(isinstance(e, torch.Tensor) for e in expected):
        return "an output is not a tensor"
    storages = {x.untyped_storage().data_ptr() for x in eager_inputs}
    seen = set()
    for e in expected:
        ptr = e.untyped_storage().data_ptr()
        if ptr in storages or ptr in seen:
            return "an output shares memory with an input or another output"
        seen.add(ptr)
    return None


def behaves_like_eager(gm, run, example_inputs):
    """None when `run` returns eager's outputs and gives every input that requires grad eager's gradient
    (for fixed random output gradients), on copies of `example_inputs`; else why not."""
    rng = torch.get_rng_state()
    eager_inputs, library_inputs = _copies(example_inputs), _copies(example_inputs)
    expected = copy.deepcopy(gm)(*eager_inputs)           # a graph module's buffers stay as they are
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    eager_rng = torch.get_rng_state()
    torch.set_rng_state(rng)
    try:
        got = list(run(*library_inputs))
    except Exception as e:
        return f"the library raised {type(e).__name__}: {str(e)[:200]}"
    finally:
        library_rng = torch.get_rng_state()
        torch.set_rng_state(eager_rng)
    if not torch.equal(library_rng, eager_rng):
        return "the library draws other random numbers"
    if len(got) != len(expected):
        return f"{len(got)} outputs, eager {len(expected)}"
    for g, e in zip(got, expected):
        if (g.shape, g.dtype, g.stride(), g.requires_grad) != (e.shape, e.dtype, e.stride(), e.requires_grad):
            return f"an output differs: {tuple(g.shape)} {g.dtype} {g.stride()} grad={g.requires_grad} vs " \
                   f"{tuple(e.shape)} {e.dtype} {e.stride()} grad={e.requires_grad}"
        if not _close(g.detach(), e.detach()):
            return "an output differs in value"
    gen = torch.Generator().manual_seed(1)
    pairs = [(g, e, torch.randn(e.shape, generator=gen, dtype=e.dtype)) for g, e in zip(got, expected) if e.requires_grad]
    wanted = [i for i, x in enumerate(example_inputs) if x.requires_grad]
    eager_grads = torch.autograd.grad([e for _, e, _ in pairs], [eager_inputs[i] for i in wanted],
                                      [t for _, _, t in pairs], allow_unused=True)
    try:
        library_grads = torch.autograd.grad([g for g, _, _ in pairs], [library_inputs[i] for i in wanted],
                                            [t for _, _, t in pairs], allow_unused=True)
    except Exception as e:
        return f"the backward library raised {type(e).__name__}: {str(e)[:200]}"
    for i, g, e in zip(wanted, library_grads, eager_grads):
        if (g is None) != (e is None):
            return f"input {i}'s gradient is {'None' if g is None else 'a tensor'}, eager's is not"
        if e is not None and ((g.shape, g.dtype) != (e.shape, e.dtype) or not _close(g, e)):
            return f"input {i}'s gradient differs"
    return None


def _close(g, e):
    if g.is_floating_point() or g.is_complex():
        return torch.allclose(g, e, rtol=1e-3, atol=1e-4, equal_nan=True)
    return torch.equal(g, e)

